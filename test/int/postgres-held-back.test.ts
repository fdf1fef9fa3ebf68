/**
 * The PostgreSQL store reads its log only up to the oldest write transaction open in the cluster (a later commit of
 * it must not be skipped), so one long transaction anywhere, even another application's, holds back every reader and
 * the relay. `heldBack()` and the two `/metrics` gauges fed by it say so: how many committed events wait, and since
 * when, and a third names the transaction; `estate watch` says it on stderr. This file holds transactions open on
 * purpose: it runs with the files that do (vitest.config.ts).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { EventStore } from '#app/ports';
import { createMetrics, type EstateMetrics } from '#ops/metrics';
import { createPostgresEventStore } from '#store/postgres-event-store';
import { runCli, startHttpServer, toolDefinition, type HttpServer } from '../e2e/helpers.ts';
import { startWatch, type Watcher } from '../e2e/watch-helpers.ts';
import { dropSchema, requirePostgres, uniqueDatabase, uniqueSchema } from './pg-helpers.ts';

const url = await requirePostgres('events held back on PostgreSQL');
if (url) {
  describe('events held back behind an open transaction (PostgreSQL)', () => {
    const schema = uniqueSchema('held');
    let store: EventStore;
    // Any client may name itself anything; the name reaches a metric's label, so it carries a quote and a backslash.
    const application = 'held-back "probe" \\ x';
    const other = new pg.Client({ connectionString: url, application_name: application });
    beforeAll(async () => {
      store = await createPostgresEventStore({ connectionString: url, schema });
    });
    afterAll(async () => {
      await other.end().catch(() => undefined);
      await store?.close();
      await dropSchema(url, schema);
    });

    let metrics: EstateMetrics | undefined;
    const scrape = async (): Promise<{ events: number; seconds: number; heldBy: string[] }> => {
      // One registry for every scrape, as a serving process has: a holder gone must leave no series behind.
      metrics ??= createMetrics({ catalogue: () => ({ size: 0, position: null }), heldBack: () => store.heldBack!() });
      const body = (await metrics.render()).body;
      const value = (name: string): number => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(body)?.[1] ?? NaN);
      const heldBy = body.split('\n').filter((l) => l.startsWith('estate_store_held_by_seconds{'));
      return { events: value('estate_store_held_events'), seconds: value('estate_store_held_seconds'), heldBy };
    };

    it('counts the committed events a read does not return while another transaction is open, and 0 once it ends', async () => {
      await store.append('tool-before', [{ type: 'A', data: {} }], { expectedRevision: 'no_stream' });
      await vi.waitFor(async () => expect(await store.heldBack!()).toEqual({ events: 0, oldestSeconds: 0 }), { timeout: 30_000 });
      expect(await scrape()).toEqual({ events: 0, seconds: 0, heldBy: [] });

      // Another connection, another database object even: it has written (it holds a transaction id) and not ended.
      await other.connect();
      const { rows } = await other.query<{ pid: number; db: string; usr: string }>('SELECT pg_backend_pid() AS pid, current_database() AS db, current_user AS usr');
      const { pid, db, usr } = rows[0]!;
      await other.query('BEGIN');
      await other.query('SELECT pg_current_xact_id()');
      try {
        await store.append('tool-held', [{ type: 'B', data: {} }, { type: 'C', data: {} }], { expectedRevision: 'no_stream' });
        expect((await store.readAll()).map((e) => e.type)).toEqual(['A']);
        const held = await store.heldBack!();
        expect(held.events).toBe(2);
        expect(held.oldestSeconds).toBeGreaterThanOrEqual(0);
        // The holder is named: the session above (the test's role may read its own sessions' state and start).
        expect(held.holder).toMatchObject({ pid, database: db, user: usr, application, state: 'idle in transaction' });
        expect(held.holder?.seconds).toBeGreaterThanOrEqual(held.oldestSeconds);
        const scraped = await scrape();
        expect(scraped.events).toBe(2);
        expect(scraped.seconds).toBeGreaterThanOrEqual(held.oldestSeconds);
        expect(scraped.heldBy).toHaveLength(1);
        const line = scraped.heldBy[0]!;
        expect(line).toContain(`pid="${pid}"`);
        expect(line).toContain(`database="${db}",user="${usr}"`);
        // Escaped as the exposition format wants: the label cannot end early or forge another.
        expect(line).toContain('application="held-back \\"probe\\" \\\\ x"');
        expect(Number(line.split(' ').at(-1))).toBeGreaterThanOrEqual(held.oldestSeconds);
      } finally {
        await other.query('COMMIT');
      }
      await vi.waitFor(async () => expect(await store.heldBack!()).toEqual({ events: 0, oldestSeconds: 0 }), { timeout: 30_000 });
      expect((await scrape()).heldBy).toEqual([]);
      expect((await store.readAll()).map((e) => e.type)).toEqual(['A', 'B', 'C']);
    });
  });

  describe('estate watch on PostgreSQL says who holds the log back', () => {
    // A database of its own: the CLI's store uses the default schema.
    const db = uniqueDatabase(url, 'held');
    const storeUrl = db.url;
    const dir = mkdtempSync(join(tmpdir(), 'estate-held-'));
    const publish = async (name: string): Promise<void> => {
      const file = join(dir, `${name}.json`);
      writeFileSync(file, JSON.stringify(toolDefinition({ name })));
      const out = await runCli(['publish', file, '--store', storeUrl]);
      expect(out.code, out.stderr).toBe(0);
    };
    let watcher: Watcher | undefined;
    let server: HttpServer | undefined;
    const holder = new pg.Client({ connectionString: url, application_name: 'held-back-watch-probe' });
    beforeAll(async () => {
      await db.create();
    });
    afterAll(async () => {
      await watcher?.stop();
      await server?.stop();
      await holder.end().catch(() => undefined);
      await db.drop();
      rmSync(dir, { recursive: true, force: true });
    });

    it('names the open transaction (estate watch on stderr, a serving process in its log) once changes have waited 5 s, and says when it ends', async () => {
      await publish('test.held-first');
      server = await startHttpServer(['--store', storeUrl]);
      watcher = await startWatch(['--store', storeUrl]);
      await holder.connect();
      const pid = (await holder.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
      await holder.query('BEGIN');
      await holder.query('SELECT pg_current_xact_id()');
      try {
        await publish('test.held-behind');
        const w = watcher;
        await vi.waitFor(() => expect(w.stderr()).toContain(`the session with pid ${pid} (`), { timeout: 30_000, interval: 200 });
        expect(w.stderr()).toMatch(/estate watch: 1 committed event has waited \d+ s behind an open transaction: .*application "held-back-watch-probe", idle in transaction/);
        expect(w.changes.seen).toEqual([]);
        const warned = await server.logs.next((l) => l.level === 40 && (l.holder as { pid?: number } | undefined)?.pid === pid, 30_000, 'the held-back warning');
        expect(warned).toMatchObject({ events: expect.any(Number), seconds: expect.any(Number), holder: { pid, application: 'held-back-watch-probe' } });
        expect(String(warned.msg)).toContain(`the session with pid ${pid} (`);
      } finally {
        await holder.query('COMMIT');
      }
      expect(await watcher.changes.next(() => true, 30_000, 'the change held back')).toMatchObject({ tool: 'test.held-behind' });
      const w = watcher;
      await vi.waitFor(() => expect(w.stderr()).toContain('estate watch: no committed event waits behind an open transaction any more'), { timeout: 30_000, interval: 200 });
      await server.logs.next((l) => typeof l.msg === 'string' && l.msg.startsWith('no committed event waits behind an open transaction'), 30_000, 'the release line');
    }, 120_000);
  });
}
