import { describe, expect, it, vi } from 'vitest';
import type { StoredEvent } from '#app/ports';
import { tailSubscription } from '#store/tail-subscription';

const WAIT = { timeout: 5_000, interval: 5 };

const event = (position: number): StoredEvent => ({
  streamId: 's',
  revision: position - 1,
  position: String(position),
  type: 'E',
  data: {},
  recordedAt: new Date(0).toISOString(),
});

/** A fake log: readPage serves events after the cursor, a few at a time. */
function fakeLog(count: number, failFirstReads = 0) {
  const log = Array.from({ length: count }, (_, i) => event(i + 1));
  let failures = failFirstReads;
  return {
    log,
    readPage: async (after: string | null): Promise<StoredEvent[]> => {
      if (failures > 0) {
        failures--;
        throw new Error('transient');
      }
      const from = after === null ? 0 : Number(after);
      return log.slice(from, from + 2);
    },
  };
}

describe('tailSubscription', () => {
  it('survives failing reads: reports each one and carries on from the same cursor', async () => {
    const { readPage } = fakeLog(5, 2);
    const seen: string[] = [];
    const errors: unknown[] = [];
    const sub = tailSubscription({
      subscribe: { onEvents: (b) => void seen.push(...b.map((e) => e.position)), onError: (e) => void errors.push(e) },
      readPage,
      pollIntervalMs: 5,
      retryDelayMs: 5,
    });
    await vi.waitFor(() => expect(seen).toHaveLength(5), WAIT);
    await sub.close();
    expect(seen).toEqual(['1', '2', '3', '4', '5']);
    expect(errors.map((e) => (e as Error).message)).toEqual(['transient', 'transient']);
  });

  it('offers a batch again when its handler throws, and moves on only once it is handled', async () => {
    const { readPage } = fakeLog(3);
    const attempts: string[] = [];
    let failNext = true;
    const errors: unknown[] = [];
    const sub = tailSubscription({
      subscribe: {
        onEvents: (b) => {
          attempts.push(b.map((e) => e.position).join(','));
          if (failNext) {
            failNext = false;
            throw new Error('handler failed');
          }
        },
        onError: (e) => void errors.push(e),
      },
      readPage,
      pollIntervalMs: 5,
      retryDelayMs: 5,
    });
    await vi.waitFor(() => expect(attempts).toEqual(['1,2', '1,2', '3']), WAIT);
    await sub.close();
    expect(errors).toHaveLength(1);
  });

  it('wakes on a local append without any polling', async () => {
    const { log, readPage } = fakeLog(1);
    let wakeUp: () => void = () => undefined;
    const seen: string[] = [];
    const sub = tailSubscription({
      subscribe: { onEvents: (b) => void seen.push(...b.map((e) => e.position)) },
      readPage,
      onLocalAppend: (wake) => {
        wakeUp = wake;
        return () => undefined;
      },
    });
    await vi.waitFor(() => expect(seen).toEqual(['1']), WAIT);
    log.push(event(2));
    wakeUp();
    await vi.waitFor(() => expect(seen).toEqual(['1', '2']), WAIT);
    await sub.close();
  });

  it('can be closed from inside its own handler', async () => {
    const { readPage } = fakeLog(6);
    const seen: string[] = [];
    const sub = tailSubscription({
      subscribe: {
        onEvents: async (b) => {
          seen.push(...b.map((e) => e.position));
          await sub.close();
        },
      },
      readPage,
      pollIntervalMs: 5,
    });
    await vi.waitFor(() => expect(seen).toEqual(['1', '2']), WAIT);
    await new Promise((r) => setTimeout(r, 100));
    expect(seen).toEqual(['1', '2']);
  });
});
