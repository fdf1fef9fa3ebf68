/**
 * Shared by every test that needs the real PostgreSQL (`npm run services:up` starts it). The rule (DESIGN.md): a
 * test that cannot reach its server FAILS when CI=true and is skipped with a loud reason anywhere else.
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { beforeAll, describe, it } from 'vitest';

export const DEFAULT_TEST_PG = 'postgres://postgres@127.0.0.1:5432/estate_test';

export const testPgUrl = (): string => process.env.ESTATE_TEST_PG ?? DEFAULT_TEST_PG;

/** null when a query answers; otherwise why not. */
export async function probePostgres(url: string): Promise<string | null> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 });
  try {
    await client.connect();
    await client.query('SELECT 1');
    return null;
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  } finally {
    await client.end().catch(() => undefined);
  }
}

/**
 * Resolves to the URL when PostgreSQL answers. When it does not, registers a suite that fails (CI) or is skipped with
 * a warning (elsewhere) under `label`, and resolves to null: the caller then registers nothing else.
 */
export async function requirePostgres(label: string): Promise<string | null> {
  const url = testPgUrl();
  const problem = await probePostgres(url);
  if (problem === null) return url;
  const message = `PostgreSQL not reachable at ${url} (${problem}): `;
  if (process.env.CI === 'true') {
    describe(label, () => {
      beforeAll(() => {
        throw new Error(`${message}CI needs it; start it with npm run services:up`);
      });
      it('needs PostgreSQL', () => undefined);
    });
  } else {
    console.warn(`\n*** ${message}skipping ${label}; run npm run services:up ***\n`);
    describe.skip(label, () => {
      it('needs PostgreSQL', () => undefined);
    });
  }
  return null;
}

/** A schema name no other run uses, so a test run never sees another's tables. */
export const uniqueSchema = (purpose: string): string => `${purpose}_${randomUUID().replaceAll('-', '').slice(0, 12)}`;

export async function dropSchema(url: string, schema: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  } finally {
    await client.end();
  }
}

/** One statement on its own connection (DDL a test needs around it: CREATE DATABASE cannot run in a pool's transaction). */
export async function adminQuery(url: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/**
 * A database no other run uses, for processes whose store takes the default schema (`estate serve`, the CLI): its
 * URL, `create()` and `drop()` (forcing out any session still connected).
 */
export const uniqueDatabase = (url: string, purpose: string): { url: string; create(): Promise<void>; drop(): Promise<void> } => {
  const name = `estate_${purpose}_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
  const u = new URL(url);
  u.pathname = `/${name}`;
  return {
    url: u.toString(),
    create: () => adminQuery(url, `CREATE DATABASE ${name}`),
    drop: () => adminQuery(url, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`),
  };
};
