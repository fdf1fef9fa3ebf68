/** The PostgreSQL event store's DDL: its schema, created once on first use, without stalling running writers. */
import type pg from 'pg';
import { inTransaction } from './postgres-tx.ts';

/** The catalogue's streams' own index: their rows in the log's order, so a catalogue read passes over no call record. */
export const CATALOGUE_INDEX = 'events_catalogue_order';
const CATALOGUE_INDEX_KEY = `(transaction_id, seq) WHERE starts_with(stream_id, 'tool-')`;

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
   * The catalogue's own index (postgres-read.ts, CATALOGUE_PREFIX): on a schema made before it, built CONCURRENTLY,
   * which lets writers go on while it is built. Only a speed-up: reads are the same without it, so a build that fails
   * (another process building it at the same moment) is left for the next start.
   */
  const catalogueIndex = async (): Promise<void> => {
    const { rows } = await pool.query<{ present: boolean }>('SELECT to_regclass($1) IS NOT NULL AS present', [`${s}.${CATALOGUE_INDEX}`]);
    if (rows[0]?.present === true) return;
    await pool.query(`CREATE INDEX CONCURRENTLY IF NOT EXISTS ${CATALOGUE_INDEX} ON ${s}.events ${CATALOGUE_INDEX_KEY}`).catch(() => undefined);
  };

  async function migrate(): Promise<void> {
    // Checked first because even CREATE INDEX IF NOT EXISTS takes a lock that waits for every open writer, and every
    // later writer would queue behind it: a second process starting up must not stall the ones already running.
    if (await schemaPresent(pool)) return catalogueIndex();
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
      await client.query(`CREATE INDEX IF NOT EXISTS ${CATALOGUE_INDEX} ON ${s}.events ${CATALOGUE_INDEX_KEY}`);
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
