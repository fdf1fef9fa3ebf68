/**
 * The relay lease on the memory store with a hand-driven monotonic clock: exclusivity through the expected revision,
 * expiry measured on the candidate's own clock, fencing of a holder that was paused past its lease, clean release.
 */
import { describe, expect, it } from 'vitest';
import { RelayLease } from '#app/relay-lease';
import { createMemoryEventStore } from '#store/memory-event-store';

const TTL = 1000;

const setup = () => {
  const store = createMemoryEventStore();
  let t = 0;
  const clock = { now: () => t, advance: (ms: number) => (t += ms) };
  const lease = (holder: string) => new RelayLease({ store, streamId: 'relay-test', holder, ttlMs: TTL, now: clock.now });
  return { store, clock, lease };
};

describe('RelayLease', () => {
  it('the first candidate takes a free lease; a second one cannot while it is renewed', async () => {
    const { clock, lease } = setup();
    const a = lease('a');
    const b = lease('b');
    expect(await a.tryAcquire()).toBe(true);
    expect(await b.tryAcquire()).toBe(false);
    for (let i = 0; i < 5; i++) {
      clock.advance(TTL / 2);
      expect(await a.renew()).toBe(true);
      expect(await b.tryAcquire()).toBe(false);
    }
    expect(a.isHeld).toBe(true);
    expect(b.isHeld).toBe(false);
    expect(b.currentHolder).toBe('a');
  });

  it('a lease not renewed for its TTL (measured from when the rival first saw it) is taken over', async () => {
    const { clock, lease } = setup();
    const a = lease('a');
    const b = lease('b');
    await a.tryAcquire();
    clock.advance(TTL * 5); // b has not looked yet: its own clock starts when it first reads the stream
    expect(await b.tryAcquire()).toBe(false);
    clock.advance(TTL - 1);
    expect(await b.tryAcquire()).toBe(false);
    clock.advance(1);
    expect(await b.tryAcquire()).toBe(true);
    expect(a.isHeld).toBe(false); // a's own view: its lease ran out too
  });

  it('a holder paused past its lease cannot move the checkpoint after a takeover', async () => {
    const { clock, lease } = setup();
    const a = lease('a');
    const b = lease('b');
    await a.tryAcquire();
    expect(await a.record('p1')).toBe(true);
    await b.tryAcquire();
    clock.advance(TTL);
    expect(await b.tryAcquire()).toBe(true);
    expect(b.position).toBe('p1');
    expect(await a.record('p2')).toBe(false);
    expect(a.currentHolder).toBe('b');
    expect(await b.record('p3')).toBe(true);
    expect(b.position).toBe('p3');
  });

  it('two candidates racing for an expired lease: exactly one wins', async () => {
    const { clock, lease } = setup();
    const a = lease('a');
    await a.tryAcquire();
    const rivals = ['b', 'c', 'd', 'e'].map(lease);
    for (const r of rivals) await r.refresh();
    clock.advance(TTL);
    const won = await Promise.all(rivals.map((r) => r.tryAcquire()));
    expect(won.filter(Boolean)).toHaveLength(1);
  });

  it('a candidate starting on a long stream reads its last event only, not the renewals before it', async () => {
    const { store, clock } = setup();
    // Ten thousand renewals of a holder that died (one a second for about three hours).
    await store.append('relay-test', Array.from({ length: 10_000 }, (_, i) => ({ type: 'RelayStateRecorded', data: { holder: 'dead', position: String(i), ttlMs: TTL } })), { expectedRevision: 'no_stream' });
    const returned: number[] = [];
    const counted = Object.create(store) as typeof store;
    counted.readStream = async (id, o) => {
      const events = await store.readStream(id, o);
      returned.push(events.length);
      return events;
    };
    const b = new RelayLease({ store: counted, streamId: 'relay-test', holder: 'b', ttlMs: TTL, now: clock.now });
    expect(await b.tryAcquire()).toBe(false); // seen just now: its TTL starts on b's clock
    expect(b.currentHolder).toBe('dead');
    clock.advance(TTL);
    expect(await b.tryAcquire()).toBe(true);
    expect(b.position).toBe('9999');
    expect(Math.max(...returned), 'events read at once').toBe(1);
  });

  it('a released lease is free at once and keeps the checkpoint', async () => {
    const { clock, lease } = setup();
    const a = lease('a');
    const b = lease('b');
    await a.tryAcquire();
    await a.record('p9');
    await b.refresh();
    await a.release();
    clock.advance(1);
    expect(await b.tryAcquire()).toBe(true);
    expect(b.position).toBe('p9');
  });
});
