/**
 * The one contract every EventStore adapter keeps (src/app/ports.ts). Each adapter's test file calls
 * `eventStoreContract(name, factory)`. Every test works in streams with a fresh random prefix and reads the global
 * log only through that prefix, so the suite can run against a shared database that is never cleaned.
 *
 * `readAll` may lag a commit while an earlier-started transaction is still in flight: that is how a PostgreSQL store
 * avoids ever skipping an event. So before asserting on the global log the suite waits until the events it wrote are
 * visible, then asserts exactly; to prove that nothing was written it appends a marker afterwards and waits for that.
 */
import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  ConcurrencyError,
  type EventStore,
  type ExpectedRevision,
  type StoredEvent,
  type Subscription,
} from '#app/ports';
import { readPages, readStreamPages } from '#app/read-pages';
import { rejection } from '../fixtures/rejection.ts';

export interface EventStoreFixture {
  store: EventStore;
  cleanup(): Promise<void>;
  /**
   * Optional: a second, independent connection to the SAME store (another process would use one). When given, the
   * suite checks that a subscription on one sees events appended through the other.
   */
  connectAgain?(): Promise<EventStore>;
}

const WAIT = { timeout: 10_000, interval: 10 };
/** How long to watch for something that must NOT happen; not a timing assertion, only a window to catch a bug. */
const QUIET_MS = 400;

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

const ev = (type: string, data: unknown = {}): { type: string; data: unknown } => ({ type, data });

function numbered(count: number, type = 'Numbered'): { type: string; data: unknown }[] {
  return Array.from({ length: count }, (_, i) => ev(type, { i }));
}

async function expectConflict(
  promise: Promise<unknown>,
  streamId: string,
  expected: ExpectedRevision,
  actual: number,
): Promise<void> {
  const error = await rejection(promise);
  expect(error).toBeInstanceOf(ConcurrencyError);
  const conflict = error as ConcurrencyError;
  expect(conflict.name).toBe('ConcurrencyError');
  expect(conflict.streamId).toBe(streamId);
  expect(conflict.expected).toEqual(expected);
  // `actual` is optional in the port; when an adapter reports it, it must be right.
  if (conflict.actual !== undefined) expect(conflict.actual).toBe(actual);
}

/** Every event under `prefix`, paging the global log with a small page so paging itself is exercised. */
async function readAllUnder(store: EventStore, prefix: string, limit = 1000): Promise<StoredEvent[]> {
  const out: StoredEvent[] = [];
  let after: string | null = null;
  for (;;) {
    const page = await store.readAll({ after, limit, streamPrefix: prefix });
    if (page.length === 0) return out;
    expect(page.length).toBeLessThanOrEqual(limit);
    out.push(...page);
    after = page[page.length - 1]!.position;
  }
}

const summary = (events: StoredEvent[]): string[] => events.map((e) => `${e.streamId}#${e.revision}:${e.type}`);

export function eventStoreContract(name: string, factory: () => Promise<EventStoreFixture>): void {
  describe(`EventStore contract: ${name}`, () => {
    let fixture: EventStoreFixture;
    let store: EventStore;
    let prefix: string;
    const subscriptions: Subscription[] = [];
    const extraStores: EventStore[] = [];

    const stream = (label: string): string => `${prefix}${label}`;

    /** Waits until at least `count` events under `under` are visible to readAll, and returns them all. */
    async function visible(count: number, under = prefix): Promise<StoredEvent[]> {
      return vi.waitFor(async () => {
        const events = await readAllUnder(store, under);
        expect(events.length).toBeGreaterThanOrEqual(count);
        return events;
      }, WAIT);
    }

    /** Everything under the prefix once a marker appended NOW is visible, minus the marker. */
    async function settledLog(): Promise<StoredEvent[]> {
      const marker = stream('~marker');
      const { positions } = await store.append(marker, [ev('Marker')], { expectedRevision: 'any' });
      const events = await vi.waitFor(async () => {
        const all = await readAllUnder(store, prefix);
        expect(all.map((e) => e.position)).toContain(positions[0]);
        return all;
      }, WAIT);
      return events.filter((e) => e.streamId !== marker);
    }

    /** Subscribes and collects every delivered event; `batches` counts deliveries. */
    function collect(
      target: EventStore,
      options: { after?: string | null; streamPrefix?: string } = {},
    ): { events: StoredEvent[]; errors: unknown[]; subscription: Subscription } {
      const events: StoredEvent[] = [];
      const errors: unknown[] = [];
      const subscription = target.subscribe({
        after: options.after ?? null,
        streamPrefix: options.streamPrefix ?? prefix,
        onEvents: (batch) => {
          events.push(...batch);
        },
        onError: (error) => {
          errors.push(error);
        },
      });
      subscriptions.push(subscription);
      return { events, errors, subscription };
    }

    beforeEach(async () => {
      fixture = await factory();
      store = fixture.store;
      prefix = `ct${randomUUID().replaceAll('-', '').slice(0, 12)}-`;
    });

    afterEach(async () => {
      for (const s of subscriptions.splice(0)) await s.close();
      for (const s of extraStores.splice(0)) await s.close();
      await fixture.cleanup();
    });

    it('has a kind', () => {
      expect(typeof store.kind).toBe('string');
      expect(store.kind.length).toBeGreaterThan(0);
    });

    describe('append and readStream', () => {
      it('round-trips events and numbers revisions from 0', async () => {
        const id = stream('tool-a');
        const first = await store.append(id, [ev('A', { n: 1 }), ev('B', { n: 2 })], { expectedRevision: 'no_stream' });
        expect(first.revision).toBe(1);
        expect(first.positions).toHaveLength(2);
        const second = await store.append(id, [ev('C', { n: 3 })], { expectedRevision: 1 });
        expect(second.revision).toBe(2);
        expect(second.positions).toHaveLength(1);

        const events = await store.readStream(id);
        expect(events.map((e) => e.revision)).toEqual([0, 1, 2]);
        expect(events.map((e) => e.type)).toEqual(['A', 'B', 'C']);
        expect(events.map((e) => e.data)).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }]);
        expect(events.every((e) => e.streamId === id)).toBe(true);
        expect(events.map((e) => e.position)).toEqual([...first.positions, ...second.positions]);
      });

      it('keeps revision order past ten events, one append at a time with exact revisions', async () => {
        // Revisions as numbers, not text: '10' must come after '9' (a stream with 12 versions once looped on conflicts).
        const id = stream('long');
        for (let i = 0; i < 12; i++) await store.append(id, [ev('E', { i })], { expectedRevision: i === 0 ? 'no_stream' : i - 1 });
        const events = await store.readStream(id);
        expect(events.map((e) => e.revision)).toEqual(Array.from({ length: 12 }, (_, i) => i));
        expect(events.map((e) => (e.data as { i: number }).i)).toEqual(Array.from({ length: 12 }, (_, i) => i));
        expect((await store.readStream(id, { fromRevision: 9 })).map((e) => e.revision)).toEqual([9, 10, 11]);
      });

      it('reads an unknown stream as empty', async () => {
        expect(await store.readStream(stream('never-written'))).toEqual([]);
      });

      it('reads from a given revision', async () => {
        const id = stream('from');
        await store.append(id, numbered(5), { expectedRevision: 'no_stream' });
        const tail = await store.readStream(id, { fromRevision: 2 });
        expect(tail.map((e) => e.revision)).toEqual([2, 3, 4]);
        expect(tail.map((e) => e.data)).toEqual([{ i: 2 }, { i: 3 }, { i: 4 }]);
        expect(await store.readStream(id, { fromRevision: 0 })).toHaveLength(5);
        expect(await store.readStream(id, { fromRevision: 5 })).toEqual([]);
      });

      it('reads at most `limit` events, page after page with readStreamPages', async () => {
        const id = stream('limited');
        await store.append(id, numbered(12), { expectedRevision: 'no_stream' });
        expect((await store.readStream(id, { limit: 1 })).map((e) => e.revision)).toEqual([0]);
        expect((await store.readStream(id, { fromRevision: 10, limit: 1 })).map((e) => e.data)).toEqual([{ i: 10 }]);
        expect((await store.readStream(id, { fromRevision: 9, limit: 5 })).map((e) => e.revision)).toEqual([9, 10, 11]);
        expect(await store.readStream(id, { fromRevision: 12, limit: 5 })).toEqual([]);
        const pages: number[][] = [];
        for await (const page of readStreamPages(store, id, { fromRevision: 1, pageSize: 5 })) pages.push(page.map((e) => e.revision));
        expect(pages).toEqual([[1, 2, 3, 4, 5], [6, 7, 8, 9, 10], [11]]);
        const whole: number[][] = [];
        for await (const page of readStreamPages(store, id, { pageSize: 6 })) whole.push(page.map((e) => e.revision));
        expect(whole).toEqual([Array.from({ length: 6 }, (_, i) => i), Array.from({ length: 6 }, (_, i) => i + 6)]);
        for await (const page of readStreamPages(store, stream('never-written'))) expect(page, 'no page for a stream never written').toBeUndefined();
      });

      it('lists the streams under a prefix by id, where the store can (streamIds)', async (ctx) => {
        if (!store.streamIds) return ctx.skip();
        const base = stream('ids');
        for (const tail of ['@b', '@a', '@c', 'x@a', '@B', '@-z', '_a', '%a']) await store.append(`${base}${tail}`, [ev('E')], { expectedRevision: 'no_stream' });
        await store.append(`${base}@a`, [ev('E')], { expectedRevision: 0 });
        // Byte order ('-' < 'B' < 'a'), whatever the database's collation would say.
        expect(await store.streamIds(`${base}@`)).toEqual([`${base}@-z`, `${base}@B`, `${base}@a`, `${base}@b`, `${base}@c`]);
        expect(await store.streamIds(`${base}@a`)).toEqual([`${base}@a`]);
        expect(await store.streamIds(`${base}@z`)).toEqual([]);
        // A prefix is a prefix, not a pattern: '_' and '%' match only themselves.
        expect(await store.streamIds(`${base}_`)).toEqual([`${base}_a`]);
        expect(await store.streamIds(`${base}%`)).toEqual([`${base}%a`]);
      });

      it('reads backwards, newest first: the last event alone, or down from a revision', async () => {
        const id = stream('backwards');
        await store.append(id, numbered(12), { expectedRevision: 'no_stream' });
        const [last] = await store.readStream(id, { direction: 'backwards', limit: 1 });
        expect(last).toMatchObject({ revision: 11, data: { i: 11 } });
        expect((await store.readStream(id, { direction: 'backwards', fromRevision: 4, limit: 3 })).map((e) => e.revision)).toEqual([4, 3, 2]);
        expect((await store.readStream(id, { direction: 'backwards', fromRevision: 1 })).map((e) => e.revision)).toEqual([1, 0]);
        expect((await store.readStream(id, { direction: 'backwards' })).map((e) => e.revision)).toEqual(Array.from({ length: 12 }, (_, i) => 11 - i));
        // The same events as a forward read gives, position and all.
        expect((await store.readStream(id, { direction: 'backwards', fromRevision: 7, limit: 1 }))[0]).toEqual((await store.readStream(id, { fromRevision: 7, limit: 1 }))[0]);
        expect(await store.readStream(stream('never-written'), { direction: 'backwards', limit: 1 })).toEqual([]);
        expect(await store.readStream(id, { direction: 'backwards', fromRevision: -1 })).toEqual([]);
      });

      it('keeps streams apart', async () => {
        const a = stream('a');
        const b = stream('b');
        await store.append(a, [ev('A1')], { expectedRevision: 'no_stream' });
        await store.append(b, [ev('B1')], { expectedRevision: 'no_stream' });
        await store.append(a, [ev('A2')], { expectedRevision: 0 });
        expect((await store.readStream(a)).map((e) => e.type)).toEqual(['A1', 'A2']);
        expect((await store.readStream(b)).map((e) => e.type)).toEqual(['B1']);
        expect((await store.readStream(b))[0]!.revision).toBe(0);
      });

      it('round-trips JSON payloads exactly (unicode, nesting, numbers, escapes)', async () => {
        const id = stream('json');
        const data = {
          text: 'héllo wörld — 日本語 — emoji 🚀👩‍👩‍👧 — RTL עברית',
          escapes: 'quote " backslash \\ newline \n tab \t slash / percent % underscore _',
          nested: { deeper: { deepest: [1, [2, [3, { four: 4 }]]], empty: {}, none: [] } },
          numbers: { int: 42, negative: -7, zero: 0, float: 3.25, big: 9_007_199_254_740_991, exp: 1.5e-10 },
          flags: [true, false, null],
          'key with spaces and ünïcode': 'ok',
        };
        await store.append(id, [ev('Json', data), ev('Scalar', 'just a string'), ev('List', [1, 'two', null])], {
          expectedRevision: 'no_stream',
        });
        const [first, second, third] = await store.readStream(id);
        expect(first!.data).toEqual(data);
        expect(second!.data).toBe('just a string');
        expect(third!.data).toEqual([1, 'two', null]);
        // What one reader gets must not be shared with the next one.
        (first!.data as { text: string }).text = 'mutated';
        expect(((await store.readStream(id))[0]!.data as { text: string }).text).toBe(data.text);
      });

      it('records recordedAt as an ISO-8601 timestamp', async () => {
        const id = stream('time');
        const before = Date.now();
        await store.append(id, [ev('T')], { expectedRevision: 'no_stream' });
        const after = Date.now();
        const [event] = await store.readStream(id);
        expect(event!.recordedAt).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/);
        const at = Date.parse(event!.recordedAt);
        // Whole seconds of slack either side: the database clock may round or differ slightly from ours.
        expect(at).toBeGreaterThanOrEqual(before - 5_000);
        expect(at).toBeLessThanOrEqual(after + 5_000);
      });

      it('keeps a given recordedAt (estate copy carries history over), in append and appendMany', async () => {
        const id = stream('copied');
        const other = stream('copied-too');
        const t1 = '2020-02-29T23:59:58.123Z';
        const t2 = '2021-06-01T00:00:00.000Z';
        await store.append(id, [{ type: 'C', data: {}, recordedAt: t1 }, ev('Now')], { expectedRevision: 'no_stream' });
        await store.appendMany([{ streamId: other, events: [{ type: 'C', data: {}, recordedAt: t2 }], expectedRevision: 'no_stream' }]);
        const [copied, now] = await store.readStream(id);
        expect(Date.parse(copied!.recordedAt)).toBe(Date.parse(t1));
        expect(Date.parse(now!.recordedAt)).toBeGreaterThan(Date.parse(t2));
        expect(Date.parse((await store.readStream(other))[0]!.recordedAt)).toBe(Date.parse(t2));
      });
    });

    describe('expected revision', () => {
      it('no_stream succeeds on a new stream and conflicts on an existing one', async () => {
        const id = stream('ns');
        await store.append(id, [ev('A')], { expectedRevision: 'no_stream' });
        await expectConflict(store.append(id, [ev('B')], { expectedRevision: 'no_stream' }), id, 'no_stream', 0);
        expect(await store.readStream(id)).toHaveLength(1);
      });

      it('exists conflicts on a new stream and succeeds on an existing one', async () => {
        const id = stream('ex');
        await expectConflict(store.append(id, [ev('A')], { expectedRevision: 'exists' }), id, 'exists', -1);
        expect(await store.readStream(id)).toEqual([]);
        await store.append(id, [ev('A')], { expectedRevision: 'no_stream' });
        const result = await store.append(id, [ev('B')], { expectedRevision: 'exists' });
        expect(result.revision).toBe(1);
      });

      it('any succeeds on new and existing streams', async () => {
        const id = stream('any');
        expect((await store.append(id, [ev('A')], { expectedRevision: 'any' })).revision).toBe(0);
        expect((await store.append(id, [ev('B'), ev('C')], { expectedRevision: 'any' })).revision).toBe(2);
        expect((await store.readStream(id)).map((e) => e.revision)).toEqual([0, 1, 2]);
      });

      it('an exact revision succeeds when right and conflicts when wrong', async () => {
        const id = stream('exact');
        await store.append(id, numbered(3), { expectedRevision: 'no_stream' });
        await expectConflict(store.append(id, [ev('X')], { expectedRevision: 1 }), id, 1, 2);
        await expectConflict(store.append(id, [ev('X')], { expectedRevision: 3 }), id, 3, 2);
        await expectConflict(store.append(id, [ev('X')], { expectedRevision: 0 }), id, 0, 2);
        expect(await store.readStream(id)).toHaveLength(3);
        expect((await store.append(id, [ev('Y')], { expectedRevision: 2 })).revision).toBe(3);
      });

      it('an exact revision on a missing stream conflicts', async () => {
        const id = stream('exact-missing');
        await expectConflict(store.append(id, [ev('X')], { expectedRevision: 0 }), id, 0, -1);
        expect(await store.readStream(id)).toEqual([]);
      });

      it('-1 as an exact revision means "no stream"', async () => {
        const id = stream('minus-one');
        expect((await store.append(id, [ev('A')], { expectedRevision: -1 })).revision).toBe(0);
        await expectConflict(store.append(id, [ev('B')], { expectedRevision: -1 }), id, -1, 0);
        expect(await store.readStream(id)).toHaveLength(1);
      });

      it('writes nothing on a conflict, not even part of a multi-event append', async () => {
        const id = stream('nothing');
        await store.append(id, [ev('A')], { expectedRevision: 'no_stream' });
        const before = await visible(1);
        await expectConflict(store.append(id, numbered(3), { expectedRevision: 5 }), id, 5, 0);
        expect(await store.readStream(id)).toHaveLength(1);
        expect(summary(await settledLog())).toEqual(summary(before));
      });

      it('two concurrent appends with the same expected revision: exactly one wins', async () => {
        const id = stream('race');
        await store.append(id, [ev('Base')], { expectedRevision: 'no_stream' });
        const outcomes = await Promise.allSettled([
          store.append(id, [ev('Left')], { expectedRevision: 0 }),
          store.append(id, [ev('Right')], { expectedRevision: 0 }),
        ]);
        const won = outcomes.filter((o) => o.status === 'fulfilled');
        const lost = outcomes.filter((o): o is PromiseRejectedResult => o.status === 'rejected');
        expect(won).toHaveLength(1);
        expect(lost).toHaveLength(1);
        expect(lost[0]!.reason).toBeInstanceOf(ConcurrencyError);
        const events = await store.readStream(id);
        expect(events.map((e) => e.revision)).toEqual([0, 1]);
        expect(['Left', 'Right']).toContain(events[1]!.type);
      });

      it('two concurrent first appends with no_stream: exactly one wins', async () => {
        const id = stream('race-new');
        const outcomes = await Promise.allSettled(
          ['One', 'Two', 'Three'].map((type) => store.append(id, [ev(type)], { expectedRevision: 'no_stream' })),
        );
        expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(1);
        for (const o of outcomes) if (o.status === 'rejected') expect(o.reason).toBeInstanceOf(ConcurrencyError);
        expect(await store.readStream(id)).toHaveLength(1);
      });
    });

    describe('appendMany', () => {
      it('appends to several streams and returns results in request order', async () => {
        const a = stream('run-a');
        const b = stream('run-b');
        await store.append(b, [ev('B0')], { expectedRevision: 'no_stream' });
        const results = await store.appendMany([
          { streamId: a, events: [ev('A0'), ev('A1')], expectedRevision: 'no_stream' },
          { streamId: b, events: [ev('B1')], expectedRevision: 0 },
        ]);
        expect(results).toHaveLength(2);
        expect(results[0]!.revision).toBe(1);
        expect(results[0]!.positions).toHaveLength(2);
        expect(results[1]!.revision).toBe(1);
        expect(results[1]!.positions).toHaveLength(1);
        const aEvents = await store.readStream(a);
        const bEvents = await store.readStream(b);
        expect(aEvents.map((e) => e.type)).toEqual(['A0', 'A1']);
        expect(bEvents.map((e) => e.type)).toEqual(['B0', 'B1']);
        expect(aEvents.map((e) => e.position)).toEqual(results[0]!.positions);
        expect([bEvents[1]!.position]).toEqual(results[1]!.positions);
      });

      it('is all or nothing: one conflicting request writes nothing at all', async () => {
        const a = stream('all-a');
        const b = stream('all-b');
        await store.append(b, [ev('B0')], { expectedRevision: 'no_stream' });
        const before = await visible(1);
        await expectConflict(
          store.appendMany([
            { streamId: a, events: [ev('A0')], expectedRevision: 'no_stream' },
            { streamId: b, events: [ev('B1')], expectedRevision: 'no_stream' },
          ]),
          b,
          'no_stream',
          0,
        );
        expect(await store.readStream(a)).toEqual([]);
        expect(await store.readStream(b)).toHaveLength(1);
        expect(summary(await settledLog())).toEqual(summary(before));
      });

      it('accepts an empty request list', async () => {
        expect(await store.appendMany([])).toEqual([]);
      });
    });

    describe('readAll', () => {
      it('returns events in append order and pages strictly after a position', async () => {
        const a = stream('tool-x');
        const b = stream('tool-y');
        await store.append(a, [ev('A0'), ev('A1')], { expectedRevision: 'no_stream' });
        await store.append(b, [ev('B0')], { expectedRevision: 'no_stream' });
        await store.append(a, [ev('A2')], { expectedRevision: 1 });
        await store.append(b, [ev('B1'), ev('B2')], { expectedRevision: 0 });
        const expected = [`${a}#0:A0`, `${a}#1:A1`, `${b}#0:B0`, `${a}#2:A2`, `${b}#1:B1`, `${b}#2:B2`];
        await visible(expected.length);

        expect(summary(await store.readAll({ streamPrefix: prefix }))).toEqual(expected);
        for (const limit of [1, 2, 4]) expect(summary(await readAllUnder(store, prefix, limit))).toEqual(expected);

        const all = await store.readAll({ streamPrefix: prefix });
        const afterThird = await store.readAll({ streamPrefix: prefix, after: all[2]!.position });
        expect(summary(afterThird)).toEqual(expected.slice(3));
        const page = await store.readAll({ streamPrefix: prefix, after: all[0]!.position, limit: 2 });
        expect(summary(page)).toEqual(expected.slice(1, 3));
      });

      it('returns nothing after the last position', async () => {
        const id = stream('last');
        const { positions } = await store.append(id, numbered(3), { expectedRevision: 'no_stream' });
        await visible(3);
        expect(await store.readAll({ streamPrefix: prefix, after: positions[2]! })).toEqual([]);
        expect(await store.readAll({ streamPrefix: prefix, after: positions[1]! })).toHaveLength(1);
      });

      it('gives every event a unique string position, the same one everywhere', async () => {
        const ids = [stream('p1'), stream('p2'), stream('p3')];
        const appended: string[] = [];
        for (let round = 0; round < 4; round++) {
          for (const id of ids) {
            const result = await store.append(id, numbered(2), { expectedRevision: round === 0 ? 'no_stream' : round * 2 - 1 });
            appended.push(...result.positions);
          }
        }
        expect(appended.every((p) => typeof p === 'string' && p.length > 0)).toBe(true);
        expect(new Set(appended).size).toBe(appended.length);
        await visible(appended.length);
        expect((await readAllUnder(store, prefix, 5)).map((e) => e.position)).toEqual(appended);
        const fromStreams = (await Promise.all(ids.map((id) => store.readStream(id)))).flat().map((e) => e.position);
        expect(new Set(fromStreams)).toEqual(new Set(appended));
      });

      it('filters by stream prefix, literally', async () => {
        const tool = stream('tool-one');
        const run = stream('run-one');
        const wildcardBait = stream('tool_one'); // `_` and `%` are LIKE wildcards: a prefix must match literally
        const percent = stream('to%l-two');
        await store.append(tool, [ev('T')], { expectedRevision: 'no_stream' });
        await store.append(run, [ev('R')], { expectedRevision: 'no_stream' });
        await store.append(wildcardBait, [ev('W')], { expectedRevision: 'no_stream' });
        await store.append(percent, [ev('P')], { expectedRevision: 'no_stream' });
        await store.append(`x${tool}`, [ev('Outside')], { expectedRevision: 'no_stream' });
        await visible(4);
        await visible(1, `x${prefix}`);

        expect(summary(await store.readAll({ streamPrefix: stream('tool-') }))).toEqual([`${tool}#0:T`]);
        expect(summary(await store.readAll({ streamPrefix: stream('run-') }))).toEqual([`${run}#0:R`]);
        expect(summary(await store.readAll({ streamPrefix: stream('tool_') }))).toEqual([`${wildcardBait}#0:W`]);
        expect(summary(await store.readAll({ streamPrefix: stream('to%') }))).toEqual([`${percent}#0:P`]);
        expect(summary(await store.readAll({ streamPrefix: stream('') }))).toHaveLength(4);
      });

      it('caps a page at the requested limit and at 1000 by default', async () => {
        const id = stream('big');
        await store.append(id, numbered(1_050), { expectedRevision: 'no_stream' });
        await visible(1_050);
        const firstPage = await store.readAll({ streamPrefix: prefix });
        expect(firstPage.length).toBeGreaterThan(0);
        expect(firstPage.length).toBeLessThanOrEqual(1000);
        expect((await store.readAll({ streamPrefix: prefix, limit: 7 })).length).toBeLessThanOrEqual(7);
        const everything = await readAllUnder(store, prefix, 400);
        expect(everything.map((e) => e.revision)).toEqual(Array.from({ length: 1_050 }, (_, i) => i));
      });
    });

    describe('readAllPage (optional: a page of readAll and whether it reached the end)', () => {
      /** Every page from `after` to the first that says end, each checked against a plain readAll after it. */
      const pagesToEnd = async (options: { after?: string | null; limit: number; streamPrefix: string }) => {
        const pages: { events: StoredEvent[]; end: boolean }[] = [];
        let after = options.after ?? null;
        for (let i = 0; i < 50; i++) {
          const page = await store.readAllPage!({ ...options, after });
          expect(page.events.length).toBeLessThanOrEqual(options.limit);
          expect(summary(page.events)).toEqual(summary(await store.readAll({ ...options, after })));
          pages.push(page);
          if (page.events.length > 0) after = page.events[page.events.length - 1]!.position;
          if (page.end) {
            // The promise `end` makes: nothing visible follows the page.
            expect(await store.readAll({ ...options, after })).toEqual([]);
            return pages;
          }
          if (page.events.length === 0) throw new Error('an empty page that does not say end');
        }
        throw new Error('no page said end in 50 pages');
      };

      /** tool-a's events, then run-r's (outside the prefix), then tool-b's; returns the tool events as the log holds them. */
      const toolsAroundRuns = async (inA: number, runs: number, inB: number): Promise<StoredEvent[]> => {
        await store.append(stream('tool-a'), numbered(inA), { expectedRevision: 'no_stream' });
        await store.append(stream('run-r'), numbered(runs), { expectedRevision: 'no_stream' });
        await store.append(stream('tool-b'), numbered(inB), { expectedRevision: 'no_stream' });
        return (await settledLog()).filter((e) => e.streamId.startsWith(stream('tool-')));
      };
      const NO_READ_ALL_PAGE = 'this store has no readAllPage: a catch-up reads until an empty page';

      it('pages under a prefix to the end, the last page saying so, no page saying it early', async (context) => {
        if (!store.readAllPage) return context.skip(NO_READ_ALL_PAGE);
        const tools = await toolsAroundRuns(6, 3, 3);

        for (const limit of [1, 4, 9, 1000]) {
          const pages = await pagesToEnd({ limit, streamPrefix: stream('tool-') });
          expect(pages.flatMap((p) => p.events)).toEqual(tools);
          // A full page with more behind it cannot be the end.
          if (limit < tools.length) expect(pages[0]!.end).toBe(false);
        }
        expect(await store.readAllPage({ after: tools[tools.length - 1]!.position, limit: 4, streamPrefix: stream('tool-') })).toEqual({ events: [], end: true });
        expect(await store.readAllPage({ limit: 4, streamPrefix: stream('none-') })).toEqual({ events: [], end: true });
      });

      it('a page short of the limit is not called the end while matching events lie beyond what the read looked at', async (context) => {
        if (!store.readAllPage) return context.skip(NO_READ_ALL_PAGE);
        // More rows outside the prefix between two matches than PostgreSQL reads in one window (5,000).
        const tools = await toolsAroundRuns(1, 5_050, 1);
        expect(tools.map((e) => e.streamId)).toEqual([stream('tool-a'), stream('tool-b')]);
        const pages = await pagesToEnd({ limit: 4, streamPrefix: stream('tool-') });
        expect(pages.flatMap((p) => p.events)).toEqual(tools);
      });
    });

    describe('readPages (the store\'s scan where it has one, else readAll page by page)', () => {
      const gather = async (options: { after?: string | null; limit: number; streamPrefix: string }): Promise<StoredEvent[][]> => {
        const pages: StoredEvent[][] = [];
        for await (const page of readPages(store, options)) pages.push(page);
        return pages;
      };

      it('reads the log under a prefix from a position to its end, in readAll order, in pages of at most the limit', async () => {
        const a = stream('tool-a');
        const b = stream('tool-b');
        await store.append(a, numbered(6), { expectedRevision: 'no_stream' });
        await store.append(stream('run-r'), numbered(2), { expectedRevision: 'no_stream' });
        await store.append(b, numbered(5), { expectedRevision: 'no_stream' });
        const expected = await settledLog();
        const tools = expected.filter((e) => e.streamId.startsWith(stream('tool-')));

        const pages = await gather({ limit: 4, streamPrefix: stream('tool-') });
        expect(pages.every((p) => p.length > 0 && p.length <= 4)).toBe(true);
        expect(pages.flat()).toEqual(tools);
        expect((await gather({ after: tools[2]!.position, limit: 1000, streamPrefix: stream('tool-') })).flat()).toEqual(tools.slice(3));
        expect(await gather({ after: tools[tools.length - 1]!.position, limit: 4, streamPrefix: stream('tool-') })).toEqual([]);
        expect(await gather({ limit: 4, streamPrefix: stream('none-') })).toEqual([]);
      });

      it('leaving the loop early stops the read and leaves the store working', async () => {
        await store.append(stream('tool-x'), numbered(12), { expectedRevision: 'no_stream' });
        await visible(12);
        let seen = 0;
        for await (const page of readPages(store, { limit: 3, streamPrefix: prefix })) {
          seen += page.length;
          break;
        }
        expect(seen).toBe(3);
        await store.append(stream('tool-x'), numbered(1), { expectedRevision: 11 });
        expect(await visible(13)).toHaveLength(13);
      });
    });

    describe('subscribe', () => {
      it('catches up, then receives new events in order without duplicates', async () => {
        const a = stream('sa');
        const b = stream('sb');
        await store.append(a, numbered(3, 'Old'), { expectedRevision: 'no_stream' });
        const sub = collect(store);
        await vi.waitFor(() => expect(sub.events).toHaveLength(3), WAIT);

        await store.append(a, [ev('New1')], { expectedRevision: 2 });
        await store.append(b, [ev('New2'), ev('New3')], { expectedRevision: 'no_stream' });
        await store.append(a, [ev('New4')], { expectedRevision: 3 });
        await vi.waitFor(() => expect(sub.events.length).toBeGreaterThanOrEqual(7), WAIT);
        await sleep(QUIET_MS);

        expect(summary(sub.events)).toEqual(summary(await readAllUnder(store, prefix)));
        expect(sub.events.map((e) => e.type)).toEqual(['Old', 'Old', 'Old', 'New1', 'New2', 'New3', 'New4']);
        expect(new Set(sub.events.map((e) => e.position)).size).toBe(7);
        expect(sub.errors).toEqual([]);
      });

      it('catches up across more than one page', async () => {
        const id = stream('many');
        await store.append(id, numbered(1_200), { expectedRevision: 'no_stream' });
        const sub = collect(store);
        await vi.waitFor(() => expect(sub.events.length).toBeGreaterThanOrEqual(1_200), WAIT);
        await store.append(id, [ev('After')], { expectedRevision: 1_199 });
        await vi.waitFor(() => expect(sub.events.length).toBeGreaterThanOrEqual(1_201), WAIT);
        expect(sub.events.map((e) => e.revision)).toEqual(Array.from({ length: 1_201 }, (_, i) => i));
      });

      it('starts strictly after the given position', async () => {
        const id = stream('after');
        const { positions } = await store.append(id, numbered(4), { expectedRevision: 'no_stream' });
        const sub = collect(store, { after: positions[1]! });
        await vi.waitFor(() => expect(sub.events).toHaveLength(2), WAIT);
        await store.append(id, [ev('Later')], { expectedRevision: 3 });
        await vi.waitFor(() => expect(sub.events).toHaveLength(3), WAIT);
        expect(sub.events.map((e) => e.revision)).toEqual([2, 3, 4]);
      });

      it('only delivers streams under its prefix', async () => {
        const tool = stream('tool-s');
        const run = stream('run-s');
        const sub = collect(store, { streamPrefix: stream('tool-') });
        await store.append(run, [ev('Run')], { expectedRevision: 'no_stream' });
        await store.append(tool, [ev('Tool')], { expectedRevision: 'no_stream' });
        await store.append(run, [ev('Run')], { expectedRevision: 0 });
        await vi.waitFor(() => expect(sub.events).toHaveLength(1), WAIT);
        await sleep(QUIET_MS);
        expect(summary(sub.events)).toEqual([`${tool}#0:Tool`]);
      });

      it('delivers batches one at a time, waiting for each', async () => {
        const id = stream('serial');
        let busy = false;
        let overlaps = 0;
        const seen: number[] = [];
        const subscription = store.subscribe({
          after: null,
          streamPrefix: prefix,
          onEvents: async (batch) => {
            if (busy) overlaps++;
            busy = true;
            await sleep(30);
            seen.push(...batch.map((e) => e.revision));
            busy = false;
          },
        });
        subscriptions.push(subscription);
        for (let i = 0; i < 6; i++) {
          await store.append(id, [ev('S')], { expectedRevision: i === 0 ? 'no_stream' : i - 1 });
          await sleep(5);
        }
        await vi.waitFor(() => expect(seen).toHaveLength(6), WAIT);
        expect(overlaps).toBe(0);
        expect(seen).toEqual([0, 1, 2, 3, 4, 5]);
      });

      it('stops delivering once closed', async () => {
        const id = stream('close');
        await store.append(id, [ev('Before')], { expectedRevision: 'no_stream' });
        const sub = collect(store);
        await vi.waitFor(() => expect(sub.events).toHaveLength(1), WAIT);
        await sub.subscription.close();
        await store.append(id, [ev('AfterClose')], { expectedRevision: 0 });
        await sleep(QUIET_MS);
        expect(sub.events.map((e) => e.type)).toEqual(['Before']);
      });

      it('sees events appended through another connection', async (context) => {
        if (!fixture.connectAgain) {
          context.skip();
          return;
        }
        const other = await fixture.connectAgain();
        extraStores.push(other);
        const id = stream('elsewhere');
        const sub = collect(store);
        await other.append(id, [ev('FromOther')], { expectedRevision: 'no_stream' });
        await vi.waitFor(() => expect(sub.events).toHaveLength(1), WAIT);
        await other.append(id, [ev('AgainFromOther')], { expectedRevision: 0 });
        await vi.waitFor(() => expect(sub.events).toHaveLength(2), WAIT);
        expect(sub.events.map((e) => e.type)).toEqual(['FromOther', 'AgainFromOther']);
        expect((await store.readStream(id)).map((e) => e.type)).toEqual(['FromOther', 'AgainFromOther']);
      });
    });
  });
}
