/**
 * Pure translations between Estate's EventStore port and the KurrentDB client's vocabulary: expected revisions,
 * positions, recorded events, filters and errors. Kept apart from the adapter so every rule here is unit-tested
 * without a server (none can run on our machines).
 */
import {
  ANY,
  NO_STREAM,
  STREAM_EXISTS,
  StreamNotFoundError,
  UnsupportedError,
  WrongExpectedVersionError,
  convertToCommandError,
  excludeSystemEvents,
  jsonEvent,
  streamNameFilter,
  type AppendStreamState,
  type CurrentStreamState,
  type EventData,
  type Filter,
  type JSONType,
  type Position,
  type RecordedEvent,
} from '@kurrent/kurrentdb-client';
import { ConcurrencyError, type AppendRequest, type EventToAppend, type ExpectedRevision, type StoredEvent } from '#app/ports';

// ───────────────────────────── connection ─────────────────────────────

/**
 * `esdb://` and `esdb+discover://` are the EventStoreDB spellings; the client still accepts them but prints a
 * deprecation warning on every connection, so they are renamed to the `kurrentdb` schemes, which mean the same.
 */
export function toKurrentConnectionString(url: string): string {
  const match = /^([a-z+]+):\/\//i.exec(url);
  const scheme = match?.[1]?.toLowerCase();
  if (scheme === 'esdb') return `kurrentdb://${url.slice(match![0].length)}`;
  if (scheme === 'esdb+discover') return `kurrentdb+discover://${url.slice(match![0].length)}`;
  if (scheme !== undefined && KURRENT_SCHEMES.has(scheme)) return url;
  throw new Error(`not a KurrentDB connection string: '${url}' (use kurrentdb://host:2113?tls=false or esdb://...)`);
}

const KURRENT_SCHEMES = new Set(['kurrentdb', 'kurrentdb+discover', 'kurrent', 'kurrent+discover', 'kdb', 'kdb+discover']);

// ───────────────────────────── revisions ─────────────────────────────

/**
 * Estate's expected revision as the client's stream state. The ONE place where Estate's "-1 = no stream" meets the
 * client's symbol for it. Returns null for a number no stream can ever have (below -1, fractional, unsafe): the
 * expectation cannot hold, and sending it would be worse than useless (-2 means "any" on the wire).
 */
export function toStreamState(expected: ExpectedRevision): AppendStreamState | null {
  switch (expected) {
    case 'no_stream':
      return NO_STREAM;
    case 'exists':
      return STREAM_EXISTS;
    case 'any':
      return ANY;
    default:
      if (expected === -1) return NO_STREAM;
      if (!Number.isSafeInteger(expected) || expected < -1) return null;
      return BigInt(expected);
  }
}

/** The client's view of a stream's current state as Estate's revision (-1 = no stream). */
export function toActualRevision(state: CurrentStreamState | AppendStreamState): number | undefined {
  if (state === NO_STREAM) return -1;
  if (typeof state !== 'bigint') return undefined;
  return state < 0n ? -1 : toRevision(state);
}

/** A stream revision from the server as a JavaScript number; a stream longer than 2^53 events is not ours. */
export function toRevision(revision: bigint): number {
  const value = Number(revision);
  if (!Number.isSafeInteger(value) || value < 0) throw new RangeError(`KurrentDB revision out of range: ${revision}`);
  return value;
}

// ───────────────────────────── positions ─────────────────────────────

/** `<commit>:<prepare>` in decimal: opaque to callers, exact (bigints never pass through a double). */
export function encodePosition(position: Position): string {
  return `${position.commit}:${position.prepare}`;
}

export function decodePosition(text: string): Position {
  const match = /^(\d{1,20}):(\d{1,20})$/.exec(text);
  if (!match) throw new Error(`not a KurrentDB event store position: '${text}'`);
  return { commit: BigInt(match[1]!), prepare: BigInt(match[2]!) };
}

/** $all order: by commit position, then by prepare position within one commit. */
export function comparePositions(a: Position, b: Position): number {
  if (a.commit !== b.commit) return a.commit < b.commit ? -1 : 1;
  if (a.prepare !== b.prepare) return a.prepare < b.prepare ? -1 : 1;
  return 0;
}

// ───────────────────────────── events ─────────────────────────────

export function toEventData(event: EventToAppend): EventData {
  // `undefined` has no JSON form; every adapter stores it as null.
  // The server stamps `created` itself; a copied event's original time travels in its metadata instead.
  return jsonEvent({
    type: event.type,
    data: (event.data ?? null) as JSONType,
    ...(event.recordedAt !== undefined ? { metadata: { recordedAt: event.recordedAt } } : {}),
  });
}

/** KurrentDB's own streams and event types start with `$` (`$>` links, `$metadata`, `$stats-...`): never Estate's. */
export function isSystemEvent(streamId: string, type: string): boolean {
  return streamId.startsWith('$') || type.startsWith('$');
}

/**
 * A recorded event as Estate's StoredEvent, or null when it is not one of Estate's (missing, or a system event).
 * Throws when the server did not send a position (servers before 22.6 leave it out of stream reads) or the payload is
 * not JSON: Estate only ever writes JSON, so either means the store is not what this adapter supports.
 */
export function toStoredEvent(event: RecordedEvent | undefined): StoredEvent | null {
  if (!event || isSystemEvent(event.streamId, event.type)) return null;
  if (!event.position) {
    throw new Error(`KurrentDB sent ${event.streamId}#${event.revision} without a log position (server older than 22.6?)`);
  }
  if (!event.isJson) throw new Error(`KurrentDB event ${event.streamId}#${event.revision} is not JSON`);
  return {
    streamId: event.streamId,
    revision: toRevision(event.revision),
    position: encodePosition(event.position),
    type: event.type,
    data: event.data,
    recordedAt: copiedTime(event.metadata) ?? event.created.toISOString(),
  };
}

/** The time `estate copy` carried over in the metadata, when it is a valid one. */
function copiedTime(metadata: unknown): string | undefined {
  const at = (metadata as { recordedAt?: unknown } | null | undefined)?.recordedAt;
  return typeof at === 'string' && !Number.isNaN(Date.parse(at)) ? new Date(at).toISOString() : undefined;
}

/**
 * The server-side filter for `streamPrefix`: a stream-name prefix filter (literal, no wildcards), or, without a
 * prefix, one that drops system events so they never count against a page.
 */
export function streamFilter(streamPrefix: string | undefined): Filter {
  if (streamPrefix === undefined || streamPrefix === '') return excludeSystemEvents();
  return streamNameFilter({ prefixes: [streamPrefix] });
}

// ───────────────────────────── errors ─────────────────────────────

/**
 * A failed append as Estate's ConcurrencyError when the server refused the expected revision; undefined for any
 * other failure. Raw gRPC errors are converted first (the multi-stream append can reject with one). The `expected` in
 * the result is the caller's own ExpectedRevision, found by the stream the server names.
 */
export function toConcurrencyError(error: unknown, requests: readonly AppendRequest[]): ConcurrencyError | undefined {
  const converted = error instanceof Error ? convertToCommandError(error) : error;
  if (!(converted instanceof WrongExpectedVersionError)) return undefined;
  const request =
    requests.find((r) => r.streamId === converted.streamName) ?? (requests.length === 1 ? requests[0] : undefined);
  if (!request) return undefined;
  return new ConcurrencyError(request.streamId, request.expectedRevision, toActualRevision(converted.actualState));
}

export function isStreamNotFound(error: unknown): boolean {
  return error instanceof StreamNotFoundError;
}

/** The server is older than the feature (multi-stream append needs KurrentDB 25.1). */
export function isUnsupported(error: unknown): boolean {
  return error instanceof UnsupportedError;
}
