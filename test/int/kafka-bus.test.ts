/**
 * KafkaChangeBus on the real broker: a bus started after messages were produced does not replay them (the store
 * catch-up covers those), every message produced after start() is delivered, and malformed messages — not JSON,
 * the wrong shape, an unknown event — are logged and skipped without stopping the consumer.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CatalogueChange } from '#app/ports';
import { decodeChange, encodeChange } from '#bus/change-message';
import { KafkaChangeBus, KafkaChangePublisher } from '#bus/kafka-change-bus';
import { produceRaw, requireServices, uniqueTopic } from './kafka-helpers.ts';

const services = await requireServices('KafkaChangeBus on the real broker');

const change = (tool: string, position: string): CatalogueChange => ({
  type: 'catalogue.changed',
  position,
  tool,
  version: '1.0.0',
  event: 'ToolVersionPublished',
  at: '2026-11-30T00:00:00.000Z',
});

describe('change message codec', () => {
  it('round-trips the SPEC §4 message with its field order', () => {
    const c = change('payments.lookup', '42');
    expect(encodeChange(c)).toBe(
      '{"type":"catalogue.changed","position":"42","tool":"payments.lookup","version":"1.0.0","event":"ToolVersionPublished","at":"2026-11-30T00:00:00.000Z"}',
    );
    expect(decodeChange(Buffer.from(encodeChange(c)))).toEqual({ ok: true, change: c });
  });

  it.each([
    ['not JSON', '{nope'],
    ['an array', '[]'],
    ['a wrong type', JSON.stringify({ ...change('a', '1'), type: 'other' })],
    ['an unknown event', JSON.stringify({ ...change('a', '1'), event: 'ToolCalled' })],
    ['a missing position', JSON.stringify({ ...change('a', '1'), position: undefined })],
  ])('refuses %s', (_what, value) => {
    expect(decodeChange(value).ok).toBe(false);
  });

  it('refuses a message larger than a change message can be, naming its size, before parsing it', () => {
    const big = JSON.stringify({ ...change('a', '1'), pad: 'x'.repeat(5000) });
    expect(decodeChange(big)).toEqual({ ok: false, reason: `${Buffer.byteLength(big)} bytes, more than a change message's 4096` });
    expect(decodeChange(Buffer.from(big)).ok).toBe(false);
  });

  it.each([
    ['position', 257],
    ['tool', 129],
    ['version', 65],
    ['at', 65],
  ] as const)('refuses a %s of %i characters, one past its bound (consumers keep what they saw to deduplicate)', (field, length) => {
    const r = decodeChange(JSON.stringify({ ...change('a', '1'), [field]: 'x'.repeat(length) }));
    expect(r.ok).toBe(false);
    expect(r.ok ? '' : r.reason).toContain(field);
    // At the bound: taken. A strict semver version is never that long (each number at most 2^53 - 1): the longest is.
    const longest = field === 'version' ? `${Number.MAX_SAFE_INTEGER}.${Number.MAX_SAFE_INTEGER}.${Number.MAX_SAFE_INTEGER}` : 'x'.repeat(length - 1);
    expect(decodeChange(JSON.stringify({ ...change('a', '1'), [field]: longest })).ok).toBe(true);
  });

  it('refuses an empty (tombstone) message', () => {
    expect(decodeChange(null)).toEqual({ ok: false, reason: 'empty message' });
  });
});

if (services) {
  describe('KafkaChangeBus on the real broker', () => {
    const { brokers } = services;
    const topic = uniqueTopic('bus');
    const warnings: string[] = [];
    const log = {
      debug: () => undefined,
      info: () => undefined,
      // One line per batch counts its malformed messages: a line for each of them.
      warn: (o: object, msg?: string) => {
        for (let i = 0; i < (msg === 'change topic: malformed messages skipped' ? (o as { count: number }).count : 1); i++) warnings.push(msg ?? '');
      },
      error: () => undefined,
    };
    const received: CatalogueChange[] = [];
    let bus: KafkaChangeBus;
    const publisher = new KafkaChangePublisher({ brokers, topic });

    beforeAll(async () => {
      await publisher.publish([change('before.start', 'p0')]);
      bus = new KafkaChangeBus({ brokers, topic, log });
      await bus.start((cs) => {
        received.push(...cs);
      });
    });
    afterAll(async () => {
      await bus?.stop();
      await publisher.close();
    });

    it('delivers what is produced after start, not before, and skips malformed messages', async () => {
      await produceRaw(brokers, topic, [
        { key: 'x', value: '{not json' },
        { key: 'x', value: JSON.stringify({ type: 'catalogue.changed', position: 'p?', tool: 'x' }) },
      ]);
      await publisher.publish([change('after.start', 'p1'), change('after.start', 'p2')]);
      // The malformed ones may sit on another partition than p1/p2, read later: wait for everything asserted.
      const skipped = () => warnings.filter((w) => w.includes('malformed messages skipped'));
      const deadline = Date.now() + 20_000;
      while ((received.length < 2 || skipped().length < 2) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      expect(received.map((c) => c.position)).toEqual(['p1', 'p2']);
      expect(skipped()).toHaveLength(2);
    });
  });
}
