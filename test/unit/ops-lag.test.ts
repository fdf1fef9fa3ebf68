/** Relay and consumer lag in /metrics: values that rise with unpublished or unapplied changes and fall back to 0. */
import { describe, expect, it } from 'vitest';
import { RELAY_STATE_EVENT } from '#app/relay-lease';
import { relayStream } from '#app/relay';
import { CommandHandler } from '#app/command-handler';
import { createLagProbe } from '#ops/lag';
import type { HeldBack } from '#app/ports';
import { createMetrics } from '#ops/metrics';
import { createMemoryEventStore } from '#store/memory-event-store';
import { aDefinition } from '../fixtures/builders.ts';

const gauge = (text: string, name: string): number | undefined => {
  const m = new RegExp(`^${name} ([0-9.e+-]+)$`, 'm').exec(text);
  return m ? Number(m[1]) : undefined;
};

describe('lag metrics', () => {
  it('relay lag rises while changes wait for Kafka and falls when the checkpoint moves; consumer lag follows the read model', async () => {
    const store = createMemoryEventStore();
    const commands = new CommandHandler({ store });
    let readerAt: string | null = null;
    let clock = Date.parse('2030-01-01T00:00:00Z');
    const metrics = createMetrics({ catalogue: () => ({ size: 0, position: readerAt }), lag: createLagProbe({ store, topic: 't', readerPosition: () => readerAt, now: () => clock }) });
    const scrape = async () => (await metrics.render()).body;

    let text = await scrape();
    expect([gauge(text, 'estate_relay_lag_events'), gauge(text, 'estate_relay_lag_seconds'), gauge(text, 'estate_catalogue_lag_events')]).toEqual([0, 0, 0]);

    const a = await commands.publish(aDefinition({ name: 'lag.a' }), 't');
    await commands.publish(aDefinition({ name: 'lag.b' }), 't');
    clock = Date.now() + 30_000;
    text = await scrape();
    expect(gauge(text, 'estate_relay_lag_events')).toBe(2);
    expect(gauge(text, 'estate_relay_lag_seconds')).toBeGreaterThanOrEqual(29);
    expect(gauge(text, 'estate_catalogue_lag_events')).toBe(2);

    // The relay had the first acknowledged; the replica applied both.
    await store.append(relayStream('t'), [{ type: RELAY_STATE_EVENT, data: { holder: 'h', position: a.position, ttlMs: 3000 } }], { expectedRevision: 'any' });
    readerAt = (await store.readAll({ streamPrefix: 'tool-' })).at(-1)!.position;
    text = await scrape();
    expect(gauge(text, 'estate_relay_lag_events')).toBe(1);
    expect(gauge(text, 'estate_catalogue_lag_events')).toBe(0);

    const all = await store.readAll({ streamPrefix: 'tool-' });
    await store.append(relayStream('t'), [{ type: RELAY_STATE_EVENT, data: { holder: 'h', position: all.at(-1)!.position, ttlMs: 3000 } }], { expectedRevision: 'any' });
    text = await scrape();
    expect([gauge(text, 'estate_relay_lag_events'), gauge(text, 'estate_relay_lag_seconds')]).toEqual([0, 0]);
    await store.close();
  });

  it('reads the relay stream from its end: a long stream costs a scrape its newest readable state, no more', async () => {
    const inner = createMemoryEventStore();
    const a = await new CommandHandler({ store: inner }).publish(aDefinition({ name: 'lag.a' }), 't');
    await new CommandHandler({ store: inner }).publish(aDefinition({ name: 'lag.b' }), 't');
    const renewals = (n: number, position: string | null) => Array.from({ length: n }, () => ({ type: RELAY_STATE_EVENT, data: { holder: 'h', position, ttlMs: 3000 } }));
    // Hours of renewals at the first change's checkpoint, then one the probe cannot read (it keeps the one before).
    await inner.append(relayStream('t'), renewals(10_000, a.position as string), { expectedRevision: 'any' });
    await inner.append(relayStream('t'), [{ type: RELAY_STATE_EVENT, data: { holder: 'h', position: 42, ttlMs: 3000 } }], { expectedRevision: 'any' });
    let read = 0;
    const store = Object.create(inner) as typeof inner;
    store.readStream = async (id, o) => {
      const events = await inner.readStream(id, o);
      read += events.length;
      return events;
    };
    const probe = createLagProbe({ store, topic: 't', readerPosition: () => null });
    expect((await probe()).relay?.events).toBe(1);
    expect(read, "the unreadable last one, then a page back to the one before").toBeLessThanOrEqual(65);
    // The next scrape reads only what was appended since: here the second change's checkpoint.
    const all = await inner.readAll({ streamPrefix: 'tool-' });
    await inner.append(relayStream('t'), renewals(1, all.at(-1)!.position), { expectedRevision: 'any' });
    read = 0;
    expect((await probe()).relay?.events).toBe(0);
    expect(read).toBe(1);
    // Nothing new: nothing more than the last event is read, and the checkpoint stays.
    read = 0;
    expect((await probe()).relay?.events).toBe(0);
    expect(read).toBe(1);
    await inner.close();
  });

  it('has no relay series on the local bus', async () => {
    const store = createMemoryEventStore();
    const metrics = createMetrics({ catalogue: () => ({ size: 0, position: null }), lag: createLagProbe({ store, readerPosition: () => null }) });
    const text = (await metrics.render()).body;
    expect(gauge(text, 'estate_catalogue_lag_events')).toBe(0);
    expect(text).not.toMatch(/^estate_relay_lag_events /m);
    await store.close();
  });

  it('names the holder of held-back events, a prepared transaction too, and the held seconds when its start is hidden', async () => {
    let held: HeldBack = { events: 0, oldestSeconds: 0 };
    const metrics = createMetrics({ catalogue: () => ({ size: 0, position: null }), heldBack: () => Promise.resolve(held) });
    const series = async (): Promise<string[]> => (await metrics.render()).body.split('\n').filter((l) => l.startsWith('estate_store_held_by_seconds{'));
    expect(await series()).toEqual([]);

    // Another user's session: pid, database, user and application visible, its start not (a lower bound instead).
    held = { events: 3, oldestSeconds: 12.5, holder: { pid: 4242, database: 'billing', user: 'batch', application: 'a\nb' } };
    expect(await series()).toEqual(['estate_store_held_by_seconds{pid="4242",prepared="",database="billing",user="batch",application="a\\nb"} 12.5']);

    // A prepared transaction holds with no session.
    held = { events: 1, oldestSeconds: 2, holder: { prepared: 'tx-7', database: 'billing', user: 'batch', application: '', seconds: 90 } };
    expect(await series()).toEqual(['estate_store_held_by_seconds{pid="",prepared="tx-7",database="billing",user="batch",application=""} 90']);

    // Held, but the holder ended between the two reads: no series naming a transaction that no longer holds.
    held = { events: 1, oldestSeconds: 2 };
    expect(await series()).toEqual([]);
  });
});
