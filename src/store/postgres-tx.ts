/**
 * One transaction on a pooled PostgreSQL client: the store's appends, its schema migrations and its snapshot writes.
 */
import type pg from 'pg';

/** `work` in one transaction on a pooled client: committed if it resolves, rolled back if it throws. */
export const inTransaction = async <T>(pool: pg.Pool, work: (client: pg.PoolClient) => Promise<T>): Promise<T> => {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const result = await work(client);
    await client.query('COMMIT');
    return result;
  } catch (e) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw e;
  } finally {
    client.release();
  }
};
