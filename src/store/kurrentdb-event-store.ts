/**
 * KurrentDbEventStore: the EventStore port on KurrentDB / EventStoreDB through `@kurrent/kurrentdb-client`, chosen by
 * `--store kurrentdb://...` or `esdb://...`. Streams are KurrentDB streams, revisions are theirs, positions are $all
 * positions (`<commit>:<prepare>`); every translation lives in kurrentdb-mapping.ts.
 *
 * appendMany is atomic only on KurrentDB 25.1 and later (the client's multi-stream append). On older servers it checks
 * every expectation first and then appends stream by stream: a request that is already known to conflict writes
 * nothing, but a writer racing in between the check and the appends can leave the earlier streams written.
 */
import { BACKWARDS, END, KurrentDBClient, START, type AppendStreamRequest, type AppendStreamState, type ReadStreamOptions as KurrentReadOptions } from '@kurrent/kurrentdb-client';
import {
  ConcurrencyError,
  type AppendRequest,
  type AppendResult,
  type EventStore,
  type ReadAllOptions,
  type ReadStreamOptions,
  type StoredEvent,
  type SubscribeOptions,
  type Subscription,
} from '#app/ports';
import { checkExpectedRevision } from './expected-revision.ts';
import {
  decodePosition,
  isStreamNotFound,
  isUnsupported,
  streamFilter,
  toConcurrencyError,
  toEventData,
  toKurrentConnectionString,
  toRevision,
  toStoredEvent,
  toStreamState,
} from './kurrentdb-mapping.ts';
import { accept, subscribeToAll } from './kurrentdb-subscription.ts';
import { OpenSubscriptions } from './tail-subscription.ts';

export interface KurrentDbEventStoreOptions {
  /** `kurrentdb://host:2113?tls=false`, `esdb://...`, or any other form the client accepts. */
  connectionString: string;
  /** Pause before resubscribing after a dropped subscription or a failed `onEvents`. */
  retryDelayMs?: number;
  /** A client already made for `connectionString` (unit tests pass a fake one); the store disposes of it on close. */
  client?: KurrentDBClient;
}

const DEFAULT_LIMIT = 1000;

export function createKurrentDbEventStore(options: KurrentDbEventStoreOptions): EventStore {
  const client = options.client ?? KurrentDBClient.connectionString(toKurrentConnectionString(options.connectionString));
  const retryDelayMs = options.retryDelayMs ?? 250;
  const subscriptions = new OpenSubscriptions();
  let closed = false;

  const assertOpen = (): void => {
    if (closed) throw new Error('KurrentDB event store is closed');
  };

  /** The stream's last revision, -1 when it has none; read on the leader so it is not behind our own appends. */
  async function currentRevision(streamId: string): Promise<number> {
    try {
      for await (const resolved of client.readStream(streamId, {
        direction: BACKWARDS,
        fromRevision: END,
        maxCount: 1,
        requiresLeader: true,
      })) {
        if (resolved.event) return toRevision(resolved.event.revision);
      }
      return -1;
    } catch (error) {
      if (isStreamNotFound(error)) return -1;
      throw error;
    }
  }

  /**
   * The $all positions of the `count` events ending at `lastRevision`. An append answers with one position only, and
   * callers need each event's, so they are read back from the leader (revisions never change once written).
   */
  async function positionsOf(streamId: string, lastRevision: number, count: number): Promise<string[]> {
    if (count === 0) return [];
    const positions: string[] = [];
    for await (const resolved of client.readStream(streamId, {
      fromRevision: BigInt(lastRevision - count + 1),
      maxCount: count,
      requiresLeader: true,
    })) {
      const stored = toStoredEvent(resolved.event);
      if (stored) positions.push(stored.position);
    }
    if (positions.length !== count) {
      throw new Error(`KurrentDB returned ${positions.length} of the ${count} events just appended to ${streamId}`);
    }
    return positions;
  }

  /** Fails fast, before any write, when an expected revision is a number no stream can have. */
  function streamStateOf(request: AppendRequest): AppendStreamState {
    const state = toStreamState(request.expectedRevision);
    if (state === null) throw new ConcurrencyError(request.streamId, request.expectedRevision);
    return state;
  }

  async function appendOne(request: AppendRequest): Promise<AppendResult> {
    const streamState = streamStateOf(request);
    if (request.events.length === 0) {
      // Nothing to write: check the expectation here, as every adapter does, and report the stream as it is.
      const actual = await currentRevision(request.streamId);
      checkExpectedRevision(request.streamId, request.expectedRevision, actual);
      return { revision: actual, positions: [] };
    }
    let result;
    try {
      result = await client.appendToStream(request.streamId, request.events.map(toEventData), { streamState });
    } catch (error) {
      throw toConcurrencyError(error, [request]) ?? error;
    }
    // Only when the connection string sets throwOnAppendFailure=false; the revision it reports is then unreliable.
    if (!result.success) throw new ConcurrencyError(request.streamId, request.expectedRevision);
    const revision = toRevision(result.nextExpectedRevision);
    return { revision, positions: await positionsOf(request.streamId, revision, request.events.length) };
  }

  /** One atomic multi-stream append (KurrentDB 25.1+); throws UnsupportedError on older servers. */
  async function appendAtomically(requests: AppendRequest[]): Promise<AppendResult[]> {
    const wire: AppendStreamRequest[] = requests.map((request) => ({
      streamName: request.streamId,
      events: request.events.map(toEventData),
      expectedState: streamStateOf(request),
    }));
    let result;
    try {
      result = await client.multiStreamAppend(wire);
    } catch (error) {
      throw toConcurrencyError(error, requests) ?? error;
    }
    return Promise.all(
      requests.map(async (request) => {
        const response = result.responses.find((r) => r.streamName === request.streamId);
        if (!response) throw new Error(`KurrentDB did not report the append to ${request.streamId}`);
        const revision = toRevision(response.revision);
        return { revision, positions: await positionsOf(request.streamId, revision, request.events.length) };
      }),
    );
  }

  /** Older servers: every expectation checked up front, then one append per request (not atomic under a race). */
  async function appendInTurn(requests: AppendRequest[]): Promise<AppendResult[]> {
    const planned = new Map<string, number>();
    for (const request of requests) {
      streamStateOf(request);
      const actual = planned.get(request.streamId) ?? (await currentRevision(request.streamId));
      checkExpectedRevision(request.streamId, request.expectedRevision, actual);
      planned.set(request.streamId, actual + request.events.length);
    }
    const results: AppendResult[] = [];
    for (const request of requests) results.push(await appendOne(request));
    return results;
  }

  async function appendMany(requests: AppendRequest[]): Promise<AppendResult[]> {
    assertOpen();
    if (requests.length === 0) return [];
    if (requests.length === 1) return [await appendOne(requests[0]!)];
    for (const request of requests) streamStateOf(request);
    // The multi-stream append takes each stream once and at least one event per stream.
    const distinct = new Set(requests.map((r) => r.streamId)).size === requests.length;
    if (distinct && requests.every((r) => r.events.length > 0)) {
      try {
        return await appendAtomically(requests);
      } catch (error) {
        if (!isUnsupported(error)) throw error;
      }
    }
    return appendInTurn(requests);
  }

  async function readStream(streamId: string, readOptions: ReadStreamOptions = {}): Promise<StoredEvent[]> {
    assertOpen();
    // Backwards from below the first revision: nothing (KurrentDB would start at 0).
    if (readOptions.direction === 'backwards' && (readOptions.fromRevision ?? 0) < 0) return [];
    const from = Math.max(0, Math.trunc(readOptions.fromRevision ?? 0));
    const out: StoredEvent[] = [];
    try {
      const max = readOptions.limit === undefined ? {} : { maxCount: BigInt(readOptions.limit) };
      const start: KurrentReadOptions =
        readOptions.direction === 'backwards'
          ? { direction: BACKWARDS, fromRevision: readOptions.fromRevision === undefined ? END : BigInt(from) }
          : { fromRevision: BigInt(from) };
      for await (const resolved of client.readStream(streamId, { ...start, ...max })) {
        const stored = toStoredEvent(resolved.event);
        if (stored) out.push(stored);
      }
    } catch (error) {
      if (isStreamNotFound(error)) return [];
      throw error;
    }
    return out;
  }

  async function readAll(readOptions: ReadAllOptions = {}): Promise<StoredEvent[]> {
    assertOpen();
    const limit = Math.floor(readOptions.limit ?? DEFAULT_LIMIT);
    if (limit <= 0) return [];
    const after = readOptions.after === null || readOptions.after === undefined ? null : decodePosition(readOptions.after);
    const prefix = readOptions.streamPrefix;
    const out: StoredEvent[] = [];
    // Reading $all from a position may include the event at that position: ask for one more and drop it below.
    const events = client.readAll({
      fromPosition: after ?? START,
      maxCount: after ? limit + 1 : limit,
      filter: streamFilter(prefix),
    });
    for await (const resolved of events) {
      const stored = accept(resolved, after, prefix);
      if (!stored) continue;
      out.push(stored);
      if (out.length === limit) break;
    }
    return out;
  }

  function subscribe(subscribeOptions: SubscribeOptions): Subscription {
    assertOpen();
    const subscription = subscribeToAll(client, subscribeOptions, retryDelayMs);
    return subscriptions.track(subscription);
  }

  return {
    kind: 'kurrentdb',
    append: async (streamId, events, { expectedRevision }) => {
      assertOpen();
      return appendOne({ streamId, events, expectedRevision });
    },
    appendMany,
    readStream,
    readAll,
    subscribe,
    async close() {
      if (closed) return;
      closed = true;
      await subscriptions.closeAll();
      await client.dispose();
    },
  };
}
