/** Reads from the PostgreSQL event store: pages in global order that no open transaction can precede, and streams. */
import type pg from 'pg';
import type { HeldBack, HeldBackHolder, ReadStreamOptions, StoredEvent } from '#app/ports';
import { INDEXED_PREFIXES, SCAN_WINDOW, formatPosition, parsePosition, recordedAtIso, toStored, tupleToStored, type Cursor, type EventRow, type EventTuple, type ScanRow, type WindowTuple } from './postgres-rows.ts';

export interface PostgresReadContext {
  pool: pg.Pool;
  /** The quoted schema name, as interpolated into the statements. */
  s: string;
  ensureReady: () => Promise<void>;
}

/** What `scan` read: a page, how far it looked, whether it reached the end, and (if asked) whether rows are held back. */
export interface ScanPage {
  events: StoredEvent[];
  scannedTo: Cursor;
  end: boolean;
  /**
   * Rows exist after `after` that `scan` may not return yet: written by a transaction no older than the oldest one
   * still open in the cluster, committed or not (see the header of postgres-event-store.ts). A NOTIFY for such a row
   * arrives while it is still held back. Answered in the page's own statement and snapshot; false unless asked.
   */
  held: boolean;
}

/**
 * `scan`'s statement: $1 xid and $2 seq to start after, $3 the prefix, $4 the window's rows, $5 the page's, $6
 * whether to ask if rows are held back. An indexed kind's (`indexed`: its prefix) names the prefix as a literal, which
 * is what lets PostgreSQL use the kind's own index (postgres-schema.ts): its windows are of the kind's rows only.
 */
export const scanSql = (s: string, indexed: string | undefined): string =>
  `WITH w AS (
         SELECT seq, transaction_id, stream_id FROM ${s}.events
         WHERE (transaction_id, seq) > ($1::text::xid8, $2::bigint)
           AND transaction_id < pg_snapshot_xmin(pg_current_snapshot())${indexed !== undefined ? `
           AND starts_with(stream_id, '${indexed}')` : ''}
         ORDER BY transaction_id, seq
         LIMIT $4
       ),
       m AS (
         SELECT seq, transaction_id FROM w WHERE starts_with(stream_id, $3)
         ORDER BY transaction_id, seq LIMIT $5
       )
       SELECT * FROM (
         SELECT false AS window_end, m.transaction_id::text AS xid, m.seq::text AS seq, e.stream_id,
                e.revision::text AS revision, e.type, e.data::text AS data, ${recordedAtIso('e.recorded_at')} AS recorded_at, m.transaction_id AS k1, m.seq AS k2,
                NULL AS window_rows, NULL::boolean AS held
         FROM m JOIN ${s}.events e ON e.seq = m.seq
         UNION ALL
         -- The trailer, always one row (sorted last when the window is empty): the window's last row and size, and
         -- whether anything is held back.
         SELECT true, t.xid, t.seq, NULL, NULL, NULL, NULL, NULL, t.k1, t.k2, (SELECT count(*) FROM w)::text,
                CASE WHEN $6::boolean THEN EXISTS (
                  SELECT 1 FROM ${s}.events h WHERE (h.transaction_id, h.seq) > ($1::text::xid8, $2::bigint)
                    AND h.transaction_id >= pg_snapshot_xmin(pg_current_snapshot())) ELSE false END
         FROM (SELECT 1) one LEFT JOIN LATERAL (
           SELECT transaction_id::text AS xid, seq::text AS seq, transaction_id AS k1, seq AS k2
           FROM w ORDER BY w.transaction_id DESC, w.seq DESC LIMIT 1) t ON true
       ) page
       ORDER BY k1, k2, window_end`;

/**
 * One page strictly after `after`, among rows no open transaction can precede, plus how far it looked: with a
 * prefix, a page of no matches still tells a subscription it may skip the window it scanned. `end`: the read looked
 * at every visible row after `after` (its last window was not full), so nothing visible follows the page.
 *
 * Held-back rows always sort after every visible row (their transaction ids are at or past the snapshot's xmin, the
 * visible ones' below it), so `held` is one index probe from `after`, whatever the window found.
 */
export async function scan(
  c: PostgresReadContext,
  after: Cursor,
  limit: number,
  prefix: string | undefined,
  /** Also ask whether rows past what is visible are held back by an older open transaction (`held`). */
  askHeld = false,
): Promise<ScanPage> {
  const { pool, s } = c;
  await c.ensureReady();
  if (!Number.isInteger(limit) || limit < 1) throw new TypeError(`readAll limit must be a positive integer, got ${limit}`);
  const window = prefix === undefined ? limit : Math.max(limit, SCAN_WINDOW);
  // An indexed kind's windows are of its own rows, by its index (postgres-schema.ts). Any other prefix's windows are of
  // the log's rows, filtered after.
  const indexed = prefix !== undefined && Object.hasOwn(INDEXED_PREFIXES, prefix) ? prefix : undefined;
  let from = after;
  for (;;) {
    // Named, like every statement on the hot paths: each pooled connection parses and plans it once (the text embeds
    // the schema, so the name does too); unnamed, the parse and plan cost as much again as the query itself.
    const { rows } = await pool.query<ScanRow>({
      name: `estate-scan${indexed !== undefined ? `-${indexed}` : ''}:${s}`,
      text: scanSql(s, indexed),
      values: [from.xid.toString(), from.seq.toString(), prefix ?? '', window, limit, askHeld],
    });
    const last = rows.find((row) => row.window_end);
    const held = last?.held === true;
    if (!last || last.xid === null || last.seq === null) return { events: [], scannedTo: from, end: true, held };
    const events = rows.filter((row) => !row.window_end).map((row) => toStored(row as EventRow));
    const windowEnd = parsePosition(formatPosition(last.xid, last.seq));
    // A window that was not full reached the end of what is visible: asking again would only return nothing.
    const windowShort = Number(last.window_rows) < window;
    if (events.length > 0) {
      // A full page may have stopped before the window's end: only then is the last event the furthest point read.
      const short = events.length < limit;
      return { events, scannedTo: short ? windowEnd : parsePosition(events[events.length - 1]!.position), end: short && windowShort, held };
    }
    if (windowShort) return { events: [], scannedTo: windowEnd, end: true, held };
    from = windowEnd;
  }
}

/** scanToEnd's statement: $1 xid and $2 seq to start after, $3 the prefix, $4 the window's rows. */
export const scanToEndSql = (s: string): string => {
  const hit = 'starts_with(e.stream_id, $3)';
  return `SELECT e.transaction_id::text, e.seq::text, ${hit}, CASE WHEN ${hit} THEN e.stream_id END,
            CASE WHEN ${hit} THEN e.revision::text END, CASE WHEN ${hit} THEN e.type END,
            CASE WHEN ${hit} THEN e.data::text END, CASE WHEN ${hit} THEN ${recordedAtIso('e.recorded_at')} END
     FROM ${s}.events e
     WHERE (e.transaction_id, e.seq) > ($1::text::xid8, $2::bigint)
       AND e.transaction_id < pg_snapshot_xmin(pg_current_snapshot())
     ORDER BY e.transaction_id, e.seq
     LIMIT $4`;
};

/**
 * The log from `after` to its end for a replay (the store's `scan`): full pages of `limit` events under `prefix` (the
 * last one shorter), in `scan`'s order and under its visibility rule (no row an open transaction can precede). Two
 * statements, chosen as the log goes:
 * - where most rows are under the prefix (a catalogue's log), one plain statement per window of `limit` rows in the
 *   log's order; a row outside the prefix comes back as its position and `false` only (its columns, the data above
 *   all, never read out), and the next window starts after the last row, matching or not. A window short of full is
 *   the end of what is visible. `estate replay` of 100,000 events: 57-60k events/s, where paging `scan` ran at 37-38k;
 * - where fewer than half of a window's rows are (call records between catalogue events), `scan` itself, which filters
 *   on the server and sends only the matches: returning every row's position cost a store of 2,000 tool events among
 *   400,000 call records 1.8-2.3 s against paging `scan`'s 0.9-1.1; switching, 0.57-0.75 s. Back to the plain
 *   statement when a page comes back full.
 *
 * Why the prefix is not in the plain statement's WHERE clause: filtered there, PostgreSQL's estimate of the matching
 * rows decides the plan, and below the LIMIT (a table never analyzed, or a prefix it believes rare) it chose to read
 * every row after the position and sort them, for each of a connection's first five executions: 140 ms a page on
 * 100,000 events instead of 3. Unfiltered, the range is all it estimates, and the index's order with a LIMIT wins.
 * Its window is no wider than a page: every match of a window arrives with its data at once (`scan` joins at most a
 * page's data too).
 *
 * No read-ahead: asking for the next page while the consumer folded this one made no difference (this scan's first
 * version, pages of 1,000; 100,000 events, four alternating pairs, 35-41k events/s either way). The server cannot run
 * ahead: the rows wait in the socket's buffer, which fills long before a page is in, and this thread reads it only once
 * the fold lets go.
 */
export async function* scanToEnd(
  c: PostgresReadContext,
  after: Cursor,
  limit: number,
  prefix: string | undefined,
  /**
   * Rejects when the store closes: a query made as the pool ends can wait in pg-pool's queue forever, so the scan
   * waits on this beside it and fails rather than hang (or look finished).
   */
  closing: Promise<never>,
): AsyncGenerator<StoredEvent[]> {
  const { pool, s } = c;
  await c.ensureReady();
  if (!Number.isInteger(limit) || limit < 1) throw new TypeError(`scan limit must be a positive integer, got ${limit}`);
  const plainWindow = (from: Cursor): Promise<pg.QueryResult<WindowTuple>> =>
    pool.query<WindowTuple>({
      name: `estate-scan-to-end:${s}`,
      text: scanToEndSql(s),
      values: [from.xid.toString(), from.seq.toString(), prefix ?? '', limit],
      rowMode: 'array',
    });
  let page: StoredEvent[] = [];
  let sparse = false;
  for (let from = after; ; ) {
    if (sparse) {
      const { events, scannedTo } = await Promise.race([scan(c, from, limit - page.length, prefix), closing]);
      page.push(...events);
      if (events.length === 0) break;
      if (page.length === limit) {
        yield page;
        page = [];
        sparse = false;
      }
      from = scannedTo;
      continue;
    }
    const { rows } = await Promise.race([plainWindow(from), closing]);
    let matched = 0;
    for (const row of rows) {
      if (!row[2]) continue;
      matched++;
      page.push(tupleToStored(row as EventTuple));
      if (page.length === limit) {
        yield page;
        page = [];
      }
    }
    if (rows.length < limit) break;
    // Every row matches an empty prefix, so only a real one can make a window sparse.
    sparse = matched * 2 < rows.length;
    const last = rows[rows.length - 1]!;
    from = { xid: BigInt(last[0]), seq: BigInt(last[1]) };
  }
  if (page.length > 0) yield page;
}

/** One stream's events from a revision on, in revision order. */
export async function readStream(c: PostgresReadContext, streamId: string, options: ReadStreamOptions = {}): Promise<StoredEvent[]> {
  const { pool, s } = c;
  await c.ensureReady();
  if (options.direction === 'backwards') {
    const { rows } = await pool.query<EventRow>({
      name: `estate-read-stream-back:${s}`,
      text: `SELECT transaction_id::text AS xid, seq::text AS seq, stream_id, revision::text AS revision, type,
              data::text AS data, ${recordedAtIso('e.recorded_at')} AS recorded_at
       FROM ${s}.events e WHERE e.stream_id = $1 AND e.revision <= $2 ORDER BY e.revision DESC LIMIT $3`,
      values: [streamId, options.fromRevision ?? Number.MAX_SAFE_INTEGER, options.limit ?? null],
    });
    return rows.map(toStored);
  }
  // ORDER BY the table's bigint column: a bare `revision` would name the text alias and sort '10' before '9'.
  const { rows } = await pool.query<EventRow>({
    name: `estate-read-stream:${s}`,
    text: `SELECT transaction_id::text AS xid, seq::text AS seq, stream_id, revision::text AS revision, type,
            data::text AS data, ${recordedAtIso('e.recorded_at')} AS recorded_at
     FROM ${s}.events e WHERE e.stream_id = $1 AND e.revision >= $2 ORDER BY e.revision LIMIT $3`,
    // LIMIT NULL: no limit.
    values: [streamId, Math.max(0, options.fromRevision ?? 0), options.limit ?? null],
  });
  return rows.map(toStored);
}

/**
 * The ids of the streams under a prefix, in byte order: an index range on `streams_id_bytes` (postgres-schema.ts; the
 * planner turns `starts_with` into one because that index is in the "C" collation). Unnamed, so each read is planned
 * with its own prefix: a generic plan, made without it, could only scan every stream.
 */
export async function streamIds(c: PostgresReadContext, prefix: string): Promise<string[]> {
  await c.ensureReady();
  const { rows } = await c.pool.query<{ stream_id: string }>(streamIdsSql(c.s), [prefix]);
  return rows.map((r) => r.stream_id);
}

/** `streamIds`' statement ($1: the prefix); exported for the test that reads its plan. */
export const streamIdsSql = (s: string): string => `SELECT stream_id FROM ${s}.streams WHERE starts_with(stream_id, $1) ORDER BY stream_id COLLATE "C"`;

/**
 * Committed events at or past the oldest transaction open in the cluster: the log is not read past them until it
 * ends (see the header of postgres-event-store.ts). Counted up to `cap`, by the log's index from that transaction on.
 * When some are held, the transaction holding them is named too (`heldBackHolder`).
 */
export async function heldBack(c: PostgresReadContext, cap: number): Promise<HeldBack> {
  await c.ensureReady();
  const { rows } = await c.pool.query<{ events: number; oldest: number | null; xmin: string }>(
    `SELECT count(held.recorded_at)::int AS events,
            EXTRACT(EPOCH FROM clock_timestamp() - min(held.recorded_at))::float8 AS oldest, horizon.xmin::text AS xmin
     FROM (SELECT pg_snapshot_xmin(pg_current_snapshot()) AS xmin) horizon
     LEFT JOIN LATERAL (SELECT recorded_at FROM ${c.s}.events WHERE transaction_id >= horizon.xmin
                        ORDER BY transaction_id, seq LIMIT $1) held ON true
     GROUP BY horizon.xmin`,
    [cap],
  );
  const r = rows[0];
  const held: HeldBack = { events: r?.events ?? 0, oldestSeconds: Math.max(0, r?.oldest ?? 0) };
  if (held.events === 0 || !r) return held;
  const holder = await heldBackHolder(c, r.xmin);
  return holder ? { ...held, holder } : held;
}

/**
 * The transaction whose id is `xmin` (a snapshot's oldest running one), if it is still running: a session's
 * (`pg_stat_activity.backend_xid`, which any role may read, with the session's pid, database, user and application;
 * its state and start are null for a role not allowed to read that user's statistics), or a prepared transaction,
 * which holds with no session at all (`pg_prepared_xacts`). Undefined when it has ended since (then another, newer
 * transaction is not named in its place).
 */
export async function heldBackHolder(c: PostgresReadContext, xmin: string): Promise<HeldBackHolder | undefined> {
  const { rows } = await c.pool.query<{
    pid: number | null;
    prepared: string | null;
    database: string;
    user: string;
    application: string;
    state: string | null;
    seconds: number | null;
  }>(
    `SELECT pid, prepared, database, "user", application, state, seconds FROM (
       SELECT a.pid, NULL::text AS prepared, coalesce(a.datname::text, '') AS database,
              coalesce(a.usename::text, '') AS "user", coalesce(a.application_name, '') AS application, a.state,
              EXTRACT(EPOCH FROM clock_timestamp() - a.xact_start)::float8 AS seconds
       FROM pg_stat_activity a WHERE a.backend_xid = $1::xid8::xid
       UNION ALL
       SELECT NULL, p.gid, p.database::text, p.owner::text, '', NULL,
              EXTRACT(EPOCH FROM clock_timestamp() - p.prepared)::float8
       FROM pg_prepared_xacts p WHERE p.transaction = $1::xid8::xid
     ) running LIMIT 1`,
    [xmin],
  );
  const h = rows[0];
  if (!h) return undefined;
  return {
    ...(h.pid !== null ? { pid: h.pid } : {}),
    ...(h.prepared !== null ? { prepared: h.prepared } : {}),
    database: h.database,
    user: h.user,
    application: h.application,
    ...(h.state !== null ? { state: h.state } : {}),
    ...(h.seconds !== null ? { seconds: Math.max(0, h.seconds) } : {}),
  };
}
