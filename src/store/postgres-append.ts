/**
 * Appends to the PostgreSQL event store: the fast path in one statement, and the transaction that names the exact
 * conflict (see postgres-event-store.ts for why heads are locked and positions are `<xid>:<seq>`). Waking local
 * readers after a commit is the caller's job.
 */
import pg from 'pg';
import type { AppendRequest, AppendResult } from '#app/ports';
import { checkExpectedRevision } from './expected-revision.ts';
import { DIVISION_BY_ZERO, UNIQUE_VIOLATION, formatPosition, toConflict } from './postgres-rows.ts';
import { notifyPayload } from './postgres-listener.ts';
import { inTransaction } from './postgres-tx.ts';

export interface PostgresAppendContext {
  pool: pg.Pool;
  /** The quoted schema name, as interpolated into the statements. */
  s: string;
  schemaName: string;
  /** The NOTIFY channel of the schema. */
  channel: string;
  beforeCommit?: ((requests: AppendRequest[]) => Promise<void>) | undefined;
}

/**
 * The common append in ONE autocommitted statement (one round trip, no BEGIN/COMMIT): move each stream's head with
 * an upsert whose DO UPDATE only fires when the expected revision holds (the row lock makes check and move atomic
 * against every other writer), insert the events numbered from the new heads, and NOTIFY the listeners. When a
 * head did not move (a failed check) or a stream was created that the caller expected to exist, the guard divides
 * by zero, which aborts the whole statement: nothing is written, and null sends the caller to the transactional
 * path for the precise ConcurrencyError. Expected revisions are coded as numbers: -2 any, -1 no_stream, -3 exists.
 */
export async function appendInOneStatement(c: PostgresAppendContext, requests: AppendRequest[]): Promise<AppendResult[] | null> {
  const { pool, s, schemaName, channel } = c;
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
       UNION ALL SELECT 'n', '', '', NULL, NULL FROM pg_notify($8, $10)`,
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
        notifyPayload(order.map((i) => requests[i]!.streamId)),
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

export async function appendInTransaction(c: PostgresAppendContext, requests: AppendRequest[]): Promise<AppendResult[]> {
  const { pool, s, channel } = c;
  const streamIds = [...new Set(requests.map((r) => r.streamId))].sort();

  try {
    return await inTransaction(pool, async (client) => {
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
      if (ids.length > 0) await client.query('SELECT pg_notify($1, $2)', [channel, notifyPayload(requests.filter((r) => r.events.length > 0).map((r) => r.streamId))]);
      await c.beforeCommit?.(requests);
      return results.map(({ streamId, first, count }) => ({
        revision: first + count - 1,
        positions: Array.from({ length: count }, (_, i) => positions.get(`${first + i}\u0000${streamId}`)!),
      }));
    });
  } catch (error) {
    throw toConflict(error, requests);
  }
}
