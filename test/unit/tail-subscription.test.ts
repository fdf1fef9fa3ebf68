import { describe, expect, it, vi } from 'vitest';
import type { LogPage, StoredEvent } from '#app/ports';
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

/** A fake log: readPage serves events after the cursor, two at a time, saying whether the page reached the end. */
function fakeLog(count: number, failFirstReads = 0) {
  const log = Array.from({ length: count }, (_, i) => event(i + 1));
  let failures = failFirstReads;
  const reads: (string | null)[] = [];
  return {
    log,
    reads,
    readPage: async (after: string | null): Promise<LogPage> => {
      reads.push(after);
      if (failures > 0) {
        failures--;
        throw new Error('transient');
      }
      const from = after === null ? 0 : Number(after);
      return { events: log.slice(from, from + 2), end: from + 2 >= log.length };
    },
  };
}

/**
 * A tail on `readPage` with no poll: after the log's end only `wake()` (as a local append would) starts a read.
 * `onPage` runs inside the delivery of each page, after its positions are in `seen`.
 */
function wakeableTail(readPage: (after: string | null) => Promise<LogPage>, onPage: () => void = () => undefined) {
  let wakeUp: () => void = () => undefined;
  const seen: string[] = [];
  const sub = tailSubscription({
    subscribe: {
      onEvents: (b) => {
        seen.push(...b.map((e) => e.position));
        onPage();
      },
    },
    readPage,
    onLocalAppend: (wake) => {
      wakeUp = wake;
      return () => undefined;
    },
  });
  return { sub, seen, wake: () => wakeUp() };
}

/**
 * Until every pending microtask has run: the fake log answers without timers, so a loop that was going to read again
 * after a delivery has done so by then (no wall-clock wait).
 */
const settle = (): Promise<void> => new Promise((r) => setImmediate(r));

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
    const { sub, seen, wake } = wakeableTail(readPage);
    await vi.waitFor(() => expect(seen).toEqual(['1']), WAIT);
    log.push(event(2));
    wake();
    await vi.waitFor(() => expect(seen).toEqual(['1', '2']), WAIT);
    await sub.close();
  });

  it('sleeps after a page that reached the end, without reading again to be told so by an empty page', async () => {
    const { log, reads, readPage } = fakeLog(3);
    const { sub, seen, wake } = wakeableTail(readPage);
    await vi.waitFor(() => expect(seen).toEqual(['1', '2', '3']), WAIT);
    await settle();
    expect(reads).toEqual([null, '2']);
    log.push(event(4));
    wake();
    await vi.waitFor(() => expect(seen).toEqual(['1', '2', '3', '4']), WAIT);
    await settle();
    expect(reads).toEqual([null, '2', '3']);
    await sub.close();
  });

  it('reads again, not sleeps, when woken while it delivered a page that reached the end', async () => {
    const { log, reads, readPage } = fakeLog(1);
    // An append lands while the first page is handled: its wake-up must not be lost to the sleep that follows.
    const tail = wakeableTail(readPage, () => {
      if (log.length === 1) {
        log.push(event(2));
        tail.wake();
      }
    });
    await vi.waitFor(() => expect(tail.seen).toEqual(['1', '2']), WAIT);
    expect(reads).toEqual([null, '1']);
    await tail.sub.close();
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
