/** Relay and consumer lag in /metrics: values that rise with unpublished or unapplied changes and fall back to 0. */
import { describe, expect, it } from 'vitest';
import { RELAY_STATE_EVENT } from '#app/relay-lease';
import { relayStream } from '#app/relay';
import { CommandHandler } from '#app/command-handler';
import { createLagProbe } from '#ops/lag';
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

  it('has no relay series on the local bus', async () => {
    const store = createMemoryEventStore();
    const metrics = createMetrics({ catalogue: () => ({ size: 0, position: null }), lag: createLagProbe({ store, readerPosition: () => null }) });
    const text = (await metrics.render()).body;
    expect(gauge(text, 'estate_catalogue_lag_events')).toBe(0);
    expect(text).not.toMatch(/^estate_relay_lag_events /m);
    await store.close();
  });
});
