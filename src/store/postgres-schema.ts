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
 */
const speedUpIndexes = (s: string): Array<[string, string]> => [
  ...Object.entries(INDEXED_PREFIXES).map(([prefix, index]): [string, string] => [index, `${s}.events (transaction_id, seq) WHERE starts_with(stream_id, '${prefix}')`]),
  [STREAM_IDS_INDEX, `${s}.streams (stream_id COLLATE "C")`],
];
const createIndex = (index: string, on: string, concurrently: boolean): string =>
  `CREATE INDEX ${concurrently ? 'CONCURRENTLY ' : ''}IF NOT EXISTS ${index} ON ${on}`;

/**
 * A `ready()` that creates the tables on first use and resolves at once after. A failed first use (database still
 * starting) is forgotten, so it does not poison every later call; `isClosed` refuses use after close.
 */
export function createSchemaMigration(pool: pg.Pool, s: string, schemaName: string, isClosed: () => boolean): () => Promise<void> {
  const objects = [`${s}.streams`, `${s}.events`, `${s}.events_global_order`];
  const schemaPresent = async (client: pg.ClientBase | pg.Pool): Promise<boolean> => {
    const { rows } = await client.query<{ present: boolean }>(
      'SELECT bool_and(to_regclass(name) IS NOT NULL) AS present FROM unnest($1::text[]) AS name',
      [objects],
    );
    return rows[0]?.present === true;
  };

  /**
   * The speed-up indexes (speedUpIndexes): on a schema made before them, built CONCURRENTLY, which lets writers go on
   * while they are built, and in the background: a process starting on a large log serves at once (slower reads
   * meanwhile) rather than wait minutes for the build. Reads are the same without them, so a build that fails (another
   * process building it at the same moment) is left for the next start.
   */
  const buildMissingIndexes = async (): Promise<void> => {
    for (const [index, on] of speedUpIndexes(s)) {
      const { rows } = await pool.query<{ present: boolean }>('SELECT to_regclass($1) IS NOT NULL AS present', [`${s}.${index}`]);
      if (rows[0]?.present !== true) await pool.query(createIndex(index, on, true)).catch(() => undefined);
    }
  };

  async function migrate(): Promise<void> {
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
      await client.query(`CREATE INDEX IF NOT EXISTS events_global_order ON ${s}.events (transaction_id, seq)`);
      for (const [index, on] of speedUpIndexes(s)) await client.query(createIndex(index, on, false));
    });
  }

  let ready: Promise<void> | null = null;
  return (): Promise<void> => {
    if (isClosed()) return Promise.reject(new Error('PostgreSQL event store is closed'));
    ready ??= migrate().catch((error: unknown) => {
      // A failed first use (database still starting) must not poison every later call.
      ready = null;
      throw error;
    });
    return ready;
  };
}
