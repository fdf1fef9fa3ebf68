/** The PostgreSQL event store's DDL: its schema, created once on first use, without stalling running writers. */
import type pg from 'pg';
import { INDEXED_PREFIXES, STREAM_IDS_INDEX } from './postgres-rows.ts';
import { inTransaction } from './postgres-tx.ts';

/**
 * The indexes that only make reads faster, each `[name, what it indexes]`: reads are the same without them.
 * - An indexed kind's own (postgres-rows.ts, INDEXED_PREFIXES): its rows in the log's order, so its reads pass over no
 *   call record.
 * - The stream ids in byte order (STREAM_IDS_INDEX): `streamIds(prefix)` finds one run's streams among millions by an
 *   index range, where the primary key, in the database's collation (often not "C"), cannot serve a prefix.
 * In the order an append takes its tables (streams, then events): a build locks each table in turn, and one that held
 * events while it waited for streams would deadlock with an append that held streams and waited for events (CI, once).
 */
const speedUpIndexes = (s: string): { streams: Array<[string, string]>; events: Array<[string, string]> } => ({
  streams: [[STREAM_IDS_INDEX, `${s}.streams (stream_id COLLATE "C")`]],
  events: Object.entries(INDEXED_PREFIXES).map(([prefix, index]): [string, string] => [index, `${s}.events (transaction_id, seq) WHERE starts_with(stream_id, '${prefix}')`]),
});
/** SQLSTATE 3D000: the connection names a database that does not exist. */
const INVALID_CATALOG_NAME = '3D000';

const createIndex = (index: string, on: string, concurrently: boolean): string =>
  `CREATE INDEX ${concurrently ? 'CONCURRENTLY ' : ''}IF NOT EXISTS ${index} ON ${on}`;

/**
 * A `ready()` that creates the tables on first use and resolves at once after. A failed first use (database still
 * starting) is forgotten, so it does not poison every later call; `isClosed` refuses use after close.
 *
 * `missing`, given (a read-only opening: SPEC §5, read-only verbs never create a store): nothing is created, not even
 * a speed-up index; a schema without the event tables rejects with the error `missing()` makes. A database that does
 * not exist (Estate creates its schema, never a database) rejects with the error `noDatabase` makes of the driver's.
 */
export function createSchemaMigration(
  pool: pg.Pool,
  s: string,
  schemaName: string,
  isClosed: () => boolean,
  missing?: () => Error,
  noDatabase?: (e: Error) => Error,
): () => Promise<void> {
  /**
   * Which of these relations of the schema exist, read from pg_class with the statement's snapshot. Not by
   * `to_regclass`, which reads the connection's catalog cache: a connection that looked before another process created
   * the schema, and then waited for that process's lock, still saw no schema after it (reproduced by hand), so it ran
   * the DDL again, locking tables that appends were writing.
   */
  const existing = async (client: pg.ClientBase | pg.Pool, names: readonly string[]): Promise<Set<string>> => {
    const { rows } = await client.query<{ relname: string }>(
      `SELECT c.relname FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
       WHERE n.nspname = $1 AND c.relname = ANY($2::text[])`,
      [schemaName, names],
    );
    return new Set(rows.map((r) => r.relname));
  };
  const objects = ['streams', 'events', 'events_global_order'];
  const schemaPresent = async (client: pg.ClientBase | pg.Pool): Promise<boolean> => (await existing(client, objects)).size === objects.length;

  /**
   * The speed-up indexes (speedUpIndexes): on a schema made before them, built CONCURRENTLY, which lets writers go on
   * while they are built, and in the background: a process starting on a large log serves at once (slower reads
   * meanwhile) rather than wait minutes for the build. Reads are the same without them, so a build that fails (another
   * process building it at the same moment) is left for the next start.
   */
  const buildMissingIndexes = async (): Promise<void> => {
    const { streams, events } = speedUpIndexes(s);
    const all = [...streams, ...events];
    const present = await existing(pool, all.map(([index]) => index));
    for (const [index, on] of all) if (!present.has(index)) await pool.query(createIndex(index, on, true)).catch(() => undefined);
  };

  async function migrate(): Promise<void> {
    if (missing) {
      if (!(await schemaPresent(pool))) throw missing();
      return;
    }
    // Checked first because even CREATE INDEX IF NOT EXISTS takes a lock that waits for every open writer, and every
    // later writer would queue behind it: a second process starting up must not stall the ones already running.
    if (await schemaPresent(pool)) {
      void buildMissingIndexes().catch(() => undefined);
      return;
    }
    await inTransaction(pool, async (client) => {
      // Concurrent CREATE ... IF NOT EXISTS can still collide in the catalogue; the first user migrates, others wait.
      await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`estate-event-store:${schemaName}`]);
      if (await schemaPresent(client)) return;
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
      // Each table's indexes in an append's order (speedUpIndexes): streams, then events.
      const { streams, events } = speedUpIndexes(s);
      for (const [index, on] of streams) await client.query(createIndex(index, on, false));
      await client.query(`CREATE INDEX IF NOT EXISTS events_global_order ON ${s}.events (transaction_id, seq)`);
      for (const [index, on] of events) await client.query(createIndex(index, on, false));
    });
  }

  let ready: Promise<void> | null = null;
  return (): Promise<void> => {
    if (isClosed()) return Promise.reject(new Error('PostgreSQL event store is closed'));
    ready ??= migrate().catch((e: unknown) => {
      const error = (e as { code?: unknown }).code === INVALID_CATALOG_NAME && noDatabase ? noDatabase(e as Error) : e;
      // A failed first use (database still starting) must not poison every later call.
      ready = null;
      throw error;
    });
    return ready;
  };
}
