/**
 * JSON-RPC 2.0 envelopes: the shapes, the envelope check (gate 1), and response builders. Nothing MCP-specific.
 */
import { scanJsonDepth } from '#domain/json-depth';

export type RequestId = string | number;

export interface JsonRpcRequest {
  jsonrpc: '2.0';
  id: RequestId;
  method: string;
  params?: Record<string, unknown>;
}

export interface JsonRpcNotification {
  jsonrpc: '2.0';
  method: string;
  params?: Record<string, unknown>;
}

/** A message that names a method; `id` is absent for notifications. */
export type JsonRpcCall = JsonRpcRequest | JsonRpcNotification;

export interface JsonRpcErrorObject {
  code: number;
  message: string;
  data?: unknown;
}

export interface JsonRpcSuccess {
  jsonrpc: '2.0';
  id: RequestId;
  result: Record<string, unknown>;
}

export interface JsonRpcFailure {
  jsonrpc: '2.0';
  id: RequestId | null;
  error: JsonRpcErrorObject;
}

export type JsonRpcResponse = JsonRpcSuccess | JsonRpcFailure;
export type JsonRpcOutbound = JsonRpcResponse | JsonRpcNotification | JsonRpcRequest;

/** The error a response carries, if it is one. */
export const errorOfResponse = (r: JsonRpcResponse): JsonRpcErrorObject | undefined => ('error' in r ? r.error : undefined);

export const PARSE_ERROR = -32700;
export const INVALID_REQUEST = -32600;
export const METHOD_NOT_FOUND = -32601;
export const INVALID_PARAMS = -32602;
export const INTERNAL_ERROR = -32603;
/** 2026-07-28: HTTP headers missing or not matching the body. */
export const HEADER_MISMATCH = -32020;
/** 2026-07-28: a client capability the request needs was not declared. */
export const MISSING_CLIENT_CAPABILITY = -32021;
/** 2026-07-28: the requested revision is not spoken here. */
export const UNSUPPORTED_PROTOCOL_VERSION = -32022;
/**
 * Estate's own (server-error range): the store could not take a call's intent or record. `data: {retryable: true,
 * ran}` says whether the handler ran (docs/reference.md, docs/decisions.md "No side effect without a trace").
 */
export const STORE_UNAVAILABLE = -32050;
/** Estate: the caller already has as many tools/calls running as it may (ESTATE_MAX_CALLS_PER_SUBJECT); retry later. */
export const TOO_MANY_CALLS = -32051;

export const success = (id: RequestId, result: Record<string, unknown>): JsonRpcSuccess => ({ jsonrpc: '2.0', id, result });

const JSON_BYTES = Symbol('estate.jsonBytes');

/**
 * A result whose JSON is already known (a tools/list page, serialized once per view revision: list-cache.ts): the
 * same object, frozen, carrying its UTF-8 bytes under a symbol that spreads and JSON.stringify skip. `responseBody`
 * writes the bytes as they are — a page of 500 tools written as a string cost ~3x as much (the socket write encodes
 * the string every time); anything else (stdio, batches, the SDK transport, tests) serializes the object as usual.
 * `bytes`, when given, must be exactly the object's JSON (list-cache.ts makes a page's result from its bytes).
 */
export const withJsonBytes = <T extends Record<string, unknown>>(value: T, bytes: Buffer = Buffer.from(JSON.stringify(value))): T =>
  Object.freeze(Object.defineProperty(value, JSON_BYTES, { value: bytes }));

export const jsonBytesOf = (value: unknown): Buffer | undefined =>
  typeof value === 'object' && value !== null ? ((value as Record<symbol, Buffer | undefined>)[JSON_BYTES] ?? undefined) : undefined;

const RESULT_END = Buffer.from('}');

/**
 * A response's body: a result made by withJsonBytes as pieces of bytes around its own (written together, not copied
 * into one), anything else as its JSON text.
 */
export const responseBody = (r: JsonRpcResponse): string | Buffer[] => {
  const bytes = 'result' in r ? jsonBytesOf(r.result) : undefined;
  return bytes === undefined ? JSON.stringify(r) : [Buffer.from(`{"jsonrpc":"2.0","id":${JSON.stringify(r.id)},"result":`), bytes, RESULT_END];
};

export const failure = (id: RequestId | null, code: number, message: string, data?: unknown): JsonRpcFailure => ({
  jsonrpc: '2.0',
  id,
  error: data === undefined ? { code, message } : { code, message, data },
});

export const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

const isId = (v: unknown): v is RequestId => typeof v === 'string' || (typeof v === 'number' && Number.isFinite(v));

/** The id to answer an invalid envelope with: the message's own id when it is a usable one, else null. */
export const readableId = (raw: unknown): RequestId | null => (isPlainObject(raw) && isId(raw.id) ? raw.id : null);

export type EnvelopeCheck = { ok: true; message: JsonRpcCall } | { ok: false; response: JsonRpcFailure };

/**
 * Gate 1. A response the client sends us is not a call: a stateful session takes it out before this gate
 * (`isResponseEnvelope`: it answers one of our elicitation/sampling requests and is never answered itself); anything
 * else without a method is refused here.
 */
export const checkEnvelope = (raw: unknown): EnvelopeCheck => {
  const bad = (why: string): EnvelopeCheck => ({ ok: false, response: failure(readableId(raw), INVALID_REQUEST, `Invalid Request: ${why}`) });
  if (!isPlainObject(raw)) return bad('a message must be a JSON object');
  if (raw.jsonrpc !== '2.0') return bad('jsonrpc must be "2.0"');
  if (typeof raw.method !== 'string' || raw.method.length === 0) return bad('method must be a non-empty string');
  if ('id' in raw && !isId(raw.id)) return bad('id must be a string or a number');
  if ('params' in raw && raw.params !== undefined && !isPlainObject(raw.params)) return bad('params must be an object');
  return { ok: true, message: raw as unknown as JsonRpcCall };
};

/**
 * A well-formed JSON-RPC response: no method, a string or number id, and exactly one of `result` (an object) and
 * `error` (integer code, string message). A null id is not one: it answers nothing we could have sent.
 */
export const isResponseEnvelope = (raw: unknown): raw is JsonRpcResponse => {
  if (!isPlainObject(raw) || raw.jsonrpc !== '2.0' || 'method' in raw || !isId(raw.id)) return false;
  const hasResult = 'result' in raw;
  if (hasResult === 'error' in raw) return false;
  if (hasResult) return isPlainObject(raw.result);
  const e = raw.error;
  return isPlainObject(e) && Number.isInteger(e.code) && typeof e.message === 'string';
};

export const isRequest = (m: JsonRpcCall): m is JsonRpcRequest => 'id' in m && m.id !== undefined;

/**
 * Most levels a frame may nest (the message object is level 1). Far above what a valid call needs (arguments may nest
 * 64 levels, refused by the tools/call pipeline with its own message) and far below what costs real CPU to parse.
 */
export const MAX_FRAME_DEPTH = 512;

/**
 * Parse one text frame; bad JSON is -32700 with id null (nothing about the message is readable). A frame nested deeper
 * than MAX_FRAME_DEPTH is refused (-32600) before it is parsed, with its id when a linear scan can read it.
 */
export const parseFrame = (text: string): { ok: true; value: unknown } | { ok: false; response: JsonRpcFailure } => {
  // Each level takes a character: a text no longer than the limit cannot nest deeper (most frames: no scan).
  const scan = text.length > MAX_FRAME_DEPTH ? scanJsonDepth(text, MAX_FRAME_DEPTH) : undefined;
  if (scan?.tooDeep) {
    let id: unknown = null;
    try {
      if (scan.idText !== undefined) id = JSON.parse(scan.idText) as unknown;
    } catch {
      id = null;
    }
    return { ok: false, response: failure(isId(id) ? id : null, INVALID_REQUEST, `Invalid Request: the message is nested deeper than ${MAX_FRAME_DEPTH} levels`) };
  }
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch {
    return { ok: false, response: failure(null, PARSE_ERROR, 'Parse error') };
  }
};
