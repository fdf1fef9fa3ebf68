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
 *
 * The parts: postgres-schema.ts (DDL), postgres-append.ts (append), postgres-read.ts (pages and streams),
 * postgres-listener.ts (LISTEN/NOTIFY wake-ups), postgres-rows.ts (positions and rows), postgres-snapshots.ts (projection
 * snapshots); this file ties them to the port.
 */
import pg from 'pg';
import { DomainError } from '#domain/errors';
import { HELD_BACK_COUNT_CAP, type AppendRequest, type AppendResult, type EventStore, type LogPage, type ReadAllOptions, type StoredEvent, type SubscribeOptions, type Subscription } from '#app/ports';
import { appendInOneStatement, appendInTransaction, type PostgresAppendContext } from './postgres-append.ts';
import { createAppendListener } from './postgres-listener.ts';
import { heldBack, readStream, scan, scanToEnd, streamIds, type PostgresReadContext } from './postgres-read.ts';
import { DEFAULT_LIMIT, START, later, parsePosition, quoteSchema, validateRequest } from './postgres-rows.ts';
import { createSchemaMigration } from './postgres-schema.ts';
import { createPostgresSnapshots } from './postgres-snapshots.ts';
import { redactStoreUrl, STORE_URL_SOURCE } from './store-url.ts';
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
  /**
   * Only read (SPEC §5: read-only verbs never create a store): nothing is created, not the schema, its tables or an
   * index, and a schema without the event tables is an error (usage, `no-store`) when the store is opened.
   */
  readOnly?: boolean;
  /** Where the user gave the URL, for the hints of a `no-store` error (`check --to`). Default `--store or ESTATE_STORE`. */
  flag?: string;
  /** Pool size. Default 10. */
  maxConnections?: number;
  /**
   * Test seam: awaited inside an append's transaction, after its rows are written and before COMMIT, so a test can
   * hold a transaction open and commit it late, the way a slow writer would.
   */
  beforeCommit?: (requests: AppendRequest[]) => Promise<void>;
}

export async function createPostgresEventStore(opts: PostgresEventStoreOptions): Promise<EventStore> {
  const schemaName = opts.schema ?? 'estate';
  const s = quoteSchema(schemaName);
  const flag = opts.flag ?? STORE_URL_SOURCE;
  const listen = opts.listen ?? true;
  const pollIntervalMs = opts.pollIntervalMs ?? (listen ? 1000 : 50);
  // One channel per schema; a quoted identifier (the schema name is a plain one) of at most 63 bytes.
  const channel = `estate_append_${schemaName}`.slice(0, 63);
  const pool = new pg.Pool({ connectionString: opts.connectionString, max: opts.maxConnections ?? 10 });
  // An idle client losing its connection must not crash the process; the next query reconnects.
  pool.on('error', () => undefined);
  // A checked-out client whose connection is cut emits 'error' too (the pool listens only while it is idle): without
  // a listener that is an uncaught exception that kills the server; its query rejects, and the caller answers that.
  pool.on('connect', (client) => client.on('error', () => undefined));

  const subscriptions = new OpenSubscriptions();
  let closed = false;
  let markClosed!: (e: Error) => void;
  const closing = new Promise<never>((_, reject) => (markClosed = reject));
  closing.catch(() => undefined);
  const isClosed = (): boolean => closed;
  const wakeUps = createAppendListener({
    connectionString: opts.connectionString,
    schemaName,
    channel,
    listen,
    relistenDelayMs: opts.relistenDelayMs ?? 250,
    isClosed,
  });
  const ensureReady = createSchemaMigration(
    pool,
    s,
    schemaName,
    isClosed,
    opts.readOnly
      ? () =>
        noStore(
          opts.connectionString,
          `the schema "${schemaName}" holds no Estate event tables (nothing was created; check ${flag}, ` +
            'or publish something first)',
        )
      : undefined,
    (e) =>
      noStore(opts.connectionString, `${e.message} (Estate creates its schema and tables, never a database: create it, or check ${flag})`),
  );
  const appends: PostgresAppendContext = { pool, s, schemaName, channel, beforeCommit: opts.beforeCommit };
  const reads: PostgresReadContext = { pool, s, ensureReady };

  async function appendAll(requests: AppendRequest[]): Promise<AppendResult[]> {
    await ensureReady();
    requests.forEach(validateRequest);
    if (requests.length === 0) return [];
    const fast = opts.beforeCommit === undefined && requests.every((r) => r.events.length > 0) &&
      new Set(requests.map((r) => r.streamId)).size === requests.length;
    if (fast) {
      const results = await appendInOneStatement(appends, requests);
      if (results) {
        wakeUps.wake(requests.map((r) => r.streamId));
        return results;
      }
      // The check failed (or lost a race): the transaction below says exactly which stream and why, or succeeds.
    }
    const results = await appendInTransaction(appends, requests);
    const appended = requests.filter((r) => r.events.length > 0).map((r) => r.streamId);
    if (appended.length > 0) wakeUps.wake(appended);
    return results;
  }

  async function readAllPage(options: ReadAllOptions = {}): Promise<LogPage> {
    const { events, end } = await scan(reads, parsePosition(options.after), options.limit ?? DEFAULT_LIMIT, options.streamPrefix);
    return { events, end };
  }

  async function readAll(options: ReadAllOptions = {}): Promise<StoredEvent[]> {
    return (await readAllPage(options)).events;
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
        const askHeld = listen && recheck === undefined;
        const { events, scannedTo, end, held } = await scan(reads, from, DEFAULT_LIMIT, options.streamPrefix, askHeld);
        if (events.length === 0) skipTo = scannedTo;
        // The wake-up came, but rows are held back by an older open transaction (one that is not an append: those
        // NOTIFY when they commit): look again soon (5 ms, doubling to 200 ms) rather than at the fallback poll, which
        // would add up to a second to this change's latency. Asked in the page's own statement, only at its end.
        if (askHeld && end && held) {
          recheck = setTimeout(() => {
            recheck = undefined;
            wakeTail?.();
          }, recheckMs);
          recheck.unref();
          recheckMs = Math.min(recheckMs * 2, 200);
        } else recheckMs = 5;
        return { events, end };
      },
      onLocalAppend(wake) {
        wakeTail = wake;
        const remove = wakeUps.addListener(wake, options.streamPrefix);
        return () => {
          clearTimeout(recheck);
          wakeTail = null;
          remove();
        };
      },
    });
    return subscriptions.track(subscription);
  }

  const store: EventStore = {
    kind: 'postgres',

    append: (streamId, events, { expectedRevision }) =>
      appendAll([{ streamId, events, expectedRevision }]).then((results) => results[0]!),

    appendMany: appendAll,

    readStream: (streamId, options = {}) => readStream(reads, streamId, options),

    readAll,
    readAllPage,
    streamIds: (prefix) => streamIds(reads, prefix),
    heldBack: () => heldBack(reads, HELD_BACK_COUNT_CAP),
    scan(options = {}) {
      if (closed) throw new Error('postgres store: scan after close');
      return scanToEnd(reads, parsePosition(options.after), options.limit ?? DEFAULT_LIMIT, options.streamPrefix, closing);
    },
    subscribe,
    snapshots: createPostgresSnapshots(pool, s, schemaName),

    async close() {
      if (closed) return;
      await subscriptions.closeAll();
      closed = true;
      markClosed(new Error('postgres store: closed during a scan'));
      await wakeUps.stop();
      await pool.end();
    },
  };
  if (opts.readOnly) {
    // Checked at once, as the SQLite file is: a read-only verb on an empty database fails before it reads anything.
    try {
      await ensureReady();
    } catch (e) {
      await store.close();
      throw e;
    }
  }
  return store;
}

/**
 * No store where the URL points: a database that does not exist, or (opened read-only) a schema where nothing was
 * ever published. The same error, and exit code, as a SQLite file that does not exist.
 */
const noStore = (connectionString: string, why: string): DomainError =>
  new DomainError('usage', 'no-store', `no store at ${redactStoreUrl(connectionString)}: ${why}`);
