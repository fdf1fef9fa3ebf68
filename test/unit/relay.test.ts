/**
 * The relay's logic on the memory store and the memory bus, on a hand-driven clock (test/fixtures/manual-timer.ts):
 * store order onto the bus, the checkpoint moved only after the bus acknowledged, retry with backoff while the broker
 * is down, resume from the checkpoint, lease takeover from a holder that stopped renewing, never two active relays,
 * and the one duplicate at-least-once allows. The same relay on the real broker: test/int/kafka-relay.test.ts.
 */
import { silentLog } from '#app/log';
import { describe, expect, it } from 'vitest';
import type { ChangePublisher, EventStore } from '#app/ports';
import { startRelay, type Relay } from '#app/relay';
import { toolStream } from '#domain/events';
import { MemoryChangePublisher, MemoryChangeTopic } from '#bus/memory-change-bus';
import { createMemoryEventStore } from '#store/memory-event-store';
import { aDefinition, deprecatedEvent, publishedEvent } from '../fixtures/builders.ts';
import { ManualTimer } from '../fixtures/manual-timer.ts';

const TTL = 3000;

/** A store whose calls can be held at the door: a relay frozen mid-step, as a GC pause or SIGSTOP would. */
const freezable = (store: EventStore) => {
  let gate: Promise<void> | null = null;
  let open: () => void = () => undefined;
  const held = <T>(f: () => Promise<T>): Promise<T> => (gate ? gate.then(f) : f());
  const wrapped: EventStore = {
    kind: store.kind,
    append: (...a) => held(() => store.append(...a)),
    appendMany: (r) => held(() => store.appendMany(r)),
    readStream: (...a) => held(() => store.readStream(...a)),
    readAll: (o) => held(() => store.readAll(o)),
    // A frozen process hears nothing either: what the tail delivers waits at the door too.
    subscribe: (o) => store.subscribe({ ...o, onEvents: (events) => held(async () => o.onEvents(events)) }),
    close: () => store.close(),
  };
  return {
    store: wrapped,
    freeze: () => {
      gate = new Promise((r) => (open = r));
    },
    thaw: () => {
      gate = null;
      open();
    },
  };
};

const setup = () => {
  const store = createMemoryEventStore();
  const topic = new MemoryChangeTopic();
  const timer = new ManualTimer();
  const warnings: string[] = [];
  const log = { ...silentLog, warn: (_o: object, msg?: string) => void warnings.push(msg ?? '') };
  const relays: Relay[] = [];
  const relay = (holder: string, o: { store?: EventStore; publisher?: ChangePublisher } = {}) => {
    const r = startRelay({ store: o.store ?? store, publisher: o.publisher ?? new MemoryChangePublisher(topic), topic: 'changes', holder, ttlMs: TTL, timer, log });
    relays.push(r);
    return r;
  };
  const publish = async (name: string, version: string) =>
    (await store.append(toolStream(name), [publishedEvent(aDefinition({ name, version }))], { expectedRevision: 'any' })).positions[0] as string;
  const onTopic = () => topic.messages.map((m) => (JSON.parse(m.value as string) as { position: string }).position);
  return { store, topic, timer, warnings, relay, publish, onTopic, relays };
};

describe('relay', () => {
  it('puts every catalogue event on the bus in store order, then moves the checkpoint; skips a corrupt one', async () => {
    const { store, timer, relay, publish, onTopic, warnings } = setup();
    const p1 = await publish('a.one', '1.0.0');
    const p2 = await publish('b.two', '1.0.0');
    await store.append(toolStream('a.one'), [{ type: 'ToolVersionPublished', data: { definition: { name: 'a.one' } } }], { expectedRevision: 'any' });
    const p4 = (await store.append(toolStream('a.one'), [deprecatedEvent('a.one', '1.0.0')], { expectedRevision: 'any' })).positions[0] as string;
    await store.append('run-x', [{ type: 'ToolCalled', data: {} }], { expectedRevision: 'any' }); // not under tool-: not the relay's
    const r = relay('a');
    await timer.settle();
    expect(r.active).toBe(true);
    expect(onTopic()).toEqual([p1, p2, p4]);
    expect(r.lease.position).toBe(p4); // past the corrupt one too: it must not stall the topic
    expect(warnings).toContain('relay: malformed catalogue event not published');
    await r.close();
  });

  it('an idle relay is woken by a new catalogue event, not by its poll', async () => {
    const { timer, relay, publish, onTopic } = setup();
    const r = relay('a');
    await timer.settle();
    const p = await publish('late.tool', '1.0.0');
    await timer.settle(); // no time passes
    expect(onTopic()).toEqual([p]);
    await r.close();
  });

  it("an idle relay publishes its tail's page as the next batch, without reading the store again, before or after", async () => {
    const { store, topic, timer, relay, publish, onTopic } = setup();
    let reads = 0;
    const counted: EventStore = { ...store, readAll: (o) => (reads++, store.readAll(o)) };
    const readsAtPublish: number[] = [];
    const memory = new MemoryChangePublisher(topic);
    const publisher: ChangePublisher = { publish: (cs) => (readsAtPublish.push(reads), memory.publish(cs)), close: () => memory.close() };
    const r = relay('a', { store: counted, publisher });
    await timer.settle();
    const idle = reads;
    const p1 = await publish('late.one', '1.0.0');
    await timer.settle();
    expect(onTopic()).toEqual([p1]);
    expect(readsAtPublish).toEqual([idle]);
    // Nor after it: the tail had handed over everything up to the new checkpoint.
    expect(reads).toBe(idle);
    // Behind its tail (two pages delivered before a step), the relay reads from its checkpoint as before: in order.
    const p2 = await publish('late.two', '1.0.0');
    const p3 = await publish('late.three', '1.0.0');
    await timer.settle();
    expect(onTopic()).toEqual([p1, p2, p3]);
    await r.close();
  });

  it('while the broker is down nothing moves and the batch is retried with backoff; sent once it is back', async () => {
    const { topic, timer, relay, publish, onTopic } = setup();
    const p1 = await publish('a.one', '1.0.0');
    topic.down = true;
    const r = relay('a');
    await timer.settle();
    expect(r.active).toBe(true);
    await timer.advance(200 + 400 + 800 + 1600);
    expect(timer.requested.slice(0, 5)).toEqual([200, 400, 800, 1600, 3200]);
    expect(onTopic()).toEqual([]);
    expect(r.lease.position).toBeNull();
    topic.down = false;
    await timer.advance(5000);
    expect(onTopic()).toEqual([p1]);
    expect(r.lease.position).toBe(p1);
    await r.close();
  });

  it('a relay started later resumes from the checkpoint: nothing twice, nothing lost', async () => {
    const { timer, relay, publish, onTopic } = setup();
    const first = [await publish('a.one', '1.0.0'), await publish('a.one', '1.1.0')];
    const a = relay('a');
    await timer.settle();
    await a.close(); // a clean stop releases the lease
    const second = [await publish('a.one', '1.2.0'), await publish('b.two', '1.0.0')];
    const b = relay('b');
    await timer.settle();
    expect(b.active).toBe(true);
    expect(onTopic()).toEqual([...first, ...second]);
    await b.close();
  });

  it('a holder that stops renewing is replaced after the TTL, and two relays are never active at once', async () => {
    const { store, timer, relay, publish, onTopic } = setup();
    const frozen = freezable(store);
    const a = relay('a', { store: frozen.store });
    await timer.settle();
    const b = relay('b');
    await timer.settle();
    expect([a.active, b.active]).toEqual([true, false]);
    frozen.freeze();
    const p = await publish('while.frozen', '1.0.0');
    let overlap = false;
    for (let t = 0; t < 3 * TTL && !b.active; t += 50) {
      await timer.advance(50);
      if (a.active && b.active) overlap = true;
    }
    expect(overlap).toBe(false);
    expect(b.active).toBe(true);
    expect(a.active).toBe(false);
    await timer.settle();
    expect(onTopic()).toEqual([p]);
    // The old holder wakes up: its next lease write conflicts, it steps down and never moves b's checkpoint.
    frozen.thaw();
    await timer.advance(TTL);
    expect([a.active, b.active]).toEqual([false, true]);
    expect(b.lease.position).toBe(p);
    await a.close();
    await b.close();
  });

  it('a batch acknowledged but not checkpointed is sent again by the successor: a duplicate, never a loss', async () => {
    const { topic, timer, relay, publish, onTopic } = setup();
    const positions = [await publish('a.one', '1.0.0'), await publish('b.two', '1.0.0')];
    const memory = new MemoryChangePublisher(topic);
    // Dies right after the bus acknowledged: its checkpoint write never happens.
    const dying: ChangePublisher = { publish: async (cs) => memory.publish(cs).then(() => new Promise<never>(() => undefined)), close: async () => undefined };
    const a = relay('a', { publisher: dying });
    await timer.settle();
    expect(onTopic()).toEqual(positions);
    const b = relay('b');
    await timer.advance(2 * TTL);
    expect(b.active).toBe(true);
    expect(onTopic()).toEqual([...positions, ...positions]);
    expect(b.lease.position).toBe(positions[1]);
    void a; // never settles: it stands for a killed process
    await b.close();
  });
});
