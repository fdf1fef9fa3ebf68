import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { EventStore } from '#app/ports';
import { createSqliteEventStore } from '#store/sqlite-event-store';
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
});
