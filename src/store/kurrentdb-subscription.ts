/**
 * Reading $all from the KurrentDB event store as Estate's events: the filter a page or subscription applies, and the
 * catch-up-then-live subscription that hands `onEvents` batches and resubscribes from its cursor when dropped.
 */
import {
  START,
  type AllStreamResolvedEvent,
  type AllStreamSubscription,
  type Filter,
  type KurrentDBClient,
  type Position,
} from '@kurrent/kurrentdb-client';
import type { StoredEvent, SubscribeOptions, Subscription } from '#app/ports';
import { comparePositions, decodePosition, streamFilter, toStoredEvent } from './kurrentdb-mapping.ts';

/** Most events handed to one `onEvents` call; also the subscription's read-ahead. */
const SUBSCRIPTION_BATCH = 500;

/**
 * A $all event as Estate's, if it belongs to the caller: not a system event, strictly after `after`, under the
 * prefix. The server filters by prefix already; checking again costs nothing and keeps the promise literal.
 */
export function accept(resolved: AllStreamResolvedEvent, after: Position | null, prefix: string | undefined): StoredEvent | null {
  const stored = toStoredEvent(resolved.event);
  if (!stored) return null;
  if (after && comparePositions(resolved.event!.position, after) <= 0) return null;
  if (prefix !== undefined && !stored.streamId.startsWith(prefix)) return null;
  return stored;
}

/**
 * Catch up from `after`, then follow live, with one server-side catch-up subscription to $all. The cursor moves only
 * past batches `onEvents` handled; a dropped subscription or a failed batch is reported and the subscription is made
 * again from the cursor (at least once; events at or before the cursor are dropped, so nothing repeats after success).
 */
export function subscribeToAll(client: KurrentDBClient, options: SubscribeOptions, retryDelayMs: number): Subscription {
  const filter: Filter = streamFilter(options.streamPrefix);
  let cursor: Position | null = options.after === null || options.after === undefined ? null : decodePosition(options.after);
  let closed = false;
  let delivering = false;
  let reader: BatchReader | null = null;
  let wakeFromPause: (() => void) | null = null;

  const report = (error: unknown): void => {
    try {
      options.onError?.(error);
    } catch {
      // An error handler that throws has nowhere better to report to; keep the subscription alive.
    }
  };

  const pause = (ms: number): Promise<void> =>
    new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        wakeFromPause = null;
        resolve();
      };
      const timer = setTimeout(done, ms);
      timer.unref();
      wakeFromPause = done;
    });

  const loop = (async (): Promise<void> => {
    while (!closed) {
      const stream = client.subscribeToAll(
        { fromPosition: cursor ?? START, filter },
        { highWaterMark: SUBSCRIPTION_BATCH },
      );
      const current = readInBatches(stream, SUBSCRIPTION_BATCH);
      reader = current;
      try {
        for (;;) {
          const batch = await current.next();
          if (batch === null || closed) break;
          const events = batch.flatMap((resolved) => accept(resolved, cursor, options.streamPrefix) ?? []);
          if (events.length === 0) continue;
          delivering = true;
          try {
            await options.onEvents(events);
          } finally {
            delivering = false;
          }
          cursor = decodePosition(events[events.length - 1]!.position);
        }
        if (!closed) report(new Error('KurrentDB ended the $all subscription; subscribing again'));
      } catch (error) {
        if (!closed) report(error);
      } finally {
        reader = null;
        current.stop();
        await stream.unsubscribe().catch(() => undefined);
        stream.destroy();
      }
      if (!closed) await pause(retryDelayMs);
    }
  })();

  return {
    async close(): Promise<void> {
      if (closed) return;
      closed = true;
      reader?.stop();
      wakeFromPause?.();
      // Closing from inside onEvents must not wait for that very call to finish.
      if (!delivering) await loop;
    },
  };
}

interface BatchReader {
  /** The events buffered now (at least one, waiting if none), or null once the stream ended or was stopped. */
  next(): Promise<AllStreamResolvedEvent[] | null>;
  stop(): void;
}

/**
 * Drains a subscription stream in batches, so a catch-up of thousands of events reaches `onEvents` in a few calls and
 * the next batch is not pulled while one is being handled (the stream's back-pressure reaches the server). The
 * listeners stay attached for the stream's whole life: an `error` emitted while no one waits must not crash the process.
 */
function readInBatches(stream: AllStreamSubscription, max: number): BatchReader {
  let ended = false;
  let stopped = false;
  let failure: { error: unknown } | null = null;
  let notify: (() => void) | null = null;
  const poke = (): void => {
    const waiting = notify;
    notify = null;
    waiting?.();
  };
  stream.on('readable', poke);
  stream.on('end', () => {
    ended = true;
    poke();
  });
  stream.on('close', () => {
    ended = true;
    poke();
  });
  stream.on('error', (error: Error) => {
    failure ??= { error };
    poke();
  });

  return {
    async next() {
      for (;;) {
        if (stopped) return null;
        if (failure) throw failure.error;
        const batch: AllStreamResolvedEvent[] = [];
        while (batch.length < max) {
          const item = stream.read() as AllStreamResolvedEvent | null;
          if (item === null) break;
          batch.push(item);
        }
        if (batch.length > 0) return batch;
        if (ended) return null;
        await new Promise<void>((resolve) => {
          notify = resolve;
        });
      }
    },
    stop() {
      stopped = true;
      poke();
    },
  };
}
