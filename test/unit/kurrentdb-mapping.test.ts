/**
 * The KurrentDB adapter's translations, proven without a server (none can run here): expected revisions both ways,
 * positions (round trip and $all order), recorded events, filters, connection strings, and the client's errors as
 * Estate's. The last block drives the adapter itself over a scripted fake client, to show those translations are the
 * ones it applies; what the real server does is the contract suite's job (test/contract/kurrentdb-event-store.test.ts).
 */
import {
  ANY,
  NO_STREAM,
  STREAM_EXISTS,
  StreamNotFoundError,
  UnavailableError,
  UnsupportedError,
  WrongExpectedVersionError,
  type AllStreamResolvedEvent,
  type AppendResult as ClientAppendResult,
  type AppendStreamRequest,
  type KurrentDBClient,
  type MultiAppendResult,
  type Position,
  type ReadAllOptions as ClientReadAllOptions,
  type ReadStreamOptions,
  type SubscribeToAllOptions,
} from '@kurrent/kurrentdb-client';
import { PassThrough } from 'node:stream';
import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import { ConcurrencyError, type AppendRequest, type EventStore, type ExpectedRevision } from '#app/ports';
import { createKurrentDbEventStore } from '#store/kurrentdb-event-store';
import { openEventStore } from '#store/open-store';
import {
  comparePositions,
  decodePosition,
  encodePosition,
  isStreamNotFound,
  isUnsupported,
  streamFilter,
  toActualRevision,
  toConcurrencyError,
  toEventData,
  toKurrentConnectionString,
  toRevision,
  toStoredEvent,
  toStreamState,
} from '#store/kurrentdb-mapping';

const U64 = 2n ** 64n - 1n;

function recorded(streamId: string, revision: number, position: Position | undefined, type = 'E', data: unknown = {}) {
  return {
    streamId,
    id: '00000000-0000-4000-8000-000000000000',
    isJson: true as const,
    revision: BigInt(revision),
    type,
    created: new Date(Date.UTC(2026, 10, 30, 1, 2, 3, 456)),
    data: data as Record<string, unknown>,
    metadata: undefined,
    position: position!,
  };
}

const request = (streamId: string, expectedRevision: ExpectedRevision, count = 1): AppendRequest => ({
  streamId,
  expectedRevision,
  events: Array.from({ length: count }, (_, i) => ({ type: 'E', data: { i } })),
});

const wrongExpectedVersion = (streamName: string, expected: WrongExpectedVersionError['expectedState'], current: WrongExpectedVersionError['actualState']) =>
  new WrongExpectedVersionError(undefined, { streamName, expected, current });

describe('expected revision → stream state', () => {
  it('maps the three symbols to the client’s', () => {
    expect(toStreamState('no_stream')).toBe(NO_STREAM);
    expect(toStreamState('exists')).toBe(STREAM_EXISTS);
    expect(toStreamState('any')).toBe(ANY);
  });

  it('maps -1 (Estate’s empty stream) to NO_STREAM, not to a revision', () => {
    expect(toStreamState(-1)).toBe(NO_STREAM);
  });

  it('maps an exact revision n to BigInt(n)', () => {
    expect(toStreamState(0)).toBe(0n);
    expect(toStreamState(41)).toBe(41n);
    expect(toStreamState(Number.MAX_SAFE_INTEGER)).toBe(BigInt(Number.MAX_SAFE_INTEGER));
  });

  it('refuses numbers no stream can have (-2 would mean "any" on the wire)', () => {
    for (const impossible of [-2, -4, 1.5, Number.NaN, Number.POSITIVE_INFINITY, Number.MAX_SAFE_INTEGER + 1]) {
      expect(toStreamState(impossible)).toBeNull();
    }
  });

  it('reads the server’s actual state back as Estate’s revision', () => {
    expect(toActualRevision(NO_STREAM)).toBe(-1);
    expect(toActualRevision(0n)).toBe(0);
    expect(toActualRevision(7n)).toBe(7);
    expect(toActualRevision(-1n)).toBe(-1);
    expect(toActualRevision(ANY)).toBeUndefined();
    expect(toActualRevision(STREAM_EXISTS)).toBeUndefined();
  });

  it('law: an exact expectation read back as an actual state is the same revision (-1 included)', () => {
    fc.assert(
      fc.property(fc.integer({ min: -1, max: Number.MAX_SAFE_INTEGER }), (n) => {
        const state = toStreamState(n);
        expect(state).not.toBeNull();
        expect(toActualRevision(state!)).toBe(n);
      }),
    );
  });

  it('refuses server revisions a JavaScript number cannot hold', () => {
    expect(toRevision(12n)).toBe(12);
    expect(() => toRevision(2n ** 53n)).toThrow(RangeError);
    expect(() => toRevision(-1n)).toThrow(RangeError);
  });
});

describe('positions', () => {
  const position = fc.record({ commit: fc.bigInt({ min: 0n, max: U64 }), prepare: fc.bigInt({ min: 0n, max: U64 }) });

  it('round-trips every commit:prepare pair exactly, up to 2^64 - 1', () => {
    fc.assert(
      fc.property(position, (p) => {
        const text = encodePosition(p);
        expect(text).toBe(`${p.commit}:${p.prepare}`);
        expect(decodePosition(text)).toEqual(p);
      }),
    );
    expect(decodePosition(encodePosition({ commit: U64, prepare: U64 }))).toEqual({ commit: U64, prepare: U64 });
  });

  it('orders by commit, then prepare, as numbers (not as text)', () => {
    expect(comparePositions(decodePosition('9:9'), decodePosition('10:0'))).toBe(-1);
    expect(comparePositions(decodePosition('10:5'), decodePosition('10:12'))).toBe(-1);
    expect(comparePositions(decodePosition('10:12'), decodePosition('10:5'))).toBe(1);
    expect(comparePositions(decodePosition('7:7'), decodePosition('7:7'))).toBe(0);
  });

  it('law: the order is the lexicographic order of (commit, prepare), antisymmetric', () => {
    fc.assert(
      fc.property(position, position, (a, b) => {
        const expected = a.commit !== b.commit ? (a.commit < b.commit ? -1 : 1) : a.prepare === b.prepare ? 0 : a.prepare < b.prepare ? -1 : 1;
        expect(comparePositions(decodePosition(encodePosition(a)), decodePosition(encodePosition(b)))).toBe(expected);
        expect(comparePositions(b, a)).toBe(-expected || 0);
      }),
    );
  });

  it('refuses what it did not make', () => {
    for (const bad of ['', '42', '1:2:3', '-1:2', '1:-2', 'a:b', ' 1:2', '1:2 ', '1.0:2', `1${'0'.repeat(20)}:1`]) {
      expect(() => decodePosition(bad), bad).toThrow(/not a KurrentDB event store position/);
    }
  });
});

describe('recorded events', () => {
  it('become StoredEvents: revision as number, position as commit:prepare, recordedAt from created, JSON data', () => {
    const stored = toStoredEvent(recorded('tool-a', 3, { commit: 1200n, prepare: 1180n }, 'ToolVersionPublished', { v: '1.0.0' }));
    expect(stored).toEqual({
      streamId: 'tool-a',
      revision: 3,
      position: '1200:1180',
      type: 'ToolVersionPublished',
      data: { v: '1.0.0' },
      recordedAt: '2026-11-30T01:02:03.456Z',
    });
  });

  it('skips system events ($ streams, $ types such as links and metadata) and missing events', () => {
    expect(toStoredEvent(recorded('$stats-127.0.0.1:2113', 0, { commit: 1n, prepare: 1n }))).toBeNull();
    expect(toStoredEvent(recorded('$$tool-a', 0, { commit: 1n, prepare: 1n }, '$metadata'))).toBeNull();
    expect(toStoredEvent(recorded('$ce-tool', 0, { commit: 1n, prepare: 1n }, '$>'))).toBeNull();
    expect(toStoredEvent(recorded('tool-a', 0, { commit: 1n, prepare: 1n }, '$ProjectionsInitialized'))).toBeNull();
    expect(toStoredEvent(undefined)).toBeNull();
  });

  it('refuses an event without a position (server before 22.6) or without JSON data', () => {
    expect(() => toStoredEvent(recorded('tool-a', 0, undefined))).toThrow(/without a log position/);
    const binary = { ...recorded('tool-a', 0, { commit: 1n, prepare: 1n }), isJson: false as const, data: new Uint8Array([1]) };
    expect(() => toStoredEvent(binary)).toThrow(/is not JSON/);
  });

  it('writes JSON events, undefined data as null', () => {
    const data = toEventData({ type: 'T', data: { a: [1, 'b'] } });
    expect(data).toMatchObject({ type: 'T', contentType: 'application/json', data: { a: [1, 'b'] } });
    expect(data.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(toEventData({ type: 'T', data: undefined }).data).toBeNull();
    expect(toEventData({ type: 'T', data: 'just a string' }).data).toBe('just a string');
  });

  it('carries a copied event\'s recordedAt in its metadata and reads it back instead of created', () => {
    const at = '2020-02-29T23:59:58.123Z';
    const written = toEventData({ type: 'T', data: {}, recordedAt: at });
    expect(written.metadata).toEqual({ recordedAt: at });
    expect(toEventData({ type: 'T', data: {} }).metadata).toBeUndefined();
    const read = { ...recorded('tool-a', 0, { commit: 1n, prepare: 1n }), metadata: { recordedAt: at } };
    expect(toStoredEvent(read)!.recordedAt).toBe(at);
    // Metadata that is not a time (written by something else) falls back to the server's own stamp.
    const odd = { ...recorded('tool-a', 0, { commit: 1n, prepare: 1n }), metadata: { recordedAt: 'yesterday' } };
    expect(toStoredEvent(odd)!.recordedAt).toBe('2026-11-30T01:02:03.456Z');
  });
});

describe('filters and connection strings', () => {
  it('filters a prefix by stream name, literally, and excludes system events without one', () => {
    expect(streamFilter('ct1-tool_')).toMatchObject({ filterOn: 'streamName', prefixes: ['ct1-tool_'] });
    for (const none of [undefined, '']) {
      const filter = streamFilter(none);
      expect(filter.filterOn).toBe('eventType');
      const regex = new RegExp((filter as { regex: string }).regex);
      expect(regex.test('$>')).toBe(false);
      expect(regex.test('$metadata')).toBe(false);
      expect(regex.test('ToolVersionPublished')).toBe(true);
    }
  });

  it('renames esdb:// to kurrentdb:// and keeps everything after the scheme', () => {
    expect(toKurrentConnectionString('esdb://127.0.0.1:2113?tls=false')).toBe('kurrentdb://127.0.0.1:2113?tls=false');
    expect(toKurrentConnectionString('esdb+discover://a:1,b:2?tls=true')).toBe('kurrentdb+discover://a:1,b:2?tls=true');
    expect(toKurrentConnectionString('kurrentdb://admin:changeit@h:2113')).toBe('kurrentdb://admin:changeit@h:2113');
    expect(toKurrentConnectionString('kdb://h:2113?tls=false')).toBe('kdb://h:2113?tls=false');
    expect(() => toKurrentConnectionString('postgres://h/db')).toThrow(/not a KurrentDB connection string/);
  });
});

describe('errors', () => {
  it('WrongExpectedVersionError → ConcurrencyError with Estate’s expected and the actual revision', () => {
    const error = toConcurrencyError(wrongExpectedVersion('tool-a', 3n, 5n), [request('tool-a', 3)]);
    expect(error).toBeInstanceOf(ConcurrencyError);
    expect(error).toMatchObject({ name: 'ConcurrencyError', streamId: 'tool-a', expected: 3, actual: 5 });
  });

  it('an actual NO_STREAM becomes -1, and the caller’s own symbol is kept as expected', () => {
    expect(toConcurrencyError(wrongExpectedVersion('s', STREAM_EXISTS, NO_STREAM), [request('s', 'exists')])).toMatchObject({
      streamId: 's',
      expected: 'exists',
      actual: -1,
    });
    expect(toConcurrencyError(wrongExpectedVersion('s', NO_STREAM, 0n), [request('s', -1)])).toMatchObject({
      expected: -1,
      actual: 0,
    });
  });

  it('in a multi-stream append, blames the stream the server names, with that request’s expectation', () => {
    const requests = [request('a', 'no_stream'), request('b', 4), request('c', 'any')];
    expect(toConcurrencyError(wrongExpectedVersion('b', 4n, 6n), requests)).toMatchObject({ streamId: 'b', expected: 4, actual: 6 });
    expect(toConcurrencyError(wrongExpectedVersion('elsewhere', 4n, 6n), requests)).toBeUndefined();
  });

  it('converts a raw gRPC wrong-expected-version error (older servers’ append) before mapping it', () => {
    const metadata: Record<string, string> = {
      exception: 'wrong-expected-version',
      'stream-name': 'tool-b',
      'expected-version': '1',
      'actual-version': '2',
    };
    const raw = Object.assign(new Error('9 FAILED_PRECONDITION'), { code: 9, details: 'wev', metadata: { getMap: () => metadata } });
    expect(toConcurrencyError(raw, [request('tool-b', 1)])).toMatchObject({ streamId: 'tool-b', expected: 1, actual: 2 });
    delete metadata['actual-version'];
    expect(toConcurrencyError(raw, [request('tool-b', 1)])).toMatchObject({ actual: -1 });
  });

  it('leaves every other failure alone', () => {
    for (const other of [new UnavailableError(), new StreamNotFoundError(undefined, 's'), new Error('boom'), 'text', undefined]) {
      expect(toConcurrencyError(other, [request('s', 0)])).toBeUndefined();
    }
  });

  it('recognises StreamNotFound (read as an empty stream) and an unsupported feature, and nothing else as them', () => {
    expect(isStreamNotFound(new StreamNotFoundError(undefined, 'tool-a'))).toBe(true);
    expect(isStreamNotFound(new UnavailableError())).toBe(false);
    expect(isStreamNotFound(new Error('tool-a not found'))).toBe(false);
    expect(isUnsupported(new UnsupportedError('multiStreamAppend', '25.1'))).toBe(true);
    expect(isUnsupported(new UnavailableError())).toBe(false);
  });
});

// ───────────── the adapter over a scripted client: the mappings above are the ones it applies ─────────────

interface Calls {
  appends: { stream: string; state: unknown; count: number }[];
  reads: { stream: string; options: ReadStreamOptions | undefined }[];
  readAlls: ClientReadAllOptions[];
  multi: AppendStreamRequest[][];
  /** Every subscription the store made, as a stream the test feeds, like the server would. */
  subscriptions: FakeSubscription[];
}

interface FakeSubscription {
  options: SubscribeToAllOptions;
  stream: PassThrough;
  unsubscribed: boolean;
}

/** Only what each test scripts; anything else it is asked throws, so an unexpected call fails the test. */
function fakeClient(script: {
  append?: (stream: string, state: unknown, count: number) => ClientAppendResult;
  readStream?: (stream: string, options: ReadStreamOptions | undefined) => AllStreamResolvedEvent[];
  readAll?: (options: ClientReadAllOptions) => AllStreamResolvedEvent[];
  multiStreamAppend?: (requests: AppendStreamRequest[]) => MultiAppendResult;
}): { client: KurrentDBClient; calls: Calls } {
  const calls: Calls = { appends: [], reads: [], readAlls: [], multi: [], subscriptions: [] };
  const unexpected = (what: string) => () => {
    throw new Error(`unexpected call: ${what}`);
  };
  const fake = {
    appendToStream: async (stream: string, events: unknown[], options: { streamState: unknown }) => {
      calls.appends.push({ stream, state: options.streamState, count: events.length });
      return (script.append ?? unexpected('appendToStream'))(stream, options.streamState, events.length);
    },
    multiStreamAppend: async (requests: AppendStreamRequest[]) => {
      calls.multi.push(requests);
      return (script.multiStreamAppend ?? unexpected('multiStreamAppend'))(requests);
    },
    readStream: (stream: string, options?: ReadStreamOptions) =>
      (async function* () {
        calls.reads.push({ stream, options });
        yield* (script.readStream ?? unexpected('readStream'))(stream, options);
      })(),
    readAll: (options: ClientReadAllOptions) =>
      (async function* () {
        calls.readAlls.push(options);
        yield* (script.readAll ?? unexpected('readAll'))(options);
      })(),
    subscribeToAll: (options: SubscribeToAllOptions) => {
      const stream = new PassThrough({ objectMode: true });
      const fake: FakeSubscription = { options, stream, unsubscribed: false };
      calls.subscriptions.push(fake);
      return Object.assign(stream, {
        unsubscribe: async () => {
          fake.unsubscribed = true;
        },
      });
    },
    dispose: async () => undefined,
  };
  return { client: fake as unknown as KurrentDBClient, calls };
}

const open = (client: KurrentDBClient) => createKurrentDbEventStore({ connectionString: 'kurrentdb://fake:2113?tls=false', client });
const at = (streamId: string, revision: number, commit: bigint, type = 'E'): AllStreamResolvedEvent => ({
  event: recorded(streamId, revision, { commit, prepare: commit }, type),
});

describe('KurrentDbEventStore over a scripted client', () => {
  it('is what openEventStore loads for kurrentdb:// and esdb:// URLs (the client connects lazily, so no server is needed)', async () => {
    // The shape open-store.ts declares for this module, checked by the compiler.
    const factory: (options: { connectionString: string }) => EventStore | Promise<EventStore> = createKurrentDbEventStore;
    expect(typeof factory).toBe('function');
    for (const url of ['kurrentdb://127.0.0.1:1?tls=false', 'esdb://127.0.0.1:1?tls=false']) {
      const store = await openEventStore(url);
      expect(store.kind).toBe('kurrentdb');
      await store.close();
    }
  });

  it('reads a stream the server does not know as empty, and lets other read failures through', async () => {
    const { client } = fakeClient({
      readStream: (stream) => {
        throw stream === 'missing' ? new StreamNotFoundError(undefined, stream) : new UnavailableError();
      },
    });
    const store = open(client);
    expect(await store.readStream('missing')).toEqual([]);
    await expect(store.readStream('other')).rejects.toBeInstanceOf(UnavailableError);
  });

  it('sends mapped stream states, turns a refusal into ConcurrencyError, reads positions back after a success', async () => {
    const { client, calls } = fakeClient({
      append: (stream, state, count) => {
        if (state === NO_STREAM) throw wrongExpectedVersion(stream, NO_STREAM, 4n);
        return { success: true, nextExpectedRevision: 6n + BigInt(count) - 1n };
      },
      readStream: (stream, options) => [at(stream, 6, 100n), at(stream, 7, 110n)].slice(0, Number(options?.maxCount)),
    });
    const store = open(client);
    const refused = await store.append('s', [{ type: 'E', data: {} }], { expectedRevision: -1 }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ConcurrencyError);
    expect(refused).toMatchObject({ streamId: 's', expected: -1, actual: 4 });

    const result = await store.append('s', [{ type: 'E', data: {} }, { type: 'E', data: {} }], { expectedRevision: 5 });
    expect(result).toEqual({ revision: 7, positions: ['100:100', '110:110'] });
    expect(calls.appends.map((a) => a.state)).toEqual([NO_STREAM, 5n]);
    expect(calls.reads).toEqual([{ stream: 's', options: { fromRevision: 6n, maxCount: 2, requiresLeader: true } }]);
  });

  it('refuses an impossible expected revision without asking the server', async () => {
    const { client, calls } = fakeClient({});
    const store = open(client);
    await expect(store.append('s', [{ type: 'E', data: {} }], { expectedRevision: -2 })).rejects.toBeInstanceOf(ConcurrencyError);
    await expect(store.appendMany([request('a', 'any'), request('b', 0.5)])).rejects.toBeInstanceOf(ConcurrencyError);
    expect(calls.appends).toEqual([]);
    expect(calls.multi).toEqual([]);
  });

  it('appendMany blames the right stream when the atomic append is refused', async () => {
    const { client, calls } = fakeClient({
      multiStreamAppend: () => {
        throw wrongExpectedVersion('b', NO_STREAM, 0n);
      },
    });
    const store = open(client);
    const error = await store.appendMany([request('a', 'no_stream'), request('b', 'no_stream')]).catch((e: unknown) => e);
    expect(error).toMatchObject({ name: 'ConcurrencyError', streamId: 'b', expected: 'no_stream', actual: 0 });
    expect(calls.multi[0]!.map((r) => [r.streamName, r.expectedState])).toEqual([
      ['a', NO_STREAM],
      ['b', NO_STREAM],
    ]);
    expect(calls.appends).toEqual([]);
  });

  it('appendMany on a server without multi-stream append checks every stream before writing any', async () => {
    const { client, calls } = fakeClient({
      multiStreamAppend: () => {
        throw new UnsupportedError('multiStreamAppend', '25.1');
      },
      readStream: (stream) => {
        if (stream === 'a') throw new StreamNotFoundError(undefined, stream);
        return [at(stream, 0, 50n)];
      },
    });
    const store = open(client);
    const error = await store.appendMany([request('a', 'no_stream'), request('b', 'no_stream')]).catch((e: unknown) => e);
    expect(error).toMatchObject({ name: 'ConcurrencyError', streamId: 'b', expected: 'no_stream', actual: 0 });
    expect(calls.appends).toEqual([]);
  });

  it('readAll asks from `after` with one to spare, drops the event at `after` and system events, caps at the limit', async () => {
    const { client, calls } = fakeClient({
      readAll: () => [at('p-a', 0, 10n), at('p-a', 1, 20n, '$metadata'), at('p-b', 0, 30n), at('p-a', 2, 40n), at('p-c', 0, 50n)],
    });
    const store = open(client);
    const page = await store.readAll({ after: '10:10', limit: 2, streamPrefix: 'p-' });
    expect(page.map((e) => `${e.streamId}#${e.revision}@${e.position}`)).toEqual(['p-b#0@30:30', 'p-a#2@40:40']);
    expect(calls.readAlls[0]).toMatchObject({
      fromPosition: { commit: 10n, prepare: 10n },
      maxCount: 3,
      filter: { filterOn: 'streamName', prefixes: ['p-'] },
    });
    await expect(store.readAll({ after: '10' })).rejects.toThrow(/not a KurrentDB event store position/);
  });

  describe('subscribe', () => {
    const WAIT = { timeout: 5_000, interval: 5 };
    const summary = (events: { streamId: string; revision: number; position: string }[]) =>
      events.map((e) => `${e.streamId}#${e.revision}@${e.position}`);

    it('delivers in order without system events, and after a dropped stream subscribes again from the last handled position', async () => {
      const { client, calls } = fakeClient({});
      const store = open(client);
      const seen: string[] = [];
      const errors: unknown[] = [];
      const subscription = store.subscribe({
        after: null,
        streamPrefix: 'p-',
        onEvents: (batch) => void seen.push(...summary(batch)),
        onError: (error) => void errors.push(error),
      });
      try {
        expect(calls.subscriptions).toHaveLength(1);
        expect(calls.subscriptions[0]!.options).toMatchObject({ fromPosition: 'start', filter: { prefixes: ['p-'] } });
        const first = calls.subscriptions[0]!.stream;
        first.write(at('p-a', 0, 10n));
        first.write(at('p-a', 1, 15n, '$metadata'));
        first.write(at('p-b', 0, 20n));
        await vi.waitFor(() => expect(seen).toEqual(['p-a#0@10:10', 'p-b#0@20:20']), WAIT);

        const dropped = new UnavailableError();
        first.emit('error', dropped);
        await vi.waitFor(() => expect(calls.subscriptions).toHaveLength(2), WAIT);
        expect(errors).toEqual([dropped]);
        expect(calls.subscriptions[0]!.unsubscribed).toBe(true);
        expect(calls.subscriptions[1]!.options.fromPosition).toEqual({ commit: 20n, prepare: 20n });

        // A server that repeats the event at the cursor does not make it arrive twice.
        const second = calls.subscriptions[1]!.stream;
        second.write(at('p-b', 0, 20n));
        second.write(at('p-a', 2, 30n));
        await vi.waitFor(() => expect(seen).toHaveLength(3), WAIT);
        expect(seen).toEqual(['p-a#0@10:10', 'p-b#0@20:20', 'p-a#2@30:30']);
      } finally {
        await subscription.close();
        await store.close();
      }
    });

    it('offers a batch whose handler threw again, from the same cursor, and reports the failure', async () => {
      const { client, calls } = fakeClient({});
      const store = open(client);
      const seen: string[] = [];
      const errors: unknown[] = [];
      let failOnce = true;
      const subscription = store.subscribe({
        after: '5:5',
        onEvents: (batch) => {
          if (failOnce && batch.some((e) => e.revision === 1)) {
            failOnce = false;
            throw new Error('projection failed');
          }
          seen.push(...summary(batch));
        },
        onError: (error) => void errors.push(error),
      });
      try {
        expect(calls.subscriptions[0]!.options).toMatchObject({ fromPosition: { commit: 5n, prepare: 5n }, filter: { filterOn: 'eventType' } });
        calls.subscriptions[0]!.stream.write(at('s', 0, 10n));
        await vi.waitFor(() => expect(seen).toEqual(['s#0@10:10']), WAIT);
        calls.subscriptions[0]!.stream.write(at('s', 1, 20n));
        await vi.waitFor(() => expect(calls.subscriptions).toHaveLength(2), WAIT);
        expect((errors[0] as Error).message).toBe('projection failed');
        expect(calls.subscriptions[1]!.options.fromPosition).toEqual({ commit: 10n, prepare: 10n });
        calls.subscriptions[1]!.stream.write(at('s', 1, 20n));
        await vi.waitFor(() => expect(seen).toEqual(['s#0@10:10', 's#1@20:20']), WAIT);
      } finally {
        await subscription.close();
        await store.close();
      }
    });

    it('waits for each batch before handing over the next, and stops delivering once closed', async () => {
      const { client, calls } = fakeClient({});
      const store = open(client);
      const seen: number[] = [];
      let busy = false;
      let overlaps = 0;
      let release!: () => void;
      const gate = new Promise<void>((resolve) => (release = resolve));
      const subscription = store.subscribe({
        onEvents: async (batch) => {
          if (busy) overlaps++;
          busy = true;
          if (seen.length === 0) await gate;
          seen.push(...batch.map((e) => e.revision));
          busy = false;
        },
      });
      const stream = calls.subscriptions[0]!.stream;
      stream.write(at('s', 0, 10n));
      await vi.waitFor(() => expect(busy).toBe(true), WAIT);
      for (let i = 1; i < 5; i++) stream.write(at('s', i, BigInt(10 + i * 10)));
      release();
      await vi.waitFor(() => expect(seen).toEqual([0, 1, 2, 3, 4]), WAIT);
      expect(overlaps).toBe(0);

      await subscription.close();
      expect(calls.subscriptions[0]!.unsubscribed).toBe(true);
      stream.write(at('s', 5, 60n));
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(seen).toEqual([0, 1, 2, 3, 4]);
      expect(calls.subscriptions).toHaveLength(1);
      await store.close();
    });
  });
});
