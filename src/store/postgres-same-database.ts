/**
 * Whether two PostgreSQL URLs reach one database however they are spelt (`127.0.0.1:5432` or `localhost`, the default
 * port written or not, another user or parameter): `estate copy` must not copy a store into itself.
 *
 * Asked of the server, not read from the URLs, which cannot tell a name, a port mapping or a pooler from another
 * server. A transaction on the first URL takes a transaction-scoped advisory lock on a random key, and the second URL
 * tries to take the same one: advisory locks belong to one database of one running server, so the second is refused
 * only when both reach that database. It needs no privilege (the advisory lock functions are PUBLIC), never waits,
 * works on a read-only connection, and takes no transaction id, so no reader of either store is held back.
 * Comparing `pg_control_system()`'s system_identifier and `current_database()` was the other way: a server restored
 * from another's base backup (a staging copy of production) shares both, and two stores would be taken for one.
 */
import { randomInt } from 'node:crypto';
import type { Client } from 'pg';

/** The database's name when both URLs reach it; undefined when they reach two, or when it cannot be told. */
export const samePostgresDatabase = async (a: string, b: string): Promise<string | undefined> => {
  const pg = (await import('pg')).default;
  const key = [randomInt(-(2 ** 31), 2 ** 31), randomInt(-(2 ** 31), 2 ** 31)];
  const clients = [a, b].map((connectionString) => {
    const client = new pg.Client({ connectionString, connectionTimeoutMillis: 10_000 });
    client.on('error', () => undefined);
    return client;
  });
  const [first, second] = clients as [Client, Client];
  try {
    await Promise.all(clients.map((c) => c.connect()));
    await first.query('BEGIN');
    const held = await first.query<{ taken: boolean }>('SELECT pg_try_advisory_xact_lock($1, $2) AS taken', key);
    // Someone else's lock on this very key (one chance in 2^64): nothing can be told from it.
    if (held.rows[0]?.taken !== true) return undefined;
    // Autocommitted: when the second connection takes the lock, it is another database, and the lock goes at once.
    const tried = await second.query<{ taken: boolean; name: string }>(
      'SELECT pg_try_advisory_xact_lock($1, $2) AS taken, current_database() AS name',
      key,
    );
    const row = tried.rows[0];
    return row?.taken === false ? row.name : undefined;
  } catch {
    // Not told (a pooler that allows no transaction, a server gone): the copy goes on and meets what it meets.
    return undefined;
  } finally {
    await first.query('ROLLBACK').catch(() => undefined);
    await Promise.all(clients.map((c) => c.end().catch(() => undefined)));
  }
};
