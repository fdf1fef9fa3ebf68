/**
 * The bus follower's logic on the memory store and the memory bus, on a hand-driven clock: catch up from the store at
 * start, then one store read per announcement; redeliveries and changes already applied cost no read; a change
 * announced before the store shows it is retried, then reported; a bus down at start is retried while the replica
 * serves what the store holds.
 */
import { silentLog } from '#app/log';
import { describe, expect, it } from 'vitest';
import { followBus } from '#app/bus-follower';
import { CatalogueReader } from '#app/catalogue-reader';
import type { EventStore, StoredEvent } from '#app/ports';
import { changeOfEvent, toolStream, type CatalogueEvent } from '#domain/events';
import { MemoryChangeBus, MemoryChangePublisher, MemoryChangeTopic } from '#bus/memory-change-bus';
import { createMemoryEventStore } from '#store/memory-event-store';
import { aDefinition, deprecatedEvent, publishedEvent } from '../fixtures/builders.ts';
import { ManualTimer } from '../fixtures/manual-timer.ts';

/**
 * The store as a lagging connection sees it: `readAll` shows nothing past `visibleCount` events (Infinity: all), and
 * counts its calls.
 */
const lagging = (store: EventStore) => {
  const state = { visibleCount: Number.POSITIVE_INFINITY, reads: 0 };
  let all: StoredEvent[] = [];
  const view: EventStore = {
    ...store,
    kind: store.kind,
    append: (...a) => store.append(...a),
    appendMany: (r) => store.appendMany(r),
    readStream: (...a) => store.readStream(...a),
    subscribe: (o) => store.subscribe(o),
    close: () => store.close(),
    readAll: async (o) => {
      state.reads++;
      all = await store.readAll({ streamPrefix: o?.streamPrefix ?? '', limit: 100_000 });
      const visible = all.slice(0, state.visibleCount);
      const from = o?.after ? visible.findIndex((e) => e.position === o.after) + 1 : 0;
      return visible.slice(from, from + (o?.limit ?? 1000));
    },
    // The lagging view is readAll's alone: the store's own page-with-end would read past what it lets through.
    readAllPage: undefined,
  };
  return { view, state };
};

const setup = () => {
  const store = createMemoryEventStore();
  const { view, state } = lagging(store);
  const topic = new MemoryChangeTopic();
  const timer = new ManualTimer();
  const warnings: string[] = [];
  const log = { ...silentLog, warn: (_o: object, msg?: string) => void warnings.push(msg ?? '') };
  const reader = new CatalogueReader(view);
  const bus = new MemoryChangeBus({ topic, timer });
  const relayed = new MemoryChangePublisher(topic);
  /** Append to the store, and (unless told otherwise) announce it on the bus as the relay would. */
  const commit = async (event: CatalogueEvent, announce = true) => {
    const name = event.type === 'ToolVersionPublished' ? event.data.definition.name : event.data.name;
    const position = (await store.append(toolStream(name), [event], { expectedRevision: 'any' })).positions[0] as string;
    const change = changeOfEvent(position, event);
    if (announce) await relayed.publish([change]);
    return change;
  };
  const follow = () => followBus(reader, bus, log, { timer, retryMs: 5000 });
  const status = (name: string, version: string) => reader.catalogue.find(name, version)?.status;
  return { topic, timer, warnings, reader, state, commit, relayed, follow, status };
};

describe('bus follower', () => {
  it('catches up from the store at start, then applies each announced change', async () => {
    const { timer, commit, follow, status } = setup();
    await commit(publishedEvent(aDefinition({ name: 'old.tool' })), false);
    const following = await follow();
    expect(status('old.tool', '1.0.0')).toBe('active');
    await commit(publishedEvent(aDefinition({ name: 'new.tool' })));
    await commit(deprecatedEvent('old.tool', '1.0.0'));
    await timer.settle();
    expect(status('new.tool', '1.0.0')).toBe('active');
    expect(status('old.tool', '1.0.0')).toBe('deprecated');
    await following.close();
  });

  it('a redelivered change, or one an earlier read already applied, costs no store read', async () => {
    const { timer, commit, follow, state, relayed } = setup();
    const following = await follow();
    const a = await commit(publishedEvent(aDefinition({ name: 'a.tool' })), false);
    const b = await commit(publishedEvent(aDefinition({ name: 'b.tool' })), false);
    await relayed.publish([a]); // one read brings both a and b
    await timer.settle();
    const reads = state.reads;
    await relayed.publish([a, b, a]);
    await timer.settle();
    expect(state.reads).toBe(reads);
    await following.close();
  });

  it('a change announced before this store connection shows it is read again until it does', async () => {
    const { timer, commit, follow, state, status, warnings } = setup();
    const following = await follow();
    state.visibleCount = 0;
    await commit(publishedEvent(aDefinition({ name: 'lagging.tool' })));
    await timer.advance(10);
    expect(status('lagging.tool', '1.0.0')).toBeUndefined();
    state.visibleCount = Number.POSITIVE_INFINITY;
    await timer.advance(100);
    expect(status('lagging.tool', '1.0.0')).toBe('active');
    expect(warnings).toEqual([]);
    await following.close();
  });

  it('a change the store never shows is reported once the retries run out; the next announcement catches up', async () => {
    const { timer, commit, follow, state, status, warnings } = setup();
    const following = await follow();
    state.visibleCount = 0;
    await commit(publishedEvent(aDefinition({ name: 'missing.tool' })));
    await timer.advance(10_000);
    expect(warnings).toEqual(['bus: announced changes not found in the store; the next announcement will catch up']);
    state.visibleCount = Number.POSITIVE_INFINITY;
    await commit(publishedEvent(aDefinition({ name: 'next.tool' })));
    await timer.settle();
    expect([status('missing.tool', '1.0.0'), status('next.tool', '1.0.0')]).toEqual(['active', 'active']);
    await following.close();
  });

  it('a forged announcement at a position the store will give next hides nothing: the real change there is applied', async () => {
    const { timer, commit, follow, relayed, state, status } = setup();
    const following = await follow();
    const a = await commit(publishedEvent(aDefinition({ name: 'a.tool' })));
    await timer.settle();
    // Whoever can write to the topic names the next positions (a counter here, predictable on PostgreSQL too), each with
    // a change this replica already reflects: it costs no read, and used to mark the position as seen.
    const next = Array.from({ length: 3 }, (_, i) => String(Number(a.position) + 1 + i));
    await relayed.publish(next.map((position) => ({ ...a, position })));
    await timer.settle();
    const reads = state.reads;
    await commit(deprecatedEvent('a.tool', '1.0.0'));
    await commit(publishedEvent(aDefinition({ name: 'b.tool' })));
    await timer.settle();
    expect([status('a.tool', '1.0.0'), status('b.tool', '1.0.0')]).toEqual(['deprecated', 'active']);
    expect(state.reads).toBeGreaterThan(reads);
    await following.close();
  });

  /** An announcement for a position this store never holds: another estate's on a shared topic, or forged. */
  const foreign = (n: number) => ({ type: 'catalogue.changed' as const, position: String(1_000_000 + n), tool: `ghost.t${n}`, version: '1.0.0', event: 'ToolVersionPublished' as const, at: new Date(0).toISOString() });

  it('an announcement the store never shows holds up no change announced after it', async () => {
    const { timer, commit, follow, relayed, status, warnings } = setup();
    const following = await follow();
    await relayed.publish([foreign(1)]);
    await timer.settle();
    // The clock has not moved: no retry pause has passed, yet the real change behind the foreign one is applied.
    await commit(publishedEvent(aDefinition({ name: 'real.tool' })));
    await timer.settle();
    expect(status('real.tool', '1.0.0')).toBe('active');
    expect(warnings).toEqual([]);
    // The foreign one is still read for on the backoff schedule, then reported once.
    await timer.advance(1_936);
    expect(warnings).toEqual([]);
    await timer.advance(1);
    expect(warnings).toEqual(['bus: announced changes not found in the store; the next announcement will catch up']);
    await following.close();
  });

  it('a flood of such announcements costs one read each and one backoff schedule of reads, not a schedule each', async () => {
    const { timer, commit, follow, relayed, status, state, warnings } = setup();
    const following = await follow();
    const before = state.reads;
    for (let i = 0; i < 200; i++) {
      await relayed.publish([foreign(i)]);
      await timer.advance(10); // each in a batch of its own, 10 ms apart: 2 s of them
    }
    await commit(publishedEvent(aDefinition({ name: 'real.tool' })));
    await timer.settle();
    expect(status('real.tool', '1.0.0')).toBe('active');
    await timer.advance(5_000);
    // 200 batch reads + the real change's, and the chase's own: its schedule's 9 steps, then a read a second while
    // announcements kept joining it (2 s of them, given up ~2 s after each).
    expect(state.reads - before).toBeLessThan(200 + 1 + 9 + 6);
    expect(warnings.length).toBeGreaterThan(0);
    expect(warnings.every((w) => w === 'bus: announced changes not found in the store; the next announcement will catch up')).toBe(true);
    await following.close();
  });

  it('close() ends a chase in its pause', async () => {
    const { timer, follow, relayed } = setup();
    const following = await follow();
    await relayed.publish([foreign(1)]);
    await timer.settle();
    expect(timer.sleeping).toBe(1);
    await following.close();
    expect(timer.sleeping).toBe(0);
  });

  it('a bus down at start: the replica serves the store, retries, and follows once the bus is back', async () => {
    const { topic, timer, commit, follow, status, warnings } = setup();
    await commit(publishedEvent(aDefinition({ name: 'before.tool' })), false);
    topic.down = true;
    const following = await follow();
    expect(status('before.tool', '1.0.0')).toBe('active');
    expect(warnings[0]).toMatch(/unavailable at start/);
    await timer.advance(5000); // still down: one more failed attempt
    topic.down = false;
    const meanwhile = await commit(publishedEvent(aDefinition({ name: 'meanwhile.tool' })), false);
    await timer.advance(5000);
    expect(status(meanwhile.tool, '1.0.0')).toBe('active'); // the catch-up after connecting
    await commit(publishedEvent(aDefinition({ name: 'after.tool' })));
    await timer.settle();
    expect(status('after.tool', '1.0.0')).toBe('active');
    await following.close();
  });
});
