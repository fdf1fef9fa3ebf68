/**
 * MemoryEventStore: the EventStore port held in one process's memory, for tests and `--store memory:`.
 * Payloads are kept as JSON text so readers get what a durable store would give them: a fresh copy, JSON semantics.
 */
import type {
  AppendRequest,
  AppendResult,
  EventStore,
  EventToAppend,
  LogPage,
  ReadAllOptions,
  StoredEvent,
  SubscribeOptions,
  Subscription,
} from '#app/ports';
import { checkExpectedRevision } from './expected-revision.ts';
import { OpenSubscriptions, tailSubscription } from './tail-subscription.ts';

interface Row {
  streamId: string;
  revision: number;
  type: string;
  json: string;
  recordedAt: string;
}

const DEFAULT_LIMIT = 1000;

export function createMemoryEventStore(): EventStore {
  /** rows[i] has position i + 1: the global counter starts at 1, like SQLite's rowid. */
  const rows: Row[] = [];
  const streams = new Map<string, number[]>();
  const listeners = new Set<() => void>();
  const subscriptions = new OpenSubscriptions();
  let closed = false;

  const assertOpen = (): void => {
    if (closed) throw new Error('memory event store is closed');
  };

  const toStored = (row: Row, index: number): StoredEvent => ({
    streamId: row.streamId,
    revision: row.revision,
    position: String(index + 1),
    type: row.type,
    data: JSON.parse(row.json) as unknown,
    recordedAt: row.recordedAt,
  });

  const head = (streamId: string): number => (streams.get(streamId)?.length ?? 0) - 1;

  /** Check every request first, then write: the whole batch happens or none of it does. */
  function appendAll(requests: AppendRequest[]): AppendResult[] {
    assertOpen();
    const planned = new Map<string, number>();
    const encoded = requests.map((request) => {
      const actual = planned.get(request.streamId) ?? head(request.streamId);
      checkExpectedRevision(request.streamId, request.expectedRevision, actual);
      planned.set(request.streamId, actual + request.events.length);
      return request.events.map((e: EventToAppend) => ({ type: e.type, json: JSON.stringify(e.data ?? null), at: e.recordedAt }));
    });
    const recordedAt = new Date().toISOString();
    const results = requests.map((request, i) => {
      const indexes = streams.get(request.streamId) ?? [];
      streams.set(request.streamId, indexes);
      const positions: string[] = [];
      for (const { type, json, at } of encoded[i]!) {
        rows.push({ streamId: request.streamId, revision: indexes.length, type, json, recordedAt: at ?? recordedAt });
        indexes.push(rows.length - 1);
        positions.push(String(rows.length));
      }
      return { revision: indexes.length - 1, positions };
    });
    if (results.some((r) => r.positions.length > 0)) for (const wake of listeners) wake();
    return results;
  }

  /** `end`: the loop ran out of rows, not of room in the page. */
  function readAllPage(options: ReadAllOptions = {}): LogPage {
    assertOpen();
    const limit = options.limit ?? DEFAULT_LIMIT;
    const prefix = options.streamPrefix;
    const out: StoredEvent[] = [];
    let i = parsePosition(options.after);
    for (; i < rows.length && out.length < limit; i++) {
      const row = rows[i]!;
      if (prefix === undefined || row.streamId.startsWith(prefix)) out.push(toStored(row, i));
    }
    return { events: out, end: i >= rows.length };
  }

  function readAll(options: ReadAllOptions = {}): StoredEvent[] {
    return readAllPage(options).events;
  }

  // Each method runs synchronously inside a promise, so a thrown ConcurrencyError becomes a rejection.
  const settle = <T>(work: () => T): Promise<T> => new Promise((resolve) => resolve(work()));

  return {
    kind: 'memory',

    append: (streamId, events, { expectedRevision }) =>
      settle(() => appendAll([{ streamId, events, expectedRevision }])[0]!),

    appendMany: (requests) => settle(() => appendAll(requests)),

    readStream: (streamId, options = {}) =>
      settle(() => {
        assertOpen();
        const indexes = streams.get(streamId) ?? [];
        if (options.direction === 'backwards') {
          const top = Math.min(indexes.length - 1, options.fromRevision ?? indexes.length - 1);
          const bottom = options.limit === undefined ? 0 : Math.max(0, top - options.limit + 1);
          return top < 0 ? [] : indexes.slice(bottom, top + 1).reverse().map((i) => toStored(rows[i]!, i));
        }
        const from = Math.max(0, options.fromRevision ?? 0);
        return indexes.slice(from, options.limit === undefined ? undefined : from + options.limit).map((i) => toStored(rows[i]!, i));
      }),

    readAll: (options) => settle(() => readAll(options)),
    streamIds: (prefix) =>
      settle(() => {
        assertOpen();
        return [...streams.keys()].filter((id) => id.startsWith(prefix)).sort();
      }),

    readAllPage: (options) => settle(() => readAllPage(options)),

    subscribe(options: SubscribeOptions): Subscription {
      const subscription = tailSubscription({
        subscribe: options,
        readPage: (after) => settle(() => readAllPage({ after, streamPrefix: options.streamPrefix })),
        onLocalAppend(wake) {
          listeners.add(wake);
          return () => listeners.delete(wake);
        },
      });
      return subscriptions.track(subscription);
    },

    async close() {
      if (closed) return;
      await subscriptions.closeAll();
      closed = true;
    },
  };
}

function parsePosition(position: string | null | undefined): number {
  if (position === null || position === undefined) return 0;
  if (!/^\d+$/.test(position)) throw new Error(`not a memory store position: '${position}'`);
  return Number(position);
}
