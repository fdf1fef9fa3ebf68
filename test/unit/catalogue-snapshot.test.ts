/**
 * Projection snapshots on the memory store (SQLite and PostgreSQL: test/int/snapshots-sql.test.ts): snapshot + tail
 * equals a full replay over random logs; a snapshot of another projection version is ignored (info) and one that is
 * unreadable is ignored with a warning, one of another log too (its last event not in this log at its position),
 * the catalogue rebuilt from the events either way; the keeper writes every N
 * events or M milliseconds, only when something changed, and once more on close.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CatalogueReader } from '#app/catalogue-reader';
import { CATALOGUE_SNAPSHOT, CATALOGUE_SNAPSHOT_VERSION, writeCatalogueSnapshot } from '#app/catalogue-snapshot';
import type { EventStore, SnapshotStore } from '#app/ports';
import { keepSnapshots, restoreCatalogue } from '#app/snapshot-keeper';
import { loadConfig } from '#config';
import { createMemoryEventStore } from '#store/memory-event-store';
import { createMemorySnapshots, type MemorySnapshots } from '#store/memory-snapshots';
import { aDefinition, publishedEvent } from '../fixtures/builders.ts';
import { appendLog, fullReplay, logWithCut, stateOf, type LogEntry } from '../fixtures/catalogue-logs.ts';
import { ManualTimer } from '../fixtures/manual-timer.ts';

const now = (): string => '2026-12-01T00:00:00.000Z';
/** A chunk of the stored layout (src/app/catalogue-snapshot-records.ts), every column empty unless given. */
const chunk = (columns: Record<string, unknown>): string => JSON.stringify({ s: [], a: [], k: [], i: [], d: [], c: [], v: [], r: [], m: [], ...columns });

/** A log that records what was said at each level. */
const recordingLog = () => {
  const lines: { level: string; msg: string; fields: object }[] = [];
  const at = (level: string) => (fields: object, msg = '') => void lines.push({ level, msg, fields });
  return { lines, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
};

/** Snapshot after the first `cut` events, append the rest, then start a reader from the snapshot. */
const snapshotThenTail = async (store: EventStore, snapshots: SnapshotStore, log: readonly LogEntry[], cut: number) => {
  await appendLog(store, log.slice(0, cut));
  const before = await fullReplay(store);
  await writeCatalogueSnapshot(snapshots, before.catalogue, now);
  await appendLog(store, log.slice(cut));
  const restored = new CatalogueReader(store);
  const outcome = await restoreCatalogue(restored, snapshots, recordingLog());
  await restored.catchUp();
  return { restored, outcome };
};

const published = (n: number): LogEntry[] =>
  Array.from({ length: n }, (_, i) => {
    const e = publishedEvent(aDefinition({ name: `t.tool${i}`, handler: 't.h' }));
    return { streamId: `tool-t.tool${i}`, type: e.type, data: e.data };
  });

describe('snapshot settings', () => {
  it('are on by default, every 10,000 events or 5 minutes; a bad value is a clear usage error', () => {
    expect(loadConfig({}, {})).toMatchObject({ snapshots: true, snapshotEveryEvents: 10_000, snapshotEveryMs: 300_000 });
    expect(loadConfig({}, { ESTATE_SNAPSHOTS: 'off', ESTATE_SNAPSHOT_EVERY_EVENTS: '5', ESTATE_SNAPSHOT_EVERY_MS: '2000' })).toMatchObject({ snapshots: false, snapshotEveryEvents: 5, snapshotEveryMs: 2000 });
    expect(() => loadConfig({}, { ESTATE_SNAPSHOTS: 'maybe' })).toThrow('configuration: snapshots: ESTATE_SNAPSHOTS must be on or off');
    expect(() => loadConfig({}, { ESTATE_SNAPSHOT_EVERY_EVENTS: '0' })).toThrow('ESTATE_SNAPSHOT_EVERY_EVENTS must be positive');
    expect(() => loadConfig({}, { ESTATE_SNAPSHOT_EVERY_MS: '10' })).toThrow('ESTATE_SNAPSHOT_EVERY_MS must be at least 1000');
  });
});

describe('catalogue snapshots (memory store)', () => {
  it('property: the state after snapshot + tail equals the state after a full replay', async () => {
    await fc.assert(
      fc.asyncProperty(logWithCut(), async ({ log, cut }) => {
        const store = createMemoryEventStore();
        const { restored, outcome } = await snapshotThenTail(store, createMemorySnapshots(), log, cut);
        expect(outcome.kind).toBe(log.slice(0, cut).some((e) => e.streamId.startsWith('tool-')) ? 'restored' : 'none');
        expect(await stateOf(restored)).toEqual(await stateOf(await fullReplay(store)));
      }),
      { numRuns: 150 },
    );
  });

  it('ignores a snapshot of another log (its last event is not in this one at its position), with a warning', async () => {
    const snapshots = createMemorySnapshots();
    const other = createMemoryEventStore();
    await appendLog(other, published(4));
    await writeCatalogueSnapshot(snapshots, (await fullReplay(other)).catalogue, now);
    // This store's log: two other tools, where the snapshot's last event (tool-t.tool3@0) does not exist.
    const store = createMemoryEventStore();
    await appendLog(
      store,
      ['u.one', 'u.two'].map((name): LogEntry => {
        const e = publishedEvent(aDefinition({ name, handler: 'u.h' }));
        return { streamId: `tool-${name}`, type: e.type, data: e.data };
      }),
    );
    const log = recordingLog();
    const reader = new CatalogueReader(store);
    expect((await restoreCatalogue(reader, snapshots, log)).kind).toBe('foreign');
    expect(log.lines.filter((l) => l.level === 'warn').map((l) => l.msg)).toEqual([
      'the catalogue snapshot ends at an event this store does not have there: ignored, rebuilding from the events',
    ]);
    expect(reader.position).toBeNull();
    await reader.catchUp();
    expect(await stateOf(reader)).toEqual(await stateOf(await fullReplay(store)));
    // The same snapshot restores on a log that does hold its last event at its position.
    const same = new CatalogueReader(other);
    expect((await restoreCatalogue(same, snapshots, recordingLog())).kind).toBe('restored');
  });

  it('ignores a snapshot written by another projection version, says so at info, and rebuilds from the events', async () => {
    const store = createMemoryEventStore();
    const snapshots = createMemorySnapshots();
    await snapshotThenTail(store, snapshots, published(5), 3);
    const stored = snapshots.stored(CATALOGUE_SNAPSHOT);
    if (!stored) throw new Error('no snapshot written');
    stored.head.version = 'catalogue-1/layout-1';
    // Content that would differ from the log if it were loaded: a projection version change must not be trusted.
    stored.chunks[0] = chunk({});
    const log = recordingLog();
    const reader = new CatalogueReader(store);
    expect((await restoreCatalogue(reader, snapshots, log)).kind).toBe('stale');
    expect(reader.position).toBeNull();
    await reader.catchUp();
    expect(await stateOf(reader)).toEqual(await stateOf(await fullReplay(store)));
    expect(log.lines).toEqual([
      { level: 'info', msg: 'the catalogue snapshot was written by another projection version: ignored, rebuilding from the events', fields: { snapshotVersion: 'catalogue-1/layout-1' } },
    ]);
  });

  const corruptions: [string, (s: NonNullable<ReturnType<MemorySnapshots['stored']>>) => void, RegExp][] = [
    ['bad JSON', (s) => void (s.chunks[0] = `${s.chunks[0]?.slice(0, -5)}`), /^chunk 0 is not JSON/],
    ['a checksum mismatch', (s) => void (s.chunks[0] = (s.chunks[0] as string).replaceAll('"t.tool1"', '"t.tool9"')), /^checksum mismatch$/],
    ['a truncated snapshot', (s) => void s.chunks.pop(), /^truncated: 1 of 2 chunks$/],
    ['a record of the wrong shape', (s) => void (s.chunks[0] = chunk({ k: ['t.tool0'], i: [null], d: ['d'], c: [1], v: ['1.0.0'], r: [0] })), /^snapshot record: the version numbers are not 6 per version$/],
    ['a status out of its table', (s) => void (s.chunks[0] = chunk({ s: ['h'], a: [['public', [], []]], k: ['t.tool0'], i: [null], d: ['d'], c: [1], v: ['1.0.0'], r: [7, 0, 0, 0, 1000, 0] })), /^snapshot record: the status of t\.tool0 is not in its table$/],
    ['a version count past the versions', (s) => void (s.chunks[0] = chunk({ k: ['t.tool0'], i: [null], d: ['d'], c: [2], v: ['1.0.0'], r: [0, 0, 0, 0, 1000, 0] })), /^snapshot record: the version count of t\.tool0 is past the versions$/],
    ['a mark naming no version', (s) => void (s.chunks[0] = chunk({ s: ['h'], a: [['public', [], []]], k: ['t.tool0'], i: [null], d: ['d'], c: [1], v: ['1.0.0'], r: [1, 0, 0, 0, 1000, 0], m: [3, 0, 'r', 'at', 'by'] })), /^snapshot record: a lifecycle mark names no version in order$/],
    ['two deprecations of one version', (s) => void (s.chunks[0] = chunk({ s: ['h'], a: [['public', [], []]], k: ['t.tool0'], i: [null], d: ['d'], c: [1], v: ['1.0.0'], r: [1, 0, 0, 0, 1000, 0], m: [0, 0, 'r', 'at', 'by', 0, 0, 'r', 'at', 'by'] })), /^snapshot record: a lifecycle mark of t\.tool0 is neither one deprecation nor one retirement$/],
  ];

  it.each(corruptions)('ignores %s with a warning and rebuilds from the events', async (_what, damage, reason) => {
    const store = createMemoryEventStore();
    const snapshots = createMemorySnapshots();
    await snapshotThenTail(store, snapshots, published(6), 4);
    const stored = snapshots.stored(CATALOGUE_SNAPSHOT);
    if (!stored) throw new Error('no snapshot written');
    expect(stored.head.version).toBe(CATALOGUE_SNAPSHOT_VERSION);
    // Two chunks, so truncation can drop one: the second holds an empty chunk, valid on its own.
    stored.chunks.push(chunk({}));
    stored.head.chunkCount = 2;
    stored.head.checksum = (await import('node:crypto')).createHash('sha256').update(stored.chunks.join('')).digest('hex');
    damage(stored);
    const log = recordingLog();
    const reader = new CatalogueReader(store);
    expect((await restoreCatalogue(reader, snapshots, log)).kind).toBe('corrupt');
    expect(reader.position).toBeNull();
    await reader.catchUp();
    expect(await stateOf(reader)).toEqual(await stateOf(await fullReplay(store)));
    expect(log.lines).toHaveLength(1);
    expect(log.lines[0]).toMatchObject({ level: 'warn', msg: 'the catalogue snapshot is unreadable: ignored, rebuilding from the events' });
    expect((log.lines[0]?.fields as { reason: string }).reason).toMatch(reason);
  });

  it('a snapshot replaced by another process while it is read (its chunks gone) is read again, not called corrupt', async () => {
    const store = createMemoryEventStore();
    const snapshots = createMemorySnapshots();
    const log = published(5);
    await appendLog(store, log.slice(0, 3));
    await writeCatalogueSnapshot(snapshots, (await fullReplay(store)).catalogue, now);
    await appendLog(store, log.slice(3));
    let replaced = false;
    const racing: SnapshotStore = {
      head: (name) => snapshots.head(name),
      async *chunks(head) {
        if (!replaced) {
          replaced = true;
          // Another replica writes a newer snapshot; the rows of the one being read are deleted under the reader.
          await writeCatalogueSnapshot(snapshots, (await fullReplay(store)).catalogue, now);
          return;
        }
        yield* snapshots.chunks(head);
      },
      write: (chunks, head) => snapshots.write(chunks, head),
    };
    const warned: unknown[] = [];
    const reader = new CatalogueReader(store);
    const outcome = await restoreCatalogue(reader, racing, { ...recordingLog(), warn: (f) => void warned.push(f) });
    expect(outcome).toMatchObject({ kind: 'restored', eventCount: 5 });
    expect(warned).toEqual([]);
    expect(await reader.catchUp()).toBe(0);
  });

  it('a reader that started from a snapshot reads only the events after it', async () => {
    const store = createMemoryEventStore();
    const snapshots = createMemorySnapshots();
    const log = published(10);
    await appendLog(store, log.slice(0, 8));
    await writeCatalogueSnapshot(snapshots, (await fullReplay(store)).catalogue, now);
    await appendLog(store, log.slice(8));
    const reader = new CatalogueReader(store);
    await restoreCatalogue(reader, snapshots, recordingLog());
    expect(await reader.catchUp()).toBe(2);
    expect(reader.catalogue.size).toBe(10);
  });

  it('keeper: writes at once after a long replay, then every N events or M ms when something changed, and on close', async () => {
    const store = createMemoryEventStore();
    const snapshots = createMemorySnapshots();
    const timer = new ManualTimer();
    const log = published(16);
    await appendLog(store, log.slice(0, 6));
    const reader = new CatalogueReader(store);
    const outcome = await restoreCatalogue(reader, snapshots, recordingLog());
    await reader.catchUp();
    const sub = reader.follow();
    const keeper = keepSnapshots({ reader, store: snapshots, log: recordingLog(), restored: outcome, policy: { everyEvents: 5, everyMs: 60_000 }, timer, clock: { now } });
    await timer.settle();
    const counted = async () => (await snapshots.head(CATALOGUE_SNAPSHOT))?.eventCount;
    expect(await counted()).toBe(6); // no snapshot at start and a replay of N or more: one at once

    await appendLog(store, log.slice(6, 10)); // 4 events: below N
    await expect.poll(() => reader.catalogue.eventCount).toBe(10);
    await timer.settle();
    expect(await counted()).toBe(6);
    await appendLog(store, log.slice(10, 11)); // the 5th: due
    await expect.poll(counted).toBe(11);

    await appendLog(store, log.slice(11, 12));
    await expect.poll(() => reader.catalogue.eventCount).toBe(12);
    await timer.advance(59_000);
    expect(await counted()).toBe(11);
    await timer.advance(1_000); // M elapsed, one change since: written
    expect(await counted()).toBe(12);
    const id = snapshots.stored(CATALOGUE_SNAPSHOT)?.head.id;
    await timer.advance(60_000); // nothing changed: not written again
    expect(snapshots.stored(CATALOGUE_SNAPSHOT)?.head.id).toBe(id);

    await appendLog(store, log.slice(12, 13));
    await expect.poll(() => reader.catalogue.eventCount).toBe(13);
    await sub.close();
    await keeper.close(); // a clean shutdown leaves the last position behind
    expect(await snapshots.head(CATALOGUE_SNAPSHOT)).toMatchObject({ eventCount: 13, position: reader.position });
  });

  it('keeper: a reader restored from a snapshot is not written again until the policy says, a short replay neither', async () => {
    const store = createMemoryEventStore();
    const snapshots = createMemorySnapshots();
    await appendLog(store, published(3));
    const first = new CatalogueReader(store);
    const none = await restoreCatalogue(first, snapshots, recordingLog());
    await first.catchUp();
    const timer = new ManualTimer();
    const policy = { everyEvents: 5, everyMs: 60_000 };
    const short = keepSnapshots({ reader: first, store: snapshots, log: recordingLog(), restored: none, policy, timer, clock: { now } });
    await timer.settle();
    expect(await snapshots.head(CATALOGUE_SNAPSHOT)).toBeNull(); // 3 events replay in no time: not yet
    await short.close();
    const written = await snapshots.head(CATALOGUE_SNAPSHOT);
    expect(written?.eventCount).toBe(3);

    const second = new CatalogueReader(store);
    const restored = await restoreCatalogue(second, snapshots, recordingLog());
    await second.catchUp();
    const again = keepSnapshots({ reader: second, store: snapshots, log: recordingLog(), restored, policy, timer, clock: { now } });
    await timer.advance(60_000);
    await again.close();
    expect(await snapshots.head(CATALOGUE_SNAPSHOT)).toEqual(written);
  });

  it('keeper: a store that refuses the write costs a warning, not the reader, and is not retried on every change', async () => {
    const store = createMemoryEventStore();
    await appendLog(store, published(3));
    const reader = new CatalogueReader(store);
    await reader.catchUp();
    let attempts = 0;
    const refusing: SnapshotStore = {
      head: async () => null,
      chunks: async function* () {},
      write: async (chunks) => {
        attempts++;
        for await (const _ of chunks) throw new Error('attempt to write a readonly database');
      },
    };
    const log = recordingLog();
    const timer = new ManualTimer();
    const keeper = keepSnapshots({ reader, store: refusing, log, restored: { kind: 'none' }, policy: { everyEvents: 3, everyMs: 60_000 }, timer, clock: { now } });
    await timer.settle();
    expect(attempts).toBe(1);
    const sub = reader.follow();
    await appendLog(store, published(5).slice(3));
    await expect.poll(() => reader.catalogue.eventCount).toBe(5);
    expect(attempts).toBe(1);
    await sub.close();
    await keeper.close();
    expect(attempts).toBe(2);
    expect(log.lines.map((l) => `${l.level}: ${l.msg}`)).toEqual([
      'warn: catalogue snapshot not written (the next one is tried later); serving goes on',
      'warn: catalogue snapshot not written (the next one is tried later); serving goes on',
    ]);
  });
});
