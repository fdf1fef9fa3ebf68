/**
 * Projection snapshots on the durable stores: SQLite (a table in the store's own file) and the real PostgreSQL (a table
 * in the store's schema). The property of test/unit/catalogue-snapshot.test.ts on each (snapshot + tail equals a full
 * replay), a stale and a corrupt snapshot edited in the tables themselves, a write that fails half-way, and a store
 * that never had a snapshot (no table: nothing is created by reading).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import fc from 'fast-check';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { CatalogueReader } from '#app/catalogue-reader';
import { CATALOGUE_SNAPSHOT, writeCatalogueSnapshot } from '#app/catalogue-snapshot';
import type { EventStore, SnapshotStore } from '#app/ports';
import { listRuns, RunsIndex } from '#app/runs-index';
import { RUNS_SNAPSHOT } from '#app/runs-snapshot';
import { restoreCatalogue } from '#app/snapshot-keeper';
import { runStream } from '#domain/events';
import { createPostgresEventStore } from '#store/postgres-event-store';
import { createSqliteEventStore } from '#store/sqlite-event-store';
import { aDefinition, publishedEvent } from '../fixtures/builders.ts';
import { appendLog, fullReplay, logWithCut, stateOf, type LogEntry } from '../fixtures/catalogue-logs.ts';
import { dropSchema, requirePostgres, uniqueSchema } from './pg-helpers.ts';

const now = (): string => '2026-12-01T00:00:00.000Z';
const quiet = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };

interface Backend {
  name: string;
  /** A fresh, empty store. */
  open(): Promise<{ store: EventStore; snapshots: SnapshotStore; sql(text: string, params?: unknown[]): Promise<unknown[]>; close(): Promise<void> }>;
  runs: number;
}

const sqlite: Backend = {
  name: 'SQLite',
  runs: 25,
  async open() {
    const dir = mkdtempSync(join(tmpdir(), 'estate-snap-'));
    const path = join(dir, 'e.db');
    const store = createSqliteEventStore({ path });
    return {
      store,
      snapshots: store.snapshots as SnapshotStore,
      async sql(text, params = []) {
        const db = new Database(path);
        try {
          const stmt = db.prepare(text);
          return stmt.reader ? stmt.all(...params) : [stmt.run(...params)];
        } finally {
          db.close();
        }
      },
      async close() {
        await store.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  },
};

const pgUrl = await requirePostgres('projection snapshots on PostgreSQL');
const postgres: Backend | null =
  pgUrl === null
    ? null
    : {
        name: 'PostgreSQL',
        runs: 12,
        async open() {
          const schema = uniqueSchema('snap');
          const store = await createPostgresEventStore({ connectionString: pgUrl, schema });
          const client = new pg.Client({ connectionString: pgUrl });
          await client.connect();
          await client.query(`SET search_path TO "${schema}"`);
          return {
            store,
            snapshots: store.snapshots as SnapshotStore,
            // Statements are written with ? placeholders for both backends.
            sql: async (text, params = []) => {
              let i = 0;
              return (await client.query(text.replace(/\?/g, () => `$${++i}`), params)).rows;
            },
            async close() {
              await client.end();
              await store.close();
              await dropSchema(pgUrl, schema);
            },
          };
        },
      };

const published = (n: number): LogEntry[] =>
  Array.from({ length: n }, (_, i) => {
    const e = publishedEvent(aDefinition({ name: `t.tool${i}`, handler: 't.h' }));
    return { streamId: `tool-t.tool${i}`, type: e.type, data: e.data };
  });

for (const backend of [sqlite, postgres]) {
  if (backend === null) continue;
  describe(`catalogue snapshots on ${backend.name}`, () => {
    const opened: { close(): Promise<void> }[] = [];
    afterAll(async () => {
      for (const o of opened.splice(0)) await o.close();
    });
    const open = async () => {
      const o = await backend.open();
      opened.push(o);
      return o;
    };

    it('property: the state after snapshot + tail equals the state after a full replay', async () => {
      await fc.assert(
        fc.asyncProperty(logWithCut(30), async ({ log, cut }) => {
          const o = await backend.open();
          try {
            await appendLog(o.store, log.slice(0, cut));
            await writeCatalogueSnapshot(o.snapshots, (await fullReplay(o.store)).catalogue, now);
            await appendLog(o.store, log.slice(cut));
            const restored = new CatalogueReader(o.store);
            await restoreCatalogue(restored, o.snapshots, quiet);
            await restored.catchUp();
            expect(await stateOf(restored)).toEqual(await stateOf(await fullReplay(o.store)));
          } finally {
            await o.close();
          }
        }),
        { numRuns: backend.runs },
      );
    }, 120_000);

    it('reads no snapshot from a store that never wrote one, and creates nothing by looking', async () => {
      const o = await open();
      expect(await o.snapshots.head(CATALOGUE_SNAPSHOT)).toBeNull();
      const reader = new CatalogueReader(o.store);
      expect((await restoreCatalogue(reader, o.snapshots, quiet)).kind).toBe('none');
      await expect(o.sql('SELECT count(*) AS n FROM projection_snapshots')).rejects.toThrow(/projection_snapshots/);
    });

    it('restores from its snapshot, ignores one of another version (rebuilt), and one edited in the table (warning)', async () => {
      const o = await open();
      await appendLog(o.store, published(6));
      await writeCatalogueSnapshot(o.snapshots, (await fullReplay(o.store)).catalogue, now);
      const replayed = await stateOf(await fullReplay(o.store));

      const fromSnapshot = new CatalogueReader(o.store);
      expect((await restoreCatalogue(fromSnapshot, o.snapshots, quiet)).kind).toBe('restored');
      expect(await fromSnapshot.catchUp()).toBe(0);
      expect(await stateOf(fromSnapshot)).toEqual(replayed);

      await o.sql("UPDATE projection_snapshots SET version = 'catalogue-0/layout-1'");
      const stale = new CatalogueReader(o.store);
      expect((await restoreCatalogue(stale, o.snapshots, quiet)).kind).toBe('stale');
      expect(await stale.catchUp()).toBe(6);
      expect(await stateOf(stale)).toEqual(replayed);

      await writeCatalogueSnapshot(o.snapshots, (await fullReplay(o.store)).catalogue, now);
      await o.sql("UPDATE projection_snapshot_chunks SET data = replace(data, '\"t.tool1\"', '\"t.tool7\"')");
      const warnings: string[] = [];
      const corrupt = new CatalogueReader(o.store);
      expect((await restoreCatalogue(corrupt, o.snapshots, { ...quiet, warn: (f: object) => void warnings.push((f as { reason: string }).reason) })).kind).toBe('corrupt');
      expect(warnings).toEqual(['checksum mismatch']);
      await corrupt.catchUp();
      expect(await stateOf(corrupt)).toEqual(replayed);
    });

    it('ignores (warning) a snapshot that ends at an event its log no longer has there: the events replaced by SQL', async () => {
      const o = await open();
      await appendLog(o.store, published(6));
      await writeCatalogueSnapshot(o.snapshots, (await fullReplay(o.store)).catalogue, now);
      // The log replaced under the snapshot (a restore of the events alone, rows deleted by hand): three other tools.
      await o.sql('DELETE FROM events');
      if (backend.name === 'PostgreSQL') await o.sql('DELETE FROM streams');
      await appendLog(o.store, published(9).slice(6));
      const warnings: string[] = [];
      const reader = new CatalogueReader(o.store);
      const outcome = await restoreCatalogue(reader, o.snapshots, { ...quiet, warn: (_f: object, msg?: string) => void warnings.push(msg ?? '') });
      expect(outcome.kind).toBe('foreign');
      expect(warnings).toEqual(['the catalogue snapshot ends at an event this store does not have there: ignored, rebuilding from the events']);
      expect(reader.position).toBeNull();
      await reader.catchUp();
      expect(await stateOf(reader)).toEqual(await stateOf(await fullReplay(o.store)));
      expect(reader.catalogue.size).toBe(3);
    });

    it('a write that fails half-way leaves the previous snapshot in place, and its chunks are removed', async () => {
      const o = await open();
      await appendLog(o.store, published(3));
      await writeCatalogueSnapshot(o.snapshots, (await fullReplay(o.store)).catalogue, now);
      const before = await o.snapshots.head(CATALOGUE_SNAPSHOT);
      async function* failing(): AsyncGenerator<string> {
        yield '[]';
        throw new Error('the process was stopped');
      }
      await expect(o.snapshots.write(failing(), () => { throw new Error('not reached'); })).rejects.toThrow('the process was stopped');
      expect(await o.snapshots.head(CATALOGUE_SNAPSHOT)).toEqual(before);
      const rows = (await o.sql('SELECT id FROM projection_snapshot_chunks')) as { id: string }[];
      expect(new Set(rows.map((r) => r.id))).toEqual(new Set([before?.id]));
      const reader = new CatalogueReader(o.store);
      expect((await restoreCatalogue(reader, o.snapshots, quiet)).kind).toBe('restored');
      expect(reader.catalogue.size).toBe(3);
    });

    it('a newer snapshot replaces the older one and its chunks', async () => {
      const o = await open();
      await appendLog(o.store, published(2));
      await writeCatalogueSnapshot(o.snapshots, (await fullReplay(o.store)).catalogue, now);
      const first = await o.snapshots.head(CATALOGUE_SNAPSHOT);
      await appendLog(o.store, published(4).slice(2));
      await writeCatalogueSnapshot(o.snapshots, (await fullReplay(o.store)).catalogue, now);
      const second = await o.snapshots.head(CATALOGUE_SNAPSHOT);
      expect(second?.id).not.toBe(first?.id);
      expect(second?.eventCount).toBe(4);
      const rows = (await o.sql('SELECT DISTINCT id FROM projection_snapshot_chunks')) as { id: string }[];
      expect(rows.map((r) => r.id)).toEqual([second?.id]);
    });

    it('keeps the runs index beside the catalogue: a second index starts from it, and lists what the whole log does', async () => {
      const o = await open();
      await appendLog(o.store, published(2));
      await writeCatalogueSnapshot(o.snapshots, (await fullReplay(o.store)).catalogue, now);
      const owner = { subject: 'alice', tenant: 'acme' };
      const call = (i: number, run: number) => ({ streamId: runStream(`r${run}`, owner), type: 'ToolCalled', data: { runId: `r${run}`, ...owner, tool: `t.tool${i % 2}`, version: '1.0.0', at: new Date(Date.UTC(2026, 11, 1) + i).toISOString(), callId: `c${i}`, outcome: 'ok' } });
      await appendLog(o.store, Array.from({ length: 300 }, (_, i) => call(i, i % 40)));
      const first = new RunsIndex(o.store, { snapshots: o.snapshots, maxRuns: 25, snapshotEvery: 100 });
      await first.list();
      await first.settled();
      expect(await o.snapshots.head(RUNS_SNAPSHOT)).toMatchObject({ eventCount: 300 });
      expect(await o.snapshots.head(CATALOGUE_SNAPSHOT)).toMatchObject({ eventCount: 2 });
      await appendLog(o.store, Array.from({ length: 30 }, (_, i) => call(300 + i, (i * 7) % 45)));
      for (const filter of [{}, { limit: 25 }, { tool: 't.tool1', limit: 30 }, { since: new Date(Date.UTC(2026, 11, 1) + 290).toISOString() }]) {
        expect((await new RunsIndex(o.store, { snapshots: o.snapshots, maxRuns: 25 }).list(filter)).runs).toEqual(await listRuns(o.store, filter));
      }
    });
  });
}
