/**
 * PostgresEventStore: the EventStore port on PostgreSQL (13+: xid8).
 *
 * Why the global order is (transaction id, seq) and not a sequence alone: transactions commit out of order, so a
 * reader that tails `seq > checkpoint` can pass a seq whose transaction is still open and skip its event forever.
 * Every row is stamped with `pg_current_xact_id()`, positions are `<xid>:<seq>`, and `readAll` only returns rows
 * whose transaction is older than the oldest one still running (`pg_snapshot_xmin`): anything a tailing reader has
 * not seen yet can only land after its cursor. The price: an open writing transaction anywhere in the cluster holds
 * back what readers see until it ends (never what they eventually get).
 *
 * Optimistic concurrency: a head row per stream is locked (upsert, so the first append of a new stream locks too),
 * checked against the expected revision, and moved; UNIQUE(stream_id, revision) is the backstop. Streams are locked
 * in sorted order so two multi-stream batches cannot deadlock.
 */
import pg from 'pg';
import {
  ConcurrencyError,
  type AppendRequest,
  type AppendResult,
  type EventStore,
  type ReadAllOptions,
  type StoredEvent,
  type SubscribeOptions,
  type Subscription,
} from '../app/ports.ts';
import { checkExpectedRevision } from './expected-revision.ts';
import { OpenSubscriptions, tailSubscription } from './tail-subscription.ts';

export interface PostgresEventStoreOptions {
  connectionString: string;
  /**
   * How often a subscription re-reads when idle. With `listen` (the default) this is only the fallback for a lost
   * notification (default 1000); without it, the only way other processes' appends are seen (default 50).
   */
  pollIntervalMs?: number;
  /** LISTEN on one connection for other processes' appends (each append NOTIFYs at commit). Default true. */
  listen?: boolean;
  /** First pause before LISTENing again after the listener's connection died; doubles up to 5 s. Default 250. */
  relistenDelayMs?: number;
  /** Schema holding the tables, created on first use. Default `estate`. */
  schema?: string;
  /** Pool size. Default 10. */
  maxConnections?: number;
  /**
   * Test seam: awaited inside an append's transaction, after its rows are written and before COMMIT, so a test can
   * hold a transaction open and commit it late, the way a slow writer would.
   */
  beforeCommit?: (requests: AppendRequest[]) => Promise<void>;
}

const DEFAULT_LIMIT = 1000;
/** Rows a prefix-filtered read looks through per query, so a reader of `tool-` is not slowed by a sea of `run-`. */
const SCAN_WINDOW = 5000;
const UNIQUE_VIOLATION = '23505';
const DIVISION_BY_ZERO = '22012';

interface Cursor {
  xid: bigint;
  seq: bigint;
}

const START: Cursor = { xid: 0n, seq: 0n };

function parsePosition(position: string | null | undefined): Cursor {
  if (position === null || position === undefined) return START;
  const match = /^(\d+):(\d+)$/.exec(position);
  if (!match) throw new Error(`not a PostgreSQL event store position: '${position}'`);
  return { xid: BigInt(match[1]!), seq: BigInt(match[2]!) };
}

const formatPosition = (xid: string, seq: string): string => `${xid}:${seq}`;

const later = (a: Cursor, b: Cursor): Cursor => (a.xid > b.xid || (a.xid === b.xid && a.seq > b.seq) ? a : b);

interface EventRow {
  xid: string;
  seq: string;
  stream_id: string;
  revision: string;
  type: string;
  data: string;
  recorded_at: Date;
}

interface ScanRow extends Omit<EventRow, 'stream_id' | 'revision' | 'type' | 'data' | 'recorded_at'> {
  /** The last row of the scanned window, carried so an empty filtered page still moves a subscription forward. */
  window_end: boolean;
  stream_id: string | null;
  revision: string | null;
  type: string | null;
  data: string | null;
  recorded_at: Date | null;
}

/** `data` is selected as text and parsed here, so every reader gets its own copy with plain JSON semantics. */
function toStored(row: EventRow): StoredEvent {
  return {
    streamId: row.stream_id,
    revision: Number(row.revision),
    position: formatPosition(row.xid, row.seq),
    type: row.type,
    data: JSON.parse(row.data) as unknown,
    recordedAt: row.recorded_at.toISOString(),
  };
}

function quoteSchema(schema: string): string {
  // Interpolated into DDL and queries: only a plain identifier is allowed.
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(schema)) throw new Error(`invalid PostgreSQL schema name '${schema}'`);
  return `"${schema}"`;
}

function validateRequest(request: AppendRequest): void {
  const expected = request.expectedRevision;
  if (typeof expected === 'number' && (!Number.isInteger(expected) || expected < -1)) {
    throw new TypeError(`stream ${request.streamId}: expected revision must be an integer >= -1, got ${expected}`);
  }
  if (typeof request.streamId !== 'string' || request.streamId.length === 0) {
    throw new TypeError('stream id must be a non-empty string');
  }
}

export async function createPostgresEventStore(opts: PostgresEventStoreOptions): Promise<EventStore> {
  const schemaName = opts.schema ?? 'estate';
  const s = quoteSchema(schemaName);
  const listen = opts.listen ?? true;
  const pollIntervalMs = opts.pollIntervalMs ?? (listen ? 1000 : 50);
  const relistenBase = opts.relistenDelayMs ?? 250;
  // One channel per schema; a quoted identifier (the schema name is a plain one) of at most 63 bytes.
  const channel = `estate_append_${schemaName}`.slice(0, 63);
  const pool = new pg.Pool({ connectionString: opts.connectionString, max: opts.maxConnections ?? 10 });
  // An idle client losing its connection must not crash the process; the next query reconnects.
  pool.on('error', () => undefined);
  // A checked-out client whose connection is cut emits 'error' too (the pool listens only while it is idle): without
  // a listener that is an uncaught exception that kills the server; its query rejects, and the caller answers that.
  pool.on('connect', (client) => client.on('error', () => undefined));

  const listeners = new Set<() => void>();
  const subscriptions = new OpenSubscriptions();
  let closed = false;
  const wakeAll = (): void => {
    for (const wake of listeners) wake();
  };

  /**
   * The listener: one connection LISTENing on the schema's channel while anyone in this process tails the store. A
   * NOTIFY is a hint (delivered after its transaction commits, so a woken reader finds the rows); a connection that
   * dies loses the notifications sent meanwhile, which the readers' fallback poll covers, and a new one is opened
   * after a pause (the readers are woken once it listens, to cover the gap at once).
   */
  let listener: pg.Client | null = null;
  let relistenTimer: NodeJS.Timeout | undefined;
  let relistenDelay = relistenBase;
  const startListening = (): void => {
    if (!listen || closed || listener || relistenTimer || listeners.size === 0) return;
    const client = new pg.Client({ connectionString: opts.connectionString, application_name: `estate-listen:${schemaName}` });
    listener = client;
    const lost = (): void => {
      if (listener !== client) return;
      listener = null;
      client.end().catch(() => undefined);
      if (closed || listeners.size === 0) return;
      relistenTimer = setTimeout(() => {
        relistenTimer = undefined;
        startListening();
      }, relistenDelay);
      relistenTimer.unref();
      relistenDelay = Math.min(relistenDelay * 2, 5000);
    };
    client.on('error', lost);
    client.on('end', lost);
    client.on('notification', wakeAll);
    client
      .connect()
      .then(() => client.query(`LISTEN "${channel}"`))
      .then(() => {
        relistenDelay = relistenBase;
        wakeAll();
      }, lost);
  };
  const stopListening = (): Promise<void> => {
    clearTimeout(relistenTimer);
    relistenTimer = undefined;
    const client = listener;
    listener = null;
    return client ? client.end().catch(() => undefined) : Promise.resolve();
  };
  const addListener = (wake: () => void): (() => void) => {
    listeners.add(wake);
    startListening();
    return () => {
      listeners.delete(wake);
      if (listeners.size === 0) void stopListening();
    };
  };

  const objects = [`${s}.streams`, `${s}.events`, `${s}.events_global_order`];
  const schemaPresent = async (client: pg.ClientBase | pg.Pool): Promise<boolean> => {
    const { rows } = await client.query<{ present: boolean }>(
      'SELECT bool_and(to_regclass(name) IS NOT NULL) AS present FROM unnest($1::text[]) AS name',
      [objects],
    );
    return rows[0]?.present === true;
  };

  async function migrate(): Promise<void> {
    // Checked first because even CREATE INDEX IF NOT EXISTS takes a lock that waits for every open writer, and every
    // later writer would queue behind it: a second process starting up must not stall the ones already running.
    if (await schemaPresent(pool)) return;
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      // Concurrent CREATE ... IF NOT EXISTS can still collide in the catalogue; the first user migrates, others wait.
      await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`estate-event-store:${schemaName}`]);
      if (await schemaPresent(client)) {
        await client.query('COMMIT');
        return;
      }
      await client.query(`CREATE SCHEMA IF NOT EXISTS ${s}`);
      await client.query(`
        CREATE TABLE IF NOT EXISTS ${s}.streams (
          stream_id text PRIMARY KEY,
          revision bigint NOT NULL
        )`);
      await client.query(`
        CREATE TABLE IF NOT EXISTS ${s}.events (
          seq bigserial PRIMARY KEY,
          transaction_id xid8 NOT NULL DEFAULT pg_current_xact_id(),
          stream_id text NOT NULL,
          revision bigint NOT NULL,
          type text NOT NULL,
          data json NOT NULL,
          recorded_at timestamptz NOT NULL DEFAULT now(),
          UNIQUE (stream_id, revision)
        )`);
      await client.query(`CREATE INDEX IF NOT EXISTS events_global_order ON ${s}.events (transaction_id, seq)`);
      await client.query('COMMIT');
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
  }

  let ready: Promise<void> | null = null;
  const ensureReady = (): Promise<void> => {
    if (closed) return Promise.reject(new Error('PostgreSQL event store is closed'));
    ready ??= migrate().catch((error: unknown) => {
      // A failed first use (database still starting) must not poison every later call.
      ready = null;
      throw error;
    });
    return ready;
  };

  async function appendAll(requests: AppendRequest[]): Promise<AppendResult[]> {
    await ensureReady();
    requests.forEach(validateRequest);
    if (requests.length === 0) return [];
    const fast = opts.beforeCommit === undefined && requests.every((r) => r.events.length > 0) &&
      new Set(requests.map((r) => r.streamId)).size === requests.length;
    if (fast) {
      const results = await appendInOneStatement(requests);
      if (results) {
        wakeAll();
        return results;
      }
      // The check failed (or lost a race): the transaction below says exactly which stream and why, or succeeds.
    }
    return appendInTransaction(requests);
  }

  /**
   * The common append in ONE autocommitted statement (one round trip, no BEGIN/COMMIT): move each stream's head with
   * an upsert whose DO UPDATE only fires when the expected revision holds (the row lock makes check and move atomic
   * against every other writer), insert the events numbered from the new heads, and NOTIFY the listeners. When a
   * head did not move (a failed check) or a stream was created that the caller expected to exist, the guard divides
   * by zero, which aborts the whole statement: nothing is written, and null sends the caller to the transactional
   * path for the precise ConcurrencyError. Expected revisions are coded as numbers: -2 any, -1 no_stream, -3 exists.
   */
  async function appendInOneStatement(requests: AppendRequest[]): Promise<AppendResult[] | null> {
    const order = [...requests.keys()].sort((a, b) => (requests[a]!.streamId < requests[b]!.streamId ? -1 : 1));
    const code = (e: AppendRequest['expectedRevision']): number =>
      e === 'any' ? -2 : e === 'no_stream' ? -1 : e === 'exists' ? -3 : e;
    const ids: string[] = [];
    const offsets: number[] = [];
    const types: string[] = [];
    const payloads: string[] = [];
    const times: (string | null)[] = [];
    for (const request of requests) {
      request.events.forEach((event, i) => {
        ids.push(request.streamId);
        offsets.push(i);
        types.push(event.type);
        payloads.push(JSON.stringify(event.data ?? null));
        times.push(event.recordedAt ?? null);
      });
    }
    let rows: { kind: string; stream_id: string; revision: string; xid: string | null; seq: string | null }[];
    try {
      // Named, so each pooled connection parses and plans it once (the text embeds the schema: one name per schema).
      ({ rows } = await pool.query({
        name: `estate-append:${schemaName}`,
        text: `WITH req AS (
           SELECT * FROM unnest($1::text[], $2::bigint[], $3::bigint[]) WITH ORDINALITY AS r(stream_id, expected, n, ord)
         ),
         heads AS (
           INSERT INTO ${s}.streams AS st (stream_id, revision)
           SELECT stream_id, n - 1 FROM req ORDER BY ord
           ON CONFLICT (stream_id) DO UPDATE SET revision = st.revision + excluded.revision + 1
           WHERE (SELECT r.expected = -2 OR (r.expected = -3 AND st.revision >= 0) OR st.revision = r.expected
                  FROM req r WHERE r.stream_id = st.stream_id)
           RETURNING stream_id, revision, (xmax = 0) AS created
         ),
         guard AS (
           SELECT 1 / ((SELECT count(*) FROM heads h JOIN req r USING (stream_id)
                        WHERE NOT h.created OR r.expected IN (-2, -1)) = (SELECT count(*) FROM req))::int AS ok
         ),
         ins AS (
           INSERT INTO ${s}.events (stream_id, revision, type, data, recorded_at)
           SELECT e.stream_id, h.revision - r.n + 1 + e.i, e.type, e.data::json, COALESCE(e.at::timestamptz, now())
           FROM unnest($4::text[], $5::bigint[], $6::text[], $7::text[], $9::text[]) WITH ORDINALITY AS e(stream_id, i, type, data, at, ord)
           JOIN heads h USING (stream_id) JOIN req r USING (stream_id)
           WHERE (SELECT ok FROM guard) = 1
           ORDER BY e.ord
           RETURNING transaction_id::text AS xid, seq::text AS seq, stream_id, revision
         )
         SELECT 'h' AS kind, stream_id, revision::text AS revision, NULL AS xid, NULL AS seq FROM heads
         UNION ALL SELECT 'e', stream_id, revision::text, xid, seq FROM ins
         UNION ALL SELECT 'n', '', '', NULL, NULL FROM pg_notify($8, '')`,
        values: [
          order.map((i) => requests[i]!.streamId),
          order.map((i) => code(requests[i]!.expectedRevision)),
          order.map((i) => requests[i]!.events.length),
          ids,
          offsets,
          types,
          payloads,
          channel,
          times,
        ],
      }));
    } catch (error) {
      if (error instanceof pg.DatabaseError && (error.code === DIVISION_BY_ZERO || error.code === UNIQUE_VIOLATION)) return null;
      throw error;
    }
    const heads = new Map<string, number>();
    const positions = new Map<string, string>();
    for (const row of rows) {
      if (row.kind === 'h') heads.set(row.stream_id, Number(row.revision));
      else if (row.kind === 'e') positions.set(`${row.revision}\u0000${row.stream_id}`, formatPosition(row.xid!, row.seq!));
    }
    return requests.map(({ streamId, events }) => {
      const revision = heads.get(streamId)!;
      const first = revision - events.length + 1;
      return { revision, positions: events.map((_, i) => positions.get(`${first + i}\u0000${streamId}`)!) };
    });
  }

  async function appendInTransaction(requests: AppendRequest[]): Promise<AppendResult[]> {
    const streamIds = [...new Set(requests.map((r) => r.streamId))].sort();

    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      // DO UPDATE (not DO NOTHING) locks an existing head and returns its latest committed revision in one statement.
      const heads = await client.query<{ stream_id: string; revision: string }>(
        `INSERT INTO ${s}.streams (stream_id, revision)
         SELECT id, -1 FROM unnest($1::text[]) WITH ORDINALITY AS h(id, ord) ORDER BY ord
         ON CONFLICT (stream_id) DO UPDATE SET stream_id = excluded.stream_id
         RETURNING stream_id, revision`,
        [streamIds],
      );
      const planned = new Map(heads.rows.map((row) => [row.stream_id, Number(row.revision)]));

      const ids: string[] = [];
      const revisions: number[] = [];
      const types: string[] = [];
      const payloads: string[] = [];
      const times: (string | null)[] = [];
      const results = requests.map((request) => {
        const actual = planned.get(request.streamId) ?? -1;
        checkExpectedRevision(request.streamId, request.expectedRevision, actual);
        request.events.forEach((event, i) => {
          ids.push(request.streamId);
          revisions.push(actual + 1 + i);
          types.push(event.type);
          payloads.push(JSON.stringify(event.data ?? null));
          times.push(event.recordedAt ?? null);
        });
        planned.set(request.streamId, actual + request.events.length);
        return { streamId: request.streamId, first: actual + 1, count: request.events.length };
      });

      const positions = new Map<string, string>();
      if (ids.length > 0) {
        const inserted = await client.query<{ xid: string; seq: string; stream_id: string; revision: string }>(
          `WITH moved AS (
             UPDATE ${s}.streams AS st SET revision = h.revision
             FROM unnest($5::text[], $6::bigint[]) AS h(stream_id, revision)
             WHERE st.stream_id = h.stream_id
           )
           INSERT INTO ${s}.events (stream_id, revision, type, data, recorded_at)
           SELECT stream_id, revision, type, data::json, COALESCE(at::timestamptz, now())
           FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $7::text[]) WITH ORDINALITY AS e(stream_id, revision, type, data, at, ord)
           ORDER BY ord
           RETURNING transaction_id::text AS xid, seq::text AS seq, stream_id, revision::text AS revision`,
          [ids, revisions, types, payloads, [...planned.keys()], [...planned.values()], times],
        );
        for (const row of inserted.rows) positions.set(`${row.revision}\u0000${row.stream_id}`, formatPosition(row.xid, row.seq));
      }
      if (ids.length > 0) await client.query('SELECT pg_notify($1, $2)', [channel, '']);
      await opts.beforeCommit?.(requests);
      await client.query('COMMIT');

      if (ids.length > 0) wakeAll();
      return results.map(({ streamId, first, count }) => ({
        revision: first + count - 1,
        positions: Array.from({ length: count }, (_, i) => positions.get(`${first + i}\u0000${streamId}`)!),
      }));
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw toConflict(error, requests);
    } finally {
      client.release();
    }
  }

  /**
   * One page strictly after `after`, among rows no open transaction can precede, plus how far it looked: with a
   * prefix, a page of no matches still tells a subscription it may skip the window it scanned.
   */
  async function scan(after: Cursor, limit: number, prefix: string | undefined): Promise<{ events: StoredEvent[]; scannedTo: Cursor }> {
    await ensureReady();
    if (!Number.isInteger(limit) || limit < 1) throw new TypeError(`readAll limit must be a positive integer, got ${limit}`);
    const window = prefix === undefined ? limit : Math.max(limit, SCAN_WINDOW);
    let from = after;
    for (;;) {
      const { rows } = await pool.query<ScanRow>(
        `WITH w AS (
           SELECT seq, transaction_id, stream_id FROM ${s}.events
           WHERE (transaction_id, seq) > ($1::text::xid8, $2::bigint)
             AND transaction_id < pg_snapshot_xmin(pg_current_snapshot())
           ORDER BY transaction_id, seq
           LIMIT $4
         ),
         m AS (
           SELECT seq, transaction_id FROM w WHERE starts_with(stream_id, $3)
           ORDER BY transaction_id, seq LIMIT $5
         )
         SELECT * FROM (
           SELECT false AS window_end, m.transaction_id::text AS xid, m.seq::text AS seq, e.stream_id,
                  e.revision::text AS revision, e.type, e.data::text AS data, e.recorded_at, m.transaction_id AS k1, m.seq AS k2
           FROM m JOIN ${s}.events e ON e.seq = m.seq
           UNION ALL
           (SELECT true, transaction_id::text, seq::text, NULL, NULL, NULL, NULL, NULL, transaction_id, seq
            FROM w ORDER BY w.transaction_id DESC, w.seq DESC LIMIT 1)
         ) page
         ORDER BY k1, k2, window_end`,
        [from.xid.toString(), from.seq.toString(), prefix ?? '', window, limit],
      );
      const end = rows.find((row) => row.window_end);
      if (!end) return { events: [], scannedTo: from };
      const events = rows.filter((row) => !row.window_end).map((row) => toStored(row as EventRow));
      const windowEnd = parsePosition(formatPosition(end.xid, end.seq));
      if (events.length > 0) {
        // A full page may have stopped before the window's end: only then is the last event the furthest point read.
        const scannedTo = events.length < limit ? windowEnd : parsePosition(events[events.length - 1]!.position);
        return { events, scannedTo };
      }
      from = windowEnd;
    }
  }

  async function readAll(options: ReadAllOptions = {}): Promise<StoredEvent[]> {
    const { events } = await scan(parsePosition(options.after), options.limit ?? DEFAULT_LIMIT, options.streamPrefix);
    return events;
  }

  /**
   * Whether rows after `after` exist that `scan` may not return yet: committed after a transaction that is still open
   * somewhere in the cluster (see the header). A NOTIFY for such a row arrives while it is still held back.
   */
  async function heldBack(after: Cursor): Promise<boolean> {
    const { rows } = await pool.query<{ held: boolean }>(
      `SELECT EXISTS (SELECT 1 FROM ${s}.events WHERE (transaction_id, seq) > ($1::text::xid8, $2::bigint)
                        AND transaction_id >= pg_snapshot_xmin(pg_current_snapshot())) AS held`,
      [after.xid.toString(), after.seq.toString()],
    );
    return rows[0]?.held === true;
  }

  function subscribe(options: SubscribeOptions): Subscription {
    // Moves only on EMPTY pages: a delivered page may be offered again (its handler threw), so it must stay readable.
    let skipTo = START;
    let wakeTail: (() => void) | null = null;
    let recheck: NodeJS.Timeout | undefined;
    let recheckMs = 5;
    const subscription = tailSubscription({
      subscribe: options,
      pollIntervalMs,
      async readPage(after) {
        const from = later(parsePosition(after), skipTo);
        const { events, scannedTo } = await scan(from, DEFAULT_LIMIT, options.streamPrefix);
        if (events.length > 0) {
          recheckMs = 5;
          return events;
        }
        skipTo = scannedTo;
        // The wake-up came, but the rows are held back by an older open transaction: look again soon (5 ms, doubling
        // to 200 ms) rather than at the fallback poll, which would add up to a second to this change's latency.
        if (listen && recheck === undefined && (await heldBack(scannedTo))) {
          recheck = setTimeout(() => {
            recheck = undefined;
            wakeTail?.();
          }, recheckMs);
          recheck.unref();
          recheckMs = Math.min(recheckMs * 2, 200);
        } else recheckMs = 5;
        return events;
      },
      onLocalAppend(wake) {
        wakeTail = wake;
        const remove = addListener(wake);
        return () => {
          clearTimeout(recheck);
          wakeTail = null;
          remove();
        };
      },
    });
    return subscriptions.track(subscription);
  }

  return {
    kind: 'postgres',

    append: (streamId, events, { expectedRevision }) =>
      appendAll([{ streamId, events, expectedRevision }]).then((results) => results[0]!),

    appendMany: appendAll,

    async readStream(streamId, options = {}) {
      await ensureReady();
      // ORDER BY the table's bigint column: a bare `revision` would name the text alias and sort '10' before '9'.
      const { rows } = await pool.query<EventRow>(
        `SELECT transaction_id::text AS xid, seq::text AS seq, stream_id, revision::text AS revision, type,
                data::text AS data, recorded_at
         FROM ${s}.events e WHERE e.stream_id = $1 AND e.revision >= $2 ORDER BY e.revision`,
        [streamId, Math.max(0, options.fromRevision ?? 0)],
      );
      return rows.map(toStored);
    },

    readAll,
    subscribe,

    async close() {
      if (closed) return;
      await subscriptions.closeAll();
      closed = true;
      await stopListening();
      await pool.end();
    },
  };
}

/**
 * The head lock makes a duplicate (stream, revision) impossible among writers that use this adapter; if one slips
 * through anyway (a writer bypassing the heads), it is still a conflict, not a crash.
 */
function toConflict(error: unknown, requests: AppendRequest[]): unknown {
  if (error instanceof ConcurrencyError) return error;
  if (error instanceof pg.DatabaseError && error.code === UNIQUE_VIOLATION) {
    const streamId = /\(stream_id, revision\)=\((.*), -?\d+\)/.exec(error.detail ?? '')?.[1];
    const request = requests.find((r) => r.streamId === streamId) ?? requests[0]!;
    return new ConcurrencyError(request.streamId, request.expectedRevision);
  }
  return error;
}
