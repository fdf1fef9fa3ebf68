import type { LogPage, SubscribeOptions, Subscription } from '#app/ports';

export interface TailOptions {
  subscribe: SubscribeOptions;
  /**
   * One page of the log strictly after `after`, already filtered by the subscriber's prefix, and whether the read
   * reached the end of the log as it found it: after a page that says so the tail sleeps instead of reading again to
   * be told by an empty page (a store that cannot tell says false).
   */
  readPage(after: string | null): Promise<LogPage>;
  /** Registers a callback run when this process appends; returns its unregistration. */
  onLocalAppend?(wake: () => void): () => void;
  /** Re-read this often even without a local append (other processes write too); undefined = only on wake. */
  pollIntervalMs?: number;
  /** Pause after a failed read or a failed `onEvents` before trying again. */
  retryDelayMs?: number;
}

/**
 * Catch up, then tail: one loop reads a page after the cursor, hands it to `onEvents` and waits for it, and when the
 * log is exhausted (an empty page, or one that reached the end) sleeps until a wake-up or the poll timer. A wake-up
 * during the read or the delivery is not slept through: it is cleared before each read. A batch whose handler throws
 * is reported and offered again (delivery is at least once; consumers deduplicate by position), so the cursor only
 * moves past handled events.
 */
export function tailSubscription(options: TailOptions): Subscription {
  const { subscribe, readPage, pollIntervalMs, retryDelayMs = 250 } = options;
  let cursor = subscribe.after ?? null;
  let closed = false;
  let delivering = false;
  let woken = false;
  let release: (() => void) | null = null;

  const wake = (): void => {
    woken = true;
    release?.();
  };
  const unregister = options.onLocalAppend?.(wake);

  const pause = (ms: number | undefined): Promise<void> =>
    new Promise((resolve) => {
      const timer = ms === undefined ? undefined : setTimeout(done, ms);
      // A tailing subscription alone must not keep a finished process alive.
      timer?.unref();
      function done(): void {
        if (timer) clearTimeout(timer);
        release = null;
        resolve();
      }
      release = done;
    });

  const report = (error: unknown): void => {
    try {
      subscribe.onError?.(error);
    } catch {
      // An error handler that throws has nowhere better to report to; keep the subscription alive.
    }
  };

  const loop = (async (): Promise<void> => {
    while (!closed) {
      // Cleared before reading, so an append that lands during the read is not slept through.
      woken = false;
      let page: LogPage;
      try {
        page = await readPage(cursor);
      } catch (error) {
        if (closed) return;
        report(error);
        await pause(retryDelayMs);
        continue;
      }
      if (closed) return;
      const { events, end } = page;
      if (events.length > 0) {
        delivering = true;
        try {
          await subscribe.onEvents(events);
          cursor = events[events.length - 1]!.position;
        } catch (error) {
          report(error);
          if (!closed) await pause(retryDelayMs);
          continue;
        } finally {
          delivering = false;
        }
        if (!end || closed) continue;
      }
      if (!woken) await pause(pollIntervalMs);
    }
  })();

  return {
    async close(): Promise<void> {
      if (closed) return;
      closed = true;
      unregister?.();
      release?.();
      // Closing from inside onEvents must not wait for that very call to finish.
      if (!delivering) await loop;
    },
  };
}

/** The subscriptions a store has open, so that closing the store ends them all; each forgets itself when closed. */
export class OpenSubscriptions {
  private readonly open = new Set<Subscription>();

  track(subscription: Subscription): Subscription {
    this.open.add(subscription);
    return {
      close: async () => {
        this.open.delete(subscription);
        await subscription.close();
      },
    };
  }

  async closeAll(): Promise<void> {
    await Promise.all([...this.open].map((s) => s.close()));
  }
}
