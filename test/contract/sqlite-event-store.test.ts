import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { CatalogueReader } from '#app/catalogue-reader';
import { CommandHandler } from '#app/command-handler';
import { replayAsOf } from '#app/replay';
import type { EventStore } from '#app/ports';
import { createSqliteEventStore } from '#store/sqlite-event-store';
import type { CatalogueProjection } from '#projections/catalogue';
import { aDefinition } from '../fixtures/builders.ts';
import { eventStoreContract } from './event-store-contract.ts';

eventStoreContract('sqlite', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'estate-sqlite-contract-'));
  const path = join(dir, 'events.db');
  const store = createSqliteEventStore({ path, pollIntervalMs: 20 });
  return {
    store,
    // A second instance has its own connection, as another process would.
    connectAgain: async () => createSqliteEventStore({ path, pollIntervalMs: 20 }),
    cleanup: async () => {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});

describe('SqliteEventStore specifics', () => {
  const dirs: string[] = [];
  const stores: EventStore[] = [];
  const tempDir = (): string => {
    const dir = mkdtempSync(join(tmpdir(), 'estate-sqlite-'));
    dirs.push(dir);
    return dir;
  };

  afterEach(async () => {
    for (const s of stores.splice(0)) await s.close();
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  it('creates the file and its missing directories, in WAL mode with full sync and the documented schema', async () => {
    const path = join(tempDir(), 'nested', 'deeper', 'estate.db');
    const store = createSqliteEventStore({ path });
    stores.push(store);
    await store.append('tool-x', [{ type: 'T', data: { a: 1 } }], { expectedRevision: 'no_stream' });
    expect(existsSync(path)).toBe(true);
    // synchronous is a per-connection setting: asked of the store's own connection. FULL (2) makes a call record
    // durable before its result is returned (SPEC §4); NORMAL (1) in WAL mode may lose the last commits on power loss.
    expect(store.durability()).toEqual({ journalMode: 'wal', synchronous: 2 });

    const raw = new Database(path, { readonly: true });
    try {
      expect(raw.pragma('journal_mode', { simple: true })).toBe('wal');
      const columns = raw.prepare("SELECT name FROM pragma_table_info('events') ORDER BY cid").pluck().all();
      expect(columns).toEqual(['position', 'stream_id', 'revision', 'type', 'data', 'recorded_at']);
      const row = raw.prepare('SELECT position, data FROM events').get() as { position: number; data: string };
      expect(row.position).toBe(1);
      expect(JSON.parse(row.data)).toEqual({ a: 1 });
    } finally {
      raw.close();
    }
  });

  it('keeps everything across a close and reopen, and positions keep growing', async () => {
    const path = join(tempDir(), 'estate.db');
    const first = createSqliteEventStore({ path });
    const { positions: before } = await first.append('tool-a', [{ type: 'A', data: 1 }], { expectedRevision: 'no_stream' });
    await first.close();

    const second = createSqliteEventStore({ path });
    stores.push(second);
    expect((await second.readStream('tool-a')).map((e) => e.data)).toEqual([1]);
    const { positions: after } = await second.append('tool-a', [{ type: 'B', data: 2 }], { expectedRevision: 0 });
    expect(before).toEqual(['1']);
    expect(after).toEqual(['2']);
  });

  it('commits no sequence table (one page less per commit), and a store created with AUTOINCREMENT works the same', async () => {
    const path = join(tempDir(), 'estate.db');
    const store = createSqliteEventStore({ path });
    stores.push(store);
    await store.append('run-a', [{ type: 'A', data: 1 }, { type: 'A', data: 2 }], { expectedRevision: 'any' });
    const raw = new Database(path, { readonly: true });
    try {
      expect(raw.prepare("SELECT COUNT(*) FROM sqlite_master WHERE name = 'sqlite_sequence'").pluck().get()).toBe(0);
    } finally {
      raw.close();
    }

    // An older Estate's store: its AUTOINCREMENT stays, positions go on from its last one.
    const oldPath = join(tempDir(), 'old.db');
    const old = new Database(oldPath);
    old.pragma('journal_mode = WAL');
    old.exec(`CREATE TABLE events (position INTEGER PRIMARY KEY AUTOINCREMENT, stream_id TEXT NOT NULL, revision INTEGER NOT NULL,
      type TEXT NOT NULL, data TEXT NOT NULL, recorded_at TEXT NOT NULL, UNIQUE (stream_id, revision))`);
    old.prepare('INSERT INTO events (stream_id, revision, type, data, recorded_at) VALUES (?, ?, ?, ?, ?)').run('tool-a', 0, 'A', '1', new Date().toISOString());
    old.close();
    const reopened = createSqliteEventStore({ path: oldPath });
    stores.push(reopened);
    expect((await reopened.append('tool-a', [{ type: 'B', data: 2 }], { expectedRevision: 0 })).positions).toEqual(['2']);
    expect((await reopened.readStream('tool-a')).map((e) => e.data)).toEqual([1, 2]);
  });

  it('reads the catalogue by an index of its own, which a store made before it gets when opened', async () => {
    const oldPath = join(tempDir(), 'before-index.db');
    const old = new Database(oldPath);
    old.pragma('journal_mode = WAL');
    old.exec(`CREATE TABLE events (position INTEGER PRIMARY KEY, stream_id TEXT NOT NULL, revision INTEGER NOT NULL,
      type TEXT NOT NULL, data TEXT NOT NULL, recorded_at TEXT NOT NULL, UNIQUE (stream_id, revision))`);
    const insert = old.prepare('INSERT INTO events (stream_id, revision, type, data, recorded_at) VALUES (?, ?, ?, ?, ?)');
    insert.run('tool-a', 0, 'A', '1', new Date().toISOString());
    for (let i = 0; i < 50; i++) insert.run(`run-r${i}`, 0, 'ToolCalled', '{}', new Date().toISOString());
    insert.run('tool_b', 0, 'B', '2', new Date().toISOString()); // `_` is not a wildcard: not the catalogue's
    insert.run('tool-a', 1, 'A', '3', new Date().toISOString());
    old.close();
    const store = createSqliteEventStore({ path: oldPath });
    stores.push(store);
    const raw = new Database(oldPath, { readonly: true });
    try {
      expect(raw.prepare("SELECT sql FROM sqlite_master WHERE name = 'events_catalogue'").pluck().get()).toMatch(/WHERE substr\(stream_id, 1, 5\) = 'tool-'/);
      expect(raw.prepare("SELECT sql FROM sqlite_master WHERE name = 'events_upstreams'").pluck().get()).toMatch(/WHERE substr\(stream_id, 1, 9\) = 'upstream-'/);
    } finally {
      raw.close();
    }
    const [first] = await store.readAll({ streamPrefix: 'tool-' });
    expect((await store.readAll({ streamPrefix: 'tool-' })).map((e) => [e.position, e.data])).toEqual([['1', 1], ['53', 3]]);
    expect((await store.readAll({ streamPrefix: 'tool-', after: first!.position })).map((e) => e.data)).toEqual([3]);
    expect((await store.readAll({ streamPrefix: 'tool_' })).map((e) => e.data)).toEqual([2]);
    const scannedAll: unknown[] = [];
    for await (const page of store.scan!({ streamPrefix: 'tool-' })) scannedAll.push(...page.map((e) => e.data));
    expect(scannedAll).toEqual([1, 3]);
  });

  it('a subscription finds rows committed by a writer it is never told about, by polling', async () => {
    const path = join(tempDir(), 'estate.db');
    const store = createSqliteEventStore({ path, pollIntervalMs: 20 });
    stores.push(store);
    const seen: string[] = [];
    const subscription = store.subscribe({ onEvents: (batch) => void seen.push(...batch.map((e) => e.type)) });
    try {
      const foreign = new Database(path);
      try {
        foreign
          .prepare('INSERT INTO events (stream_id, revision, type, data, recorded_at) VALUES (?, ?, ?, ?, ?)')
          .run('tool-foreign', 0, 'Foreign', '{}', new Date().toISOString());
      } finally {
        foreign.close();
      }
      await vi.waitFor(() => expect(seen).toEqual(['Foreign']), { timeout: 10_000, interval: 10 });
    } finally {
      await subscription.close();
    }
  });

  it('positions are the integer position as a decimal string', async () => {
    const store = createSqliteEventStore({ path: join(tempDir(), 'estate.db') });
    stores.push(store);
    const { positions } = await store.append('run-1', [{ type: 'A', data: 1 }, { type: 'B', data: 2 }], {
      expectedRevision: 'any',
    });
    expect(positions).toEqual(['1', '2']);
    expect((await store.readAll({ after: '1' })).map((e) => e.type)).toEqual(['B']);
  });

  describe('a long scan reads on a worker thread (scanThreadMinRows: 0 sends every scan there)', () => {
    /** A store with `tools` tool streams of 5 events and a run stream between them. */
    const seeded = async (options: { scanThreadMinRows?: number } = {}) => {
      const path = join(tempDir(), 'scan.db');
      const store = createSqliteEventStore({ path, scanThreadMinRows: 0, ...options });
      stores.push(store);
      for (let t = 0; t < 30; t++) {
        await store.appendMany([
          { streamId: `tool-t${t}`, events: Array.from({ length: 5 }, (_, i) => ({ type: 'V', data: { t, i, text: 'é✓' } })), expectedRevision: 'no_stream' },
          { streamId: `run-r${t}`, events: [{ type: 'R', data: { t } }], expectedRevision: 'no_stream' },
        ]);
      }
      return { store, path };
    };
    const paged = async (store: EventStore, streamPrefix: string, after: string | null = null) => {
      const out = [];
      for (;;) {
        const page = await store.readAll({ after, streamPrefix, limit: 7 });
        if (page.length === 0) return out;
        out.push(...page);
        after = page[page.length - 1]!.position;
      }
    };
    const scanned = async (store: EventStore, options: { after?: string; streamPrefix?: string; limit: number }) => {
      const pages = [];
      for await (const page of store.scan!(options)) pages.push(page);
      return pages;
    };

    it('gives what paging readAll gives, with and without a prefix, from any position, in full pages until the last', async () => {
      const { store } = await seeded();
      const tools = await paged(store, 'tool-');
      expect(tools).toHaveLength(150);
      const pages = await scanned(store, { streamPrefix: 'tool-', limit: 7 });
      expect(pages.flat()).toEqual(tools);
      expect(pages.slice(0, -1).every((p) => p.length === 7)).toBe(true);
      expect((await scanned(store, { limit: 50 })).flat()).toEqual(await paged(store, ''));
      expect((await scanned(store, { streamPrefix: 'tool-', after: tools[99]!.position, limit: 1000 })).flat()).toEqual(tools.slice(100));
      // The same store in this thread (no worker) gives the same.
      const { store: here } = await seeded({ scanThreadMinRows: Infinity });
      expect((await scanned(here, { streamPrefix: 'tool-', limit: 7 })).flat().map((e) => e.data)).toEqual(tools.map((e) => e.data));
    });

    it('stops when the loop is left, and the store goes on working', async () => {
      const { store } = await seeded();
      for await (const page of store.scan!({ limit: 3 })) {
        expect(page).toHaveLength(3);
        break;
      }
      await store.append('tool-after', [{ type: 'V', data: {} }], { expectedRevision: 'no_stream' });
      expect((await scanned(store, { streamPrefix: 'tool-after', limit: 10 })).flat().map((e) => e.type)).toEqual(['V']);
    });

    it('a store closed under a scan makes it fail, never look finished', async () => {
      const { store } = await seeded();
      let seen = 0;
      const reading = (async () => {
        for await (const page of store.scan!({ limit: 1 })) {
          seen += page.length;
          if (seen === 1) await store.close();
        }
      })();
      await expect(reading).rejects.toThrow(/the store was closed/);
      expect(seen).toBeLessThan(180);
    });

    it('a file the worker cannot open fails the scan, naming the file', async () => {
      const { store, path } = await seeded();
      rmSync(path);
      await expect(scanned(store, { limit: 10 })).rejects.toThrow(new RegExp(`scan of ${path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} failed`));
    });

    it('a catalogue reader scans on its first catch-up only: a live one never starts a thread', async () => {
      const { store } = await seeded();
      const scans = vi.spyOn(store, 'scan');
      const reader = new CatalogueReader(store, { keepDetails: false });
      await reader.catchUp();
      expect(scans).toHaveBeenCalledTimes(1);
      await store.append('tool-late', [{ type: 'V', data: {} }], { expectedRevision: 'no_stream' });
      await reader.catchUp();
      expect(scans).toHaveBeenCalledTimes(1);
      expect(reader.position).toBe((await store.readAll({ streamPrefix: 'tool-late' }))[0]!.position);
    });

    it('estate replay over the thread folds what it folds in this thread, as of now and as of a position (left early)', async () => {
      const path = join(tempDir(), 'replay.db');
      const threaded = createSqliteEventStore({ path, scanThreadMinRows: 0 });
      const here = createSqliteEventStore({ path, scanThreadMinRows: Infinity });
      stores.push(threaded, here);
      const handler = new CommandHandler({ store: threaded });
      const positions: string[] = [];
      for (const name of ['a.one', 'b.two', 'c.three']) {
        for (const version of ['1.0.0', '1.1.0']) positions.push((await handler.publish(aDefinition({ name, version, handler: `${name.split('.')[0]}.h` }), 't')).position as string);
      }
      await handler.deprecate('b.two', '1.0.0', 'superseded', 't');
      const folded = (c: CatalogueProjection) => c.names().map((n) => [n, c.versions(n).map((v) => `${v.version}:${v.status}`)]);
      const now = { time: '9999-12-31T00:00:00.000Z' };
      expect(folded(await replayAsOf(threaded, now))).toEqual(folded(await replayAsOf(here, now)));
      expect(folded(await replayAsOf(threaded, now))).toEqual([
        ['a.one', ['1.0.0:active', '1.1.0:active']],
        ['b.two', ['1.0.0:deprecated', '1.1.0:active']],
        ['c.three', ['1.0.0:active', '1.1.0:active']],
      ]);
      const then = { position: positions[2]! };
      expect(folded(await replayAsOf(threaded, then))).toEqual([['a.one', ['1.0.0:active', '1.1.0:active']], ['b.two', ['1.0.0:active']]]);
      expect(folded(await replayAsOf(threaded, then))).toEqual(folded(await replayAsOf(here, then)));
    });

    it('a row whose data is not JSON fails the scan (as readAll does), on the thread or not, naming the event', async () => {
      for (const scanThreadMinRows of [0, Infinity]) {
        const { store, path } = await seeded({ scanThreadMinRows });
        const raw = new Database(path);
        raw.prepare("UPDATE events SET data = '{not json' WHERE stream_id = 'tool-t3' AND revision = 2").run();
        const { position } = raw.prepare<[], { position: number }>("SELECT position FROM events WHERE stream_id = 'tool-t3' AND revision = 2").get()!;
        raw.close();
        // The parser's own words ("Expected property name ...") named no event: a store of millions could not be mended.
        const named = new RegExp(`^sqlite store: the event at position ${position} \\(tool-t3@2\\) holds data that is not JSON: `);
        for (const read of [() => store.readAll({ limit: 1000 }), () => scanned(store, { limit: 10 }), () => store.readStream('tool-t3')]) {
          const e = await read().then(() => null, (x: unknown) => x);
          expect(e).toBeInstanceOf(SyntaxError);
          expect((e as Error).message).toMatch(named);
        }
      }
    });
  });
});
