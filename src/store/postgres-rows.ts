/** PostgreSQL event store rows and positions: `<xid>:<seq>` cursors, row shapes, and the errors the adapter maps. */
import pg from 'pg';
import { ConcurrencyError, type AppendRequest, type StoredEvent } from '#app/ports';

export const DEFAULT_LIMIT = 1000;
/** Rows a prefix-filtered read looks through per query, so a reader of `tool-` is not slowed by a sea of `run-`. */
export const SCAN_WINDOW = 5000;
/**
 * Stream kinds read by prefix from a position, each by an index of its own (postgres-schema.ts): the catalogue's (the
 * domain's TOOL_STREAM_PREFIX) and the upstreams'. Their reads pass over no call record.
 */
export const INDEXED_PREFIXES: Readonly<Record<string, string>> = { 'tool-': 'events_catalogue_order', 'upstream-': 'events_upstreams_order' };
/** The stream ids in byte order (`COLLATE "C"`), for `streamIds(prefix)` (postgres-schema.ts). */
export const STREAM_IDS_INDEX = 'streams_id_bytes';
export const UNIQUE_VIOLATION = '23505';
export const DIVISION_BY_ZERO = '22012';

export interface Cursor {
  xid: bigint;
  seq: bigint;
}

export const START: Cursor = { xid: 0n, seq: 0n };

export function parsePosition(position: string | null | undefined): Cursor {
  if (position === null || position === undefined) return START;
  const match = /^(\d+):(\d+)$/.exec(position);
  if (!match) throw new Error(`not a PostgreSQL event store position: '${position}'`);
  return { xid: BigInt(match[1]!), seq: BigInt(match[2]!) };
}

export const formatPosition = (xid: string, seq: string): string => `${xid}:${seq}`;

export const later = (a: Cursor, b: Cursor): Cursor => (a.xid > b.xid || (a.xid === b.xid && a.seq > b.seq) ? a : b);

/**
 * `recorded_at` as the ISO-8601 text `Date.toISOString()` writes (UTC, milliseconds, the microseconds cut off), made by
 * the server: parsing PostgreSQL's own text into a Date on every row took about a third of a read's CPU on the client.
 * The same string node-postgres' Date gave (its parse truncates to the millisecond as `to_char`'s MS does).
 */
export const recordedAtIso = (column: string): string => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

export interface EventRow {
  xid: string;
  seq: string;
  stream_id: string;
  revision: string;
  type: string;
  data: string;
  /** As `recordedAtIso` makes it. */
  recorded_at: string;
}

export interface ScanRow extends Omit<EventRow, 'xid' | 'seq' | 'stream_id' | 'revision' | 'type' | 'data' | 'recorded_at'> {
  /** The last row of the scanned window, carried so an empty filtered page still moves a subscription forward. */
  window_end: boolean;
  /** Null only on the trailer of an empty window. */
  xid: string | null;
  seq: string | null;
  stream_id: string | null;
  revision: string | null;
  type: string | null;
  data: string | null;
  recorded_at: string | null;
  /** On the window's last row: how many rows the window held (fewer than asked for: nothing visible lies beyond it). */
  window_rows: string | null;
  /** On the trailer: whether rows past the visible ones are held back (null on event rows, false unless asked). */
  held: boolean | null;
}

/** `data` is selected as text and parsed here, so every reader gets its own copy with plain JSON semantics. */
export function toStored(row: EventRow): StoredEvent {
  return {
    streamId: row.stream_id,
    revision: Number(row.revision),
    position: formatPosition(row.xid, row.seq),
    type: row.type,
    data: JSON.parse(row.data) as unknown,
    recordedAt: row.recorded_at,
  };
}

/**
 * A row of `scanToEnd`'s statement, as an array (no object per row): xid, seq, whether the stream has the prefix, then
 * (only if it has) stream_id, revision, type, data, recorded_at.
 */
export type WindowTuple = [string, string, boolean, string | null, string | null, string | null, string | null, string | null];
/** A WindowTuple of a stream with the prefix. */
export type EventTuple = [string, string, true, string, string, string, string, string];

export function tupleToStored(row: EventTuple): StoredEvent {
  return {
    streamId: row[3],
    revision: Number(row[4]),
    position: formatPosition(row[0], row[1]),
    type: row[5],
    data: JSON.parse(row[6]) as unknown,
    recordedAt: row[7],
  };
}

export function quoteSchema(schema: string): string {
  // Interpolated into DDL and queries: only a plain identifier is allowed.
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(schema)) throw new Error(`invalid PostgreSQL schema name '${schema}'`);
  return `"${schema}"`;
}

export function validateRequest(request: AppendRequest): void {
  const expected = request.expectedRevision;
  if (typeof expected === 'number' && (!Number.isInteger(expected) || expected < -1)) {
    throw new TypeError(`stream ${request.streamId}: expected revision must be an integer >= -1, got ${expected}`);
  }
  if (typeof request.streamId !== 'string' || request.streamId.length === 0) {
    throw new TypeError('stream id must be a non-empty string');
  }
  // PostgreSQL's text takes no NUL and refuses it with an error that names nothing; say which stream and event.
  if (request.streamId.includes('\u0000')) throw new TypeError(`stream ${JSON.stringify(request.streamId)}: a stream id may not contain a NUL character`);
  for (const event of request.events) {
    if (typeof event.type === 'string' && event.type.includes('\u0000')) {
      throw new TypeError(`stream ${JSON.stringify(request.streamId)}: event type ${JSON.stringify(event.type)} may not contain a NUL character`);
    }
  }
}

/**
 * The head lock makes a duplicate (stream, revision) impossible among writers that use this adapter; if one slips
 * through anyway (a writer bypassing the heads), it is still a conflict, not a crash.
 */
export function toConflict(error: unknown, requests: AppendRequest[]): unknown {
  if (error instanceof ConcurrencyError) return error;
  if (error instanceof pg.DatabaseError && error.code === UNIQUE_VIOLATION) {
    const streamId = /\(stream_id, revision\)=\((.*), -?\d+\)/.exec(error.detail ?? '')?.[1];
    const request = requests.find((r) => r.streamId === streamId) ?? requests[0]!;
    return new ConcurrencyError(request.streamId, request.expectedRevision);
  }
  return error;
}
