/**
 * `estate watch` (SPEC §9): the change messages of SPEC §4, as they happen, for cache-invalidation consumers. Two
 * sources: tailing the store (`local` bus: the messages are made from the catalogue events, exactly as the relay makes
 * them), or consuming the Kafka topic the relay publishes to (./change-watch-kafka.ts, loaded only for a kafka:// bus so
 * the default never loads kafkajs). Both deduplicate by position (delivery is at least once).
 */
import { changeOf } from '#app/relay';
import type { CatalogueChange, EventStore, Subscription } from '#app/ports';
import { TOOL_STREAM_PREFIX } from '#domain/events';
import { DomainError } from '#domain/errors';

/** Where to start: strictly after a position, after the last change there is now, or from the first one. */
export type WatchStart = { after: string } | 'end' | 'beginning';

export interface WatchHandle {
  /** Where the watch started, once known (a position, or null: before the first change). */
  readonly started: Promise<string | null>;
  /** Resolves when the watch ends by itself (a fatal error rejects it). */
  readonly done: Promise<void>;
  close(): Promise<void>;
}

/**
 * Store positions are digits (SQLite, memory) or digits:digits (PostgreSQL, KurrentDB), ordered as numbers and then
 * as pairs within one store. Only needed where no store read can answer "after": filtering the Kafka topic.
 */
const positionKey = (p: string): [bigint, bigint] | null => {
  const m = /^(\d{1,30})(?::(\d{1,30}))?$/.exec(p);
  return m ? [BigInt(m[1]!), BigInt(m[2] ?? '0')] : null;
};
export const parseWatchPosition = (p: string): string => {
  if (positionKey(p) === null) {
    throw new DomainError('usage', 'bad-position', `--from '${p.slice(0, 80)}' is not a store position (a number such as 42, or two joined by a colon such as 7591:3, as publish --json prints)`);
  }
  return p;
};
export const isAfter = (p: string, from: string): boolean => {
  const a = positionKey(p);
  const b = positionKey(from)!;
  if (!a) return true;
  return a[0] > b[0] || (a[0] === b[0] && a[1] > b[1]);
};

/** The position of the newest catalogue event now (null: none yet). */
export const lastCataloguePosition = async (store: EventStore): Promise<string | null> => {
  let last: string | null = null;
  for (;;) {
    const page = await store.readAll({ after: last, limit: 1000, streamPrefix: TOOL_STREAM_PREFIX });
    if (page.length === 0) return last;
    last = page[page.length - 1]!.position;
  }
};

/** Tail the store's `tool-` streams; each catalogue event becomes one change message. */
export const watchStore = (store: EventStore, start: WatchStart, onChange: (c: CatalogueChange) => void, onError: (e: unknown) => void): WatchHandle => {
  let subscription: Subscription | null = null;
  let closed = false;
  let finish!: () => void;
  const done = new Promise<void>((resolve) => (finish = resolve));
  // Positions already printed: a page can be offered again after a failed read, and must not print twice.
  const seen = new Set<string>();
  const first = (c: CatalogueChange): boolean => {
    if (seen.has(c.position)) return false;
    seen.add(c.position);
    if (seen.size > 10_000) seen.delete(seen.values().next().value as string);
    return true;
  };
  const started = (async () => {
    const after = start === 'beginning' ? null : start === 'end' ? await lastCataloguePosition(store) : start.after;
    if (!closed) {
      subscription = store.subscribe({
        after,
        streamPrefix: TOOL_STREAM_PREFIX,
        onEvents: (events) => {
          for (const e of events) {
            const change = changeOf(e);
            if (change && first(change)) onChange(change);
          }
        },
        onError,
      });
    }
    return after;
  })();
  started.catch(() => finish());
  return {
    started,
    done,
    async close() {
      closed = true;
      await started.catch(() => undefined);
      await subscription?.close();
      finish();
    },
  };
};
