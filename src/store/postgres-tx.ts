/**
 * One transaction on a pooled PostgreSQL client, for the store's schema migrations and its snapshot writes.
 */
import type pg from 'pg';

/** `work` in one transaction on a pooled client: committed if it resolves, rolled back if it throws. */
export const inTransaction = async (pool: pg.Pool, work: (client: pg.PoolClient) => Promise<void>): Promise<void> => {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await work(client);
    await client.query('COMMIT');
  } catch (e) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw e;
  } finally {
    client.release();
  }
};
