/** The PostgreSQL event store's DDL: its schema, created once on first use, without stalling running writers. */
import type pg from 'pg';
import { INDEXED_PREFIXES } from './postgres-rows.ts';
import { inTransaction } from './postgres-tx.ts';

/** An indexed kind's own index: its rows in the log's order, so its reads pass over no call record. */
const prefixIndex = (s: string, prefix: string, index: string, concurrently: boolean): string =>
  `CREATE INDEX ${concurrently ? 'CONCURRENTLY ' : ''}IF NOT EXISTS ${index} ON ${s}.events (transaction_id, seq) WHERE starts_with(stream_id, '${prefix}')`;

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
   * The indexed kinds' own indexes (postgres-rows.ts, INDEXED_PREFIXES): on a schema made before them, built
   * CONCURRENTLY, which lets writers go on while they are built, and in the background: a process starting on a large
   * log serves at once (slower reads meanwhile) rather than wait minutes for the build. Only a speed-up: reads are the
   * same without them, so a build that fails (another process building it at the same moment) is left for the next start.
   */
  const prefixIndexes = async (): Promise<void> => {
    for (const [prefix, index] of Object.entries(INDEXED_PREFIXES)) {
      const { rows } = await pool.query<{ present: boolean }>('SELECT to_regclass($1) IS NOT NULL AS present', [`${s}.${index}`]);
      if (rows[0]?.present !== true) await pool.query(prefixIndex(s, prefix, index, true)).catch(() => undefined);
    }
  };

  async function migrate(): Promise<void> {
    // Checked first because even CREATE INDEX IF NOT EXISTS takes a lock that waits for every open writer, and every
    // later writer would queue behind it: a second process starting up must not stall the ones already running.
    if (await schemaPresent(pool)) {
      void prefixIndexes().catch(() => undefined);
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
      for (const [prefix, index] of Object.entries(INDEXED_PREFIXES)) await client.query(prefixIndex(s, prefix, index, false));
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
