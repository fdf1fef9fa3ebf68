/**
 * The runs index (src/app/runs-index.ts): what a view lists equals a scan of the whole log (a property over random
 * call logs, read in random steps, with a small bound and through a snapshot), each view reads only what was written
 * since the last, a run dropped by the bound and written to again is counted whole, a filter the bound cannot answer
 * falls back to the scan, and a snapshot of another version or a damaged one is ignored.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { EventStore, ReadAllOptions, StoredEvent } from '#app/ports';
import { listRuns, RunsIndex } from '#app/runs-index';
import { RUNS_SNAPSHOT, RUNS_SNAPSHOT_VERSION } from '#app/runs-snapshot';
import { runsPage } from '#console/run-pages';
import { runStream } from '#domain/events';
import { createMemoryEventStore } from '#store/memory-event-store';
import { createMemorySnapshots } from '#store/memory-snapshots';

const owners = [
  { subject: 'alice', tenant: 'acme' },
  { subject: 'bob', tenant: 'acme' },
  { subject: 'carol', tenant: 'globex' },
];
const tools = ['payments.lookup', 'payments.refund', 'ledger.read'];
const at = (ms: number): string => new Date(Date.UTC(2026, 11, 1) + ms).toISOString();

/** One call record: an outcome (with or without an intent before it), or an intent alone. */
interface Rec {
  run: number;
  owner: number;
  tool: number;
  /** Milliseconds after a fixed start (the property: after the record before, 0 to 2, so that runs often share one). */
  ms: number;
  kind: 'called' | 'intent-then-called' | 'intent';
}

const recArb = fc.record({
  run: fc.integer({ min: 0, max: 11 }),
  owner: fc.integer({ min: 0, max: 2 }),
  tool: fc.integer({ min: 0, max: 2 }),
  ms: fc.integer({ min: 0, max: 2 }),
  kind: fc.constantFrom<Rec['kind']>('called', 'called', 'intent-then-called', 'intent'),
});

let callIds = 0;
const eventsOf = (r: Rec) => {
  const owner = owners[r.owner]!;
  const base = { runId: `run-${r.run}`, ...owner, tool: tools[r.tool]!, version: '1.0.0', at: at(r.ms) };
  const callId = `c${++callIds}`;
  const started = { type: 'ToolCallStarted', data: { ...base, callId, argsHash: 'a' } };
  const called = { type: 'ToolCalled', data: { ...base, callId, outcome: 'ok' } };
  return r.kind === 'called' ? [called] : r.kind === 'intent' ? [started] : [started, called];
};

const record = async (store: EventStore, recs: readonly Rec[]): Promise<void> => {
  for (const r of recs) await store.append(runStream(`run-${r.run}`, owners[r.owner]), eventsOf(r), { expectedRevision: 'any' });
};

/** A store that counts the events its log reads return (the index's cost per view). */
const counting = (store: EventStore): EventStore & { read: number } => {
  const c = Object.create(store) as EventStore & { read: number };
  c.read = 0;
  const count = (events: StoredEvent[]): StoredEvent[] => {
    c.read += events.length;
    return events;
  };
  c.readAll = async (o?: ReadAllOptions) => count(await store.readAll(o));
  if (store.readAllPage) c.readAllPage = async (o?: ReadAllOptions) => {
    const page = await store.readAllPage!(o);
    count(page.events);
    return page;
  };
  Object.defineProperty(c, 'scan', { value: undefined });
  return c;
};

/** A log that keeps what was said at info and warn, as `<level> <message>` lines. */
const loggedLines = () => {
  const logged: string[] = [];
  const log = { debug: () => undefined, info: (_: object, m?: string) => logged.push(`info ${m}`), warn: (_: object, m?: string) => logged.push(`warn ${m}`), error: () => undefined };
  return { logged, log };
};

/** An index of `store` read whole, its snapshot (every `snapshotEvery` events) written before this returns. */
const snapshotOf = async (store: EventStore, snapshots: ReturnType<typeof createMemorySnapshots>, snapshotEvery: number): Promise<void> => {
  const index = new RunsIndex(store, { snapshots, snapshotEvery });
  await index.list();
  await index.settled();
};

describe('RunsIndex', () => {
  it('lists what a scan of the whole log lists, read in steps, bounded, and restarted from its snapshot', async () => {
    const filters = fc.record({ limit: fc.integer({ min: 1, max: 14 }), tool: fc.option(fc.constantFrom(...tools), { nil: undefined }), since: fc.option(fc.integer({ min: 0, max: 100 }).map(at), { nil: undefined }) });
    await fc.assert(
      fc.asyncProperty(fc.array(fc.array(recArb, { maxLength: 12 }), { minLength: 1, maxLength: 6 }), fc.integer({ min: 1, max: 14 }), filters, fc.integer({ min: 1, max: 30 }), async (steps, maxRuns, filter, snapshotEvery) => {
        const store = createMemoryEventStore();
        const snapshots = createMemorySnapshots();
        const index = new RunsIndex(store, { maxRuns, snapshots, snapshotEvery });
        // Call times as they are recorded: never earlier than the record before (often the same millisecond).
        let clock = 0;
        for (const step of steps) {
          await record(store, step.map((r) => ({ ...r, ms: (clock += r.ms) })));
          expect((await index.list(filter)).runs).toEqual(await listRuns(store, filter));
          await index.settled();
          // A second process, from the snapshot the first left (if any) plus the log after it.
          const next = new RunsIndex(store, { maxRuns, snapshots });
          expect((await next.list(filter)).runs).toEqual(await listRuns(store, filter));
        }
      }),
      { numRuns: 150 },
    );
  });

  it('reads only the call records written since the view before', async () => {
    const store = counting(createMemoryEventStore());
    const recs = Array.from({ length: 300 }, (_, i): Rec => ({ run: i % 12, owner: i % 3, tool: i % 3, ms: i, kind: 'called' }));
    await record(store, recs);
    const index = new RunsIndex(store);
    expect((await index.list({ limit: 50 })).runs).toHaveLength(12);
    expect(store.read).toBe(300);
    await record(store, recs.slice(0, 5));
    store.read = 0;
    const { runs } = await index.list({ limit: 50 });
    expect(store.read).toBe(5);
    expect(runs.reduce((n, r) => n + r.calls, 0)).toBe(305);
    store.read = 0;
    await index.list({ limit: 50 });
    expect(store.read).toBe(0);
  });

  it('counts a run dropped by the bound and written to again whole, and finds dropped runs for a filter', async () => {
    const store = createMemoryEventStore();
    const index = new RunsIndex(store, { maxRuns: 2 });
    await record(store, [
      { run: 0, owner: 0, tool: 2, ms: 1, kind: 'called' },
      { run: 0, owner: 0, tool: 2, ms: 2, kind: 'intent' },
    ]);
    await index.list();
    await record(store, [
      { run: 1, owner: 0, tool: 0, ms: 3, kind: 'called' },
      { run: 2, owner: 0, tool: 0, ms: 4, kind: 'called' },
    ]);
    expect((await index.list({ limit: 2 })).runs.map((r) => r.runId)).toEqual(['run-2', 'run-1']);
    // run-0 was dropped; written to again, it is listed with its three calls and its unfinished intent.
    await record(store, [{ run: 0, owner: 0, tool: 0, ms: 5, kind: 'called' }]);
    const [first] = (await index.list({ limit: 1 })).runs;
    expect(first).toMatchObject({ runId: 'run-0', calls: 2, unfinished: 1, first: at(1), last: at(5), tools: ['ledger.read', 'payments.lookup'] });
    expect((await index.list()).runs).toEqual(await listRuns(store));
    // run-1 is dropped now: a filter only it matches is answered from the whole log.
    await record(store, [{ run: 3, owner: 1, tool: 0, ms: 6, kind: 'called' }]);
    expect((await index.list({ since: at(3), limit: 5 })).runs.map((r) => r.runId)).toEqual(['run-3', 'run-0', 'run-2', 'run-1']);
  });

  it('reads a long run back page by page, letting the thread go between pages', async () => {
    const inner = createMemoryEventStore();
    const owner = owners[0]!;
    const calls = (run: string, from: number, n: number) =>
      Array.from({ length: n }, (_, k) => ({ type: 'ToolCalled', data: { runId: run, ...owner, tool: 't.a', version: '1.0.0', at: at(from + k), callId: `${run}-${from + k}`, outcome: 'ok' } }));
    const reads: number[] = [];
    let turns = 0;
    const store = Object.create(inner) as EventStore;
    store.readStream = async (id, o) => {
      const page = await inner.readStream(id, o);
      reads.push(page.length);
      setImmediate(() => turns++);
      return page;
    };
    const index = new RunsIndex(store, { maxRuns: 1 });
    await store.append(runStream('long', owner), calls('long', 0, 3500), { expectedRevision: 'any' });
    await index.list();
    await store.append(runStream('other', owner), calls('other', 5000, 1), { expectedRevision: 'any' });
    await index.list();
    // Dropped for `other` and written to again: shown, it is read back from its stream.
    await store.append(runStream('long', owner), calls('long', 6000, 1), { expectedRevision: 'any' });
    const [shown] = (await index.list({ limit: 1 })).runs;
    expect(shown).toMatchObject({ runId: 'long', calls: 3501, first: at(0), last: at(6000) });
    expect(reads).toEqual([1000, 1000, 1000, 501]);
    expect(turns, 'other work ran between the pages').toBeGreaterThanOrEqual(3);
  });

  it('counts a call written while a run is read back once', async () => {
    const inner = createMemoryEventStore();
    const store = Object.create(inner) as EventStore;
    let during: (() => Promise<void>) | undefined;
    store.readStream = async (id, o) => {
      await during?.();
      during = undefined;
      return inner.readStream(id, o);
    };
    const index = new RunsIndex(store, { maxRuns: 1 });
    await record(store, [{ run: 0, owner: 0, tool: 0, ms: 1, kind: 'called' }, { run: 1, owner: 0, tool: 0, ms: 2, kind: 'called' }]);
    await index.list();
    await record(store, [{ run: 0, owner: 0, tool: 0, ms: 3, kind: 'called' }]);
    // run-0 was dropped for run-1 and written to again: shown, it is read back, and a call comes in as it is read.
    during = () => record(inner, [{ run: 0, owner: 0, tool: 0, ms: 4, kind: 'called' }]);
    expect((await index.list({ limit: 1 })).runs[0]).toMatchObject({ runId: 'run-0', calls: 3 });
    expect((await index.list({ limit: 1 })).runs[0]).toMatchObject({ runId: 'run-0', calls: 3, last: at(4) });
  });

  it('keeps at most 16 tool names a run, says there were more, and still finds the run by any tool it called', async () => {
    const store = createMemoryEventStore();
    const snapshots = createMemorySnapshots();
    const owner = owners[0]!;
    const events = Array.from({ length: 20 }, (_, i) => ({ type: 'ToolCalled', data: { runId: 'wide', ...owner, tool: `t.tool${i}`, version: '1.0.0', at: at(i), callId: `w${i}`, outcome: 'ok' } }));
    await store.append(runStream('wide', owner), events, { expectedRevision: 'any' });
    await record(store, [{ run: 1, owner: 0, tool: 0, ms: 30, kind: 'called' }]);
    const first = new RunsIndex(store, { snapshots, snapshotEvery: 1 });
    const [, wide] = (await first.list()).runs;
    expect(wide).toMatchObject({ runId: 'wide', calls: 20, moreTools: true });
    expect(wide?.tools).toEqual(Array.from({ length: 16 }, (_, i) => `t.tool${i}`));
    expect((await listRuns(store)).find((r) => r.runId === 'wide')).toEqual(wide);
    // The 20th tool is not among the names kept: the listing reads the whole log to decide.
    expect((await first.list({ tool: 't.tool19' })).runs.map((r) => r.runId)).toEqual(['wide']);
    await first.settled();
    const next = new RunsIndex(store, { snapshots });
    expect((await next.list({ tool: 't.tool19' })).runs).toEqual([wide]);
    expect(String(runsPage(await next.list()))).toContain('t.tool15, and more');
  });

  it('ignores a snapshot of another version and a damaged one, and reads the log instead', async () => {
    const store = createMemoryEventStore();
    const snapshots = createMemorySnapshots();
    await record(store, Array.from({ length: 40 }, (_, i): Rec => ({ run: i % 5, owner: 0, tool: 0, ms: i, kind: 'called' })));
    await snapshotOf(store, snapshots, 10);
    const stored = snapshots.stored(RUNS_SNAPSHOT);
    expect(stored?.chunks[0]).toMatch(/"run-run-0@[^"]*","run-0",8,/);
    expect(stored?.head).toMatchObject({ version: RUNS_SNAPSHOT_VERSION, eventCount: 40 });
    const { logged, log } = loggedLines();
    const expected = await listRuns(store);

    // A run line that says it has 9,999 calls, under the old checksum.
    stored!.chunks[0] = stored!.chunks[0]!.replace(/"run-run-0@[^"]*","run-0",\d+/, (m) => m.replace(/,\d+$/, ',9999'));
    expect((await new RunsIndex(store, { snapshots, log }).list()).runs).toEqual(expected);
    expect(logged).toEqual(['info runs snapshot ignored: the runs index is read from the log']);

    stored!.head.version = 'runs-0';
    logged.length = 0;
    const counted = counting(store);
    expect((await new RunsIndex(counted, { snapshots, log }).list()).runs).toEqual(expected);
    expect(counted.read).toBe(40);
    expect(logged).toHaveLength(1);
  });

  it('ignores a snapshot of another log (its last event is not in this one at its position), with a warning', async () => {
    const snapshots = createMemorySnapshots();
    const other = createMemoryEventStore();
    await record(other, Array.from({ length: 30 }, (_, i): Rec => ({ run: i % 4, owner: 0, tool: 0, ms: i, kind: 'called' })));
    await snapshotOf(other, snapshots, 10);
    expect(snapshots.stored(RUNS_SNAPSHOT)?.head).toMatchObject({ eventCount: 30 });
    // This store's log: other runs, fewer events; the snapshot's last event is not here at its position.
    const store = createMemoryEventStore();
    await record(store, Array.from({ length: 6 }, (_, i): Rec => ({ run: 7 + (i % 2), owner: 1, tool: 1, ms: i, kind: 'called' })));
    const { logged, log } = loggedLines();
    const counted = counting(store);
    expect((await new RunsIndex(counted, { snapshots, log }).list()).runs).toEqual(await listRuns(store));
    expect(counted.read).toBe(6);
    expect(logged).toEqual(['warn runs snapshot ends at an event this store does not have there: the runs index is read from the log']);
    // On its own log the same snapshot is used: nothing before it is read again.
    const own = counting(other);
    expect((await new RunsIndex(own, { snapshots }).list()).runs).toEqual(await listRuns(other));
    expect(own.read).toBe(0);
  });

  it('as a read-only verb\'s, reads the snapshot and never writes one', async () => {
    const store = createMemoryEventStore();
    const snapshots = createMemorySnapshots();
    await record(store, Array.from({ length: 30 }, (_, i): Rec => ({ run: i % 4, owner: 0, tool: 0, ms: i, kind: 'called' })));
    const reader = new RunsIndex(store, { snapshots, snapshotEvery: 1, readSnapshotOnly: true });
    await reader.list();
    await reader.settled();
    expect(snapshots.stored(RUNS_SNAPSHOT)).toBeUndefined();
    const writer = new RunsIndex(store, { snapshots, snapshotEvery: 1 });
    await writer.list();
    await writer.settled();
    await record(store, [{ run: 5, owner: 1, tool: 1, ms: 40, kind: 'called' }]);
    const counted = counting(store);
    expect((await new RunsIndex(counted, { snapshots, readSnapshotOnly: true }).list()).runs).toEqual(await listRuns(store));
    expect(counted.read).toBe(1);
  });

  it('starts from the snapshot: only the events after it are read', async () => {
    const store = counting(createMemoryEventStore());
    const snapshots = createMemorySnapshots();
    await record(store, Array.from({ length: 50 }, (_, i): Rec => ({ run: i % 7, owner: i % 2, tool: 1, ms: i, kind: 'called' })));
    await snapshotOf(store, snapshots, 10);
    await record(store, [{ run: 9, owner: 2, tool: 2, ms: 60, kind: 'intent' }]);
    store.read = 0;
    const { runs } = await new RunsIndex(store, { snapshots }).list();
    expect(store.read).toBe(1);
    expect(runs).toEqual(await listRuns(store));
  });

  it('lets the thread go between pages of a store that answers at once: the wait ends, other work runs', async () => {
    const store = createMemoryEventStore();
    const owner = owners[0]!;
    for (let b = 0; b < 30; b++) {
      const requests = Array.from({ length: 1000 }, (_, k) => ({ streamId: runStream(`r${(b * 1000 + k) % 500}`, owner), expectedRevision: 'any' as const, events: [{ type: 'ToolCalled', data: { runId: `r${(b * 1000 + k) % 500}`, ...owner, tool: 't.a', version: '1.0.0', at: at(b * 1000 + k), callId: `x${b}-${k}`, outcome: 'ok' } }] }));
      await store.appendMany(requests);
    }
    const index = new RunsIndex(store);
    let ranMeanwhile = false;
    setTimeout(() => (ranMeanwhile = true), 0);
    const waited = await index.list({}, { waitMs: 1 });
    expect(waited.reading?.events).toBeLessThan(30_000);
    expect(ranMeanwhile).toBe(true);
    expect((await index.list({ limit: 500 })).runs).toHaveLength(500);
  });

  it('says how far it has read when the read outlasts the wait, and shares one read between views', async () => {
    const inner = createMemoryEventStore();
    await record(inner, [{ run: 1, owner: 0, tool: 0, ms: 1, kind: 'called' }]);
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let reads = 0;
    const slow = Object.create(inner) as EventStore;
    Object.defineProperty(slow, 'scan', { value: undefined });
    Object.defineProperty(slow, 'readAllPage', { value: undefined });
    slow.readAll = async (o) => {
      reads++;
      await gate;
      return inner.readAll(o);
    };
    const index = new RunsIndex(slow);
    const waited = await index.list({}, { waitMs: 20 });
    expect(waited).toEqual({ runs: [], reading: { events: 0 } });
    expect(String(runsPage(waited))).toContain('Reading the call log: 0 call records so far. Reload in a moment.');
    const later = index.list();
    release();
    expect((await later).runs.map((r) => r.runId)).toEqual(['run-1']);
    // The first view's read, then the empty page that ends it: one read for both views.
    expect(reads).toBe(2);
    expect(String(runsPage(await index.list({}, { waitMs: 1000 })))).toContain('run-1');
  });
});
