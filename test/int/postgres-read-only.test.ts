/**
 * SPEC §5 on PostgreSQL: read-only verbs never create a store. A database where nothing was published has no
 * Estate schema; a read-only verb pointed at it (a typo in --store, the wrong database) must say so and leave it as it
 * was, not answer "no tools" after creating a schema, its tables and indexes there. `check` changes nothing either:
 * it judges against an empty catalogue. A database that does not exist is the same error for every verb (Estate
 * creates its schema, never a database). The URL carries a password: no message may show it.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DomainError } from '#domain/errors';
import { openEventStore } from '#store/open-store';
import { aRawDefinition } from '../fixtures/builders.ts';
import { makeTempStore, runCli, type TempStore } from '../e2e/helpers.ts';
import { requirePostgres, uniqueDatabase } from './pg-helpers.ts';

const url = await requirePostgres('read-only verbs on PostgreSQL');
if (url) {
  describe('read-only verbs never create a store (PostgreSQL)', () => {
    const db = uniqueDatabase(url, 'ro');
    // Trust authentication here takes any password; the point is that none is ever printed.
    const withPassword = (u: string): string => {
      const parsed = new URL(u);
      parsed.password = 'hunter2';
      return parsed.toString();
    };
    const store = withPassword(db.url);
    const shown = store.replace(':hunter2@', ':***@');
    let t: TempStore;

    /** Everything in the database outside the system schemas: what a verb may have created. */
    const created = async (): Promise<string[]> => {
      const client = new pg.Client({ connectionString: db.url });
      await client.connect();
      try {
        const { rows } = await client.query<{ name: string }>(
          `SELECT n.nspname || '.' || coalesce(c.relname, '') AS name FROM pg_namespace n
             LEFT JOIN pg_class c ON c.relnamespace = n.oid
           WHERE n.nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast', 'public') AND n.nspname NOT LIKE 'pg_temp%'
             AND n.nspname NOT LIKE 'pg_toast_temp%'
           ORDER BY 1`,
        );
        return rows.map((r) => r.name);
      } finally {
        await client.end();
      }
    };

    beforeAll(async () => {
      t = makeTempStore('estate-pg-ro-');
      await db.create();
    });
    afterAll(async () => {
      t?.cleanup();
      await db.drop();
    });

    it.each([
      ['list'],
      ['show', 'payments.lookup'],
      ['history', 'payments.lookup'],
      ['calls', 'run-1'],
      ['calls'],
      ['replay', '--at', '1'],
      ['diff', 'payments.lookup@1.0.0', 'payments.lookup@2.0.0'],
      ['upstream', 'list'],
      ['upstream', 'drift'],
      ['watch'],
    ].map((args) => [args.join(' '), args] as const))('%s on a database with no Estate schema: exit 2, one clear line, nothing created', async (_verb, args) => {
      const r = await runCli([...args, '--store', store]);
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr.trim()).toBe(
        `estate: error: no store at ${shown}: the schema "estate" holds no Estate event tables (nothing was created; ` +
          'check --store or ESTATE_STORE, or publish something first)',
      );
      expect(r.stdout).toBe('');
      expect(await created()).toEqual([]);
    });

    it('--json carries the same error with its code', async () => {
      const r = await runCli(['list', '--json', '--store', store]);
      expect(r.code).toBe(2);
      expect(JSON.parse(r.stdout)).toMatchObject({ error: { code: 'no-store', message: expect.stringContaining(shown) } });
      expect(r.stdout + r.stderr).not.toContain('hunter2');
    });

    it('check judges against an empty catalogue and creates nothing', async () => {
      const def = t.file('d.json', aRawDefinition());
      const r = await runCli(['check', def, '--json', '--store', store]);
      expect(r.code, r.stderr).toBe(0);
      expect(JSON.parse(r.stdout)).toMatchObject({ result: 'would-publish', name: 'payments.lookup', version: '1.0.0' });
      expect(await created()).toEqual([]);
    });

    it('the store layer refuses the same way, with the typed error, and creates nothing', async () => {
      const error = await openEventStore(store, { access: 'read' }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(DomainError);
      expect(error).toMatchObject({ kind: 'usage', code: 'no-store' });
      expect(await created()).toEqual([]);
    });

    it('a writing verb creates the schema; then every read-only verb reads it', async () => {
      const def = t.file('p.json', aRawDefinition());
      const published = await runCli(['publish', def, '--store', store]);
      expect(published.code, published.stderr).toBe(0);
      expect(await created()).toContain('estate.events');
      const list = await runCli(['list', '--json', '--store', store]);
      expect(list.code, list.stderr).toBe(0);
      expect(JSON.parse(list.stdout)).toMatchObject({ tools: [{ name: 'payments.lookup', version: '1.0.0' }] });
      const upstreams = await runCli(['upstream', 'list', '--store', store]);
      expect(upstreams.code, upstreams.stderr).toBe(0);
      expect(upstreams.stdout.trim()).toBe('(no upstreams)');
      const check = await runCli(['check', def, '--json', '--store', store]);
      expect(check.code, check.stderr).toBe(0);
      expect(JSON.parse(check.stdout)).toMatchObject({ result: 'unchanged' });
    });

    it('a database that does not exist: exit 2 for reading and writing verbs alike, the password hidden', async () => {
      const missing = new URL(store);
      missing.pathname = `${missing.pathname}_none`;
      const name = missing.pathname.slice(1);
      const def = t.file('m.json', aRawDefinition());
      for (const args of [['list'], ['publish', def]]) {
        const r = await runCli([...args, '--store', missing.toString()]);
        expect(r.code, r.stderr).toBe(2);
        expect(r.stderr.trim()).toBe(
          `estate: error: no store at ${missing.toString().replace(':hunter2@', ':***@')}: database "${name}" does not exist ` +
            '(Estate creates its schema and tables, never a database: create it, or check --store or ESTATE_STORE)',
        );
      }
    });
  });
}
