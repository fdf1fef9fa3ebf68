/**
 * `estate copy` against the real engines (SPEC §9): 10,000 events and call records from SQLite to PostgreSQL and
 * back with equal projections; a copy SIGKILLed in the middle of a commit and resumed, with no duplicate and no gap;
 * refusal of a non-empty target, of one database spelt two ways, of a NUL PostgreSQL cannot store; a missing store
 * named by its flag. Each test works in a database of its own.
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import Database from 'better-sqlite3';
import pg from 'pg';
import { samePostgresDatabase } from '#store/postgres-same-database';
import { createSqliteEventStore } from '#store/sqlite-event-store';
import { seedHistory } from '../fixtures/estate-history.ts';
import { ESTATE_BIN, makeTempStore, REPO_ROOT, runCli, type TempStore } from '../e2e/helpers.ts';
import { requirePostgres } from './pg-helpers.ts';

const EVENTS = 10_000;
const pgUrl = await requirePostgres('estate copy with PostgreSQL');

if (pgUrl) {
  const databases: string[] = [];
  let temp: TempStore;

  const admin = async <T extends pg.QueryResultRow>(sql: string, url = pgUrl): Promise<T[]> => {
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    try {
      return (await c.query<T>(sql)).rows;
    } finally {
      await c.end();
    }
  };
  const freshDatabase = async (): Promise<string> => {
    const name = `estate_copy_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
    await admin(`CREATE DATABASE ${name}`);
    databases.push(name);
    const u = new URL(pgUrl);
    u.pathname = `/${name}`;
    return u.toString();
  };
  const countIn = async (url: string): Promise<number> => {
    const [row] = await admin<{ n: string }>("SELECT CASE WHEN to_regclass('estate.events') IS NULL THEN 0 ELSE (SELECT count(*) FROM estate.events) END AS n", url);
    return Number(row!.n);
  };

  beforeAll(async () => {
    temp = makeTempStore('estate-copy-pg-');
    const store = createSqliteEventStore({ path: `${temp.dir}/e.db` });
    await seedHistory(store, EVENTS);
    await store.close();
  }, 120_000);

  afterAll(async () => {
    for (const d of databases) await admin(`DROP DATABASE IF EXISTS ${d} WITH (FORCE)`);
    temp?.cleanup();
  });

  interface CopyJson {
    result: string;
    copied: number;
    resumedAfter: number;
    differences: string[];
    source: { events: number; logDigest: string; projections: Record<string, string>; sizes: Record<string, number> };
    target: { events: number; logDigest: string; projections: Record<string, string> };
  }

  it('copies 10,000 events from SQLite to PostgreSQL and back, with progress, and equal projections on every side', async () => {
    const pgStore = await freshDatabase();
    const there = await runCli(['copy', '--from', temp.store, '--to', pgStore, '--json'], { timeoutMs: 120_000 });
    expect(there.code, there.stderr).toBe(0);
    expect(there.stderr).toMatch(/estate copy: \d+ events copied/);
    expect(there.stderr).toContain(`estate copy: ${EVENTS} events copied`);
    const out = JSON.parse(there.stdout) as CopyJson;
    expect(out).toMatchObject({ result: 'copied', copied: EVENTS, resumedAfter: 0, differences: [] });
    expect(out.source.sizes).toEqual({ tools: 40, runs: expect.any(Number), upstreams: 1 });
    expect(await countIn(pgStore)).toBe(EVENTS);

    const back = `sqlite:${temp.dir}/back.db`;
    const again = await runCli(['copy', '--from', pgStore, '--to', back, '--json'], { timeoutMs: 120_000 });
    expect(again.code, again.stderr).toBe(0);
    const out2 = JSON.parse(again.stdout) as CopyJson;
    expect(out2.differences).toEqual([]);
    expect(out2.target.logDigest).toBe(out.source.logDigest);
    expect(out2.target.projections).toEqual(out.source.projections);

    // The copied estate answers like the original: the same run listing from each store.
    const runsHere = await runCli(['calls', '--json', '--limit', '5', '--store', temp.store]);
    const runsThere = await runCli(['calls', '--json', '--limit', '5', '--store', pgStore]);
    expect(runsThere.code, runsThere.stderr).toBe(0);
    expect(JSON.parse(runsThere.stdout)).toEqual(JSON.parse(runsHere.stdout));
  }, 300_000);

  it('refuses a non-empty target and changes nothing in it', async () => {
    const pgStore = await freshDatabase();
    const first = await runCli(['publish', temp.file('t.json', { name: 'other.tool', version: '1.0.0', description: 'x', inputSchema: { type: 'object' }, access: { requiredScopes: [], tenants: [], classification: 'public' }, sideEffect: 'none', handler: 'other.h' }), '--store', pgStore]);
    expect(first.code, first.stderr).toBe(0);
    const refused = await runCli(['copy', '--from', temp.store, '--to', pgStore]);
    expect(refused.code).toBe(3);
    expect(refused.stderr).toMatch(/^estate: refused: copy: the target store already holds events.*--resume/m);
    expect(await countIn(pgStore)).toBe(1);
  }, 60_000);

  it('names the side of a database that does not exist or holds no store, by its flag, its password hidden', async () => {
    const empty = await freshDatabase();
    const missing = new URL(pgUrl);
    missing.pathname = `/estate_copy_missing_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
    missing.password = 'secret';
    const shown = missing.toString().replace(':secret@', ':***@');
    const database = missing.pathname.slice(1);
    // Before: "no store at ...: ... (... check --store or ESTATE_STORE)": a flag copy does not take, and not which side.
    const to = await runCli(['copy', '--from', temp.store, '--to', missing.toString()]);
    expect([to.code, to.stderr.trim()]).toEqual([
      2,
      `estate: error: copy: --to: no store at ${shown}: database "${database}" does not exist ` +
        '(Estate creates its schema and tables, never a database: create it, or check --to)',
    ]);
    const from = await runCli(['copy', '--from', empty, '--to', `sqlite:${temp.dir}/never.db`]);
    expect([from.code, from.stderr.trim()]).toEqual([
      2,
      `estate: error: copy: --from: no store at ${empty}: the schema "estate" holds no Estate event tables ` +
        '(nothing was created; check --from, or publish something first)',
    ]);
    expect(existsSync(`${temp.dir}/never.db`)).toBe(false);
    // Read-only: not even the schema was made in the empty database.
    expect(await admin("SELECT to_regnamespace('estate') AS schema", empty)).toEqual([{ schema: null }]);
  }, 60_000);

  it('refuses a NUL in a stream id by name before PostgreSQL sees its batch, keeps what came before, and resumes', async () => {
    const file = `${temp.dir}/nul.db`;
    const source = createSqliteEventStore({ path: file });
    await source.append('a', [0, 1, 2, 3].map((i) => ({ type: 'Note', data: { i } })), { expectedRevision: 'no_stream' });
    await source.append('b', [0, 1].map((i) => ({ type: 'Note', data: { i } })), { expectedRevision: 'no_stream' });
    await source.close();
    const raw = (sql: string): void => {
      const db = new Database(file);
      db.exec(sql);
      db.close();
    };
    raw("UPDATE events SET stream_id = 'b' || char(0) WHERE stream_id = 'b'");
    const pgStore = await freshDatabase();
    // Before: exit 1, 'invalid byte sequence for encoding "UTF8": 0x00', PostgreSQL's words naming no event.
    const refused = await runCli(['copy', '--from', `sqlite:${file}`, '--to', pgStore, '--batch-size', '2']);
    expect([refused.code, refused.stderr.split('\n').at(-2)]).toEqual([
      3,
      'estate: refused: copy: the source\'s event "b\\u0000"@0 ("Note", source position 5) has a NUL character in its stream id, ' +
        'which Estate never writes and PostgreSQL cannot store; nothing of this batch was written (correct the source, then --resume)',
    ]);
    expect(await countIn(pgStore)).toBe(4);
    raw("UPDATE events SET stream_id = 'b' WHERE position > 4");
    const resumed = await runCli(['copy', '--from', `sqlite:${file}`, '--to', pgStore, '--resume', '--json']);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(JSON.parse(resumed.stdout)).toMatchObject({ result: 'copied', resumedAfter: 4, copied: 6, differences: [] });
  }, 60_000);

  it('copies a NUL inside event data to PostgreSQL and back unchanged (its json column keeps the escape)', async () => {
    const file = `${temp.dir}/nul-data.db`;
    const source = createSqliteEventStore({ path: file });
    await source.append('a', [{ type: 'Note', data: { text: 'x\u0000y', ['k\u0000']: [1, '\u0000'] } }], { expectedRevision: 'no_stream' });
    await source.close();
    const pgStore = await freshDatabase();
    const there = await runCli(['copy', '--from', `sqlite:${file}`, '--to', pgStore, '--json']);
    expect(there.code, there.stderr).toBe(0);
    const back = await runCli(['copy', '--from', pgStore, '--to', `sqlite:${temp.dir}/nul-data-back.db`, '--json']);
    expect(back.code, back.stderr).toBe(0);
    const [a, b] = [there, back].map((r) => JSON.parse(r.stdout) as CopyJson);
    expect(b!.target.logDigest).toBe(a!.source.logDigest);
    const copied = createSqliteEventStore({ path: `${temp.dir}/nul-data-back.db` });
    expect((await copied.readAll()).map((e) => e.data)).toEqual([{ text: 'x\u0000y', ['k\u0000']: [1, '\u0000'] }]);
    await copied.close();
  }, 60_000);

  it('knows one PostgreSQL database by two spellings for the same store, and two databases of one server apart', async () => {
    const file = `${temp.dir}/small.db`;
    const source = createSqliteEventStore({ path: file });
    await source.append('a', [0, 1, 2].map((i) => ({ type: 'Note', data: { i } })), { expectedRevision: 'no_stream' });
    await source.close();
    const one = await freshDatabase();
    expect((await runCli(['copy', '--from', `sqlite:${file}`, '--to', one])).code).toBe(0);
    const u = new URL(one);
    const name = u.pathname.slice(1);
    const spelt = [
      `postgres://${u.username}@localhost${u.port === '5432' ? '' : `:${u.port}`}/${name}`,
      `postgresql://${u.username}@${u.hostname}:${u.port || '5432'}/${name}?application_name=another`,
    ];
    // Before: "the target store already holds events" (exit 3), and with --resume "copied", exit 0: into itself.
    for (const to of spelt) {
      for (const extra of [[], ['--resume']]) {
        const r = await runCli(['copy', '--from', one, '--to', to, ...extra]);
        expect([r.code, r.stderr.trim()], `${to} ${extra.join(' ')}`).toEqual([2, `estate: error: copy: --from and --to name the same store (PostgreSQL database "${name}" on one server)`]);
      }
    }
    expect(await countIn(one)).toBe(3);

    // The question needs no privilege (a role that may only log in asks it too), and what cannot be told is no answer.
    const role = `estate_copy_plain_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
    await admin(`CREATE ROLE ${role} LOGIN`);
    try {
      const plain = new URL(one);
      plain.username = role;
      expect(await samePostgresDatabase(one, plain.toString())).toBe(name);
    } finally {
      await admin(`DROP ROLE ${role}`);
    }
    expect(await samePostgresDatabase(one, 'postgres://postgres@127.0.0.1:1/x')).toBeUndefined();
    const locks = "SELECT * FROM pg_locks WHERE locktype = 'advisory' AND database = (SELECT oid FROM pg_database WHERE datname = current_database())";
    expect(await admin(locks, one)).toEqual([]);

    // Another database of the same server, spelt the same other way: a copy like any other.
    const other = new URL(await freshDatabase());
    other.hostname = 'localhost';
    const r = await runCli(['copy', '--from', one, '--to', other.toString(), '--json']);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ result: 'copied', copied: 3 });
  }, 60_000);

  it('resumes a copy SIGKILLed in the middle of a commit: no duplicate, no gap, equal projections', async () => {
    const pgStore = await freshDatabase();
    const child = spawn(process.execPath, [ESTATE_BIN, 'copy', '--from', temp.store, '--to', pgStore, '--batch-size', '100'], {
      cwd: REPO_ROOT,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const exited = new Promise<NodeJS.Signals | null>((resolve) => child.on('exit', (_code, signal) => resolve(signal)));

    // Let it copy a few batches, then hold every insert into the events table: its next commit waits on our lock.
    await vi.waitFor(async () => expect(await countIn(pgStore)).toBeGreaterThanOrEqual(1_000), { timeout: 60_000, interval: 20 });
    const locker = new pg.Client({ connectionString: pgStore });
    await locker.connect();
    await locker.query('BEGIN');
    await locker.query('LOCK TABLE estate.events IN EXCLUSIVE MODE');
    await vi.waitFor(
      async () => {
        const [w] = await admin<{ n: string }>("SELECT count(*) AS n FROM pg_locks WHERE NOT granted AND relation = 'estate.events'::regclass", pgStore);
        expect(Number(w!.n)).toBeGreaterThan(0);
      },
      { timeout: 30_000, interval: 20 },
    );
    child.kill('SIGKILL');
    expect(await exited).toBe('SIGKILL');
    await locker.query('ROLLBACK');
    await locker.end();
    // The killed copy's server-side session outlives it until its waiting statement has run: a batch that is one
    // statement may still commit once the lock is gone. Count only when that session has ended, whichever way.
    await vi.waitFor(
      async () => {
        const [b] = await admin<{ n: string }>('SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()', pgStore);
        expect(Number(b!.n)).toBe(0);
      },
      { timeout: 30_000, interval: 20 },
    );

    // Batches are single commits: the killed one committed whole or not at all, so the target holds whole batches only.
    const partial = await countIn(pgStore);
    expect(partial).toBeGreaterThanOrEqual(1_000);
    expect(partial).toBeLessThan(EVENTS);
    expect(partial % 100).toBe(0);
    expect(stderr).toMatch(/events copied/);

    const resumed = await runCli(['copy', '--from', temp.store, '--to', pgStore, '--resume', '--json'], { timeoutMs: 120_000 });
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(JSON.parse(resumed.stdout)).toMatchObject({ result: 'copied', resumedAfter: partial, copied: EVENTS, differences: [] });
    expect(await countIn(pgStore)).toBe(EVENTS);
    const dupes = await admin<{ n: string }>('SELECT count(*) AS n FROM (SELECT stream_id, revision FROM estate.events GROUP BY 1, 2 HAVING count(*) > 1) d', pgStore);
    expect(Number(dupes[0]!.n)).toBe(0);
  }, 300_000);
}
