/**
 * The one mapping table from broken rules to what the client sees: a JSON-RPC error, or an `isError` tool result, and
 * (over HTTP) the status code. Nothing else in src/mcp invents error codes or messages.
 */
import { DomainError } from '#domain/errors';
import {
  HEADER_MISMATCH,
  INTERNAL_ERROR,
  INVALID_PARAMS,
  INVALID_REQUEST,
  METHOD_NOT_FOUND,
  MISSING_CLIENT_CAPABILITY,
  PARSE_ERROR,
  STORE_UNAVAILABLE,
  TOO_MANY_CALLS,
  UNSUPPORTED_PROTOCOL_VERSION,
  type JsonRpcErrorObject,
} from './jsonrpc.ts';

/** A protocol-level refusal, thrown by method handlers and turned into a JSON-RPC error by the session. */
export class McpError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
    this.name = 'McpError';
  }

  toJson(): JsonRpcErrorObject {
    return this.data === undefined ? { code: this.code, message: this.message } : { code: this.code, message: this.message, data: this.data };
  }
}

/**
 * Unknown, invisible, pinned-missing, retired and unbound tools all get exactly this (invariant 3): no data, nothing
 * that tells an unentitled caller the tool exists.
 */
export const unknownTool = (name: string): McpError => new McpError(INVALID_PARAMS, `Unknown tool: ${name}`);
export const invalidParams = (message: string): McpError => new McpError(INVALID_PARAMS, message);
export const methodNotFound = (method: string): McpError => new McpError(METHOD_NOT_FOUND, `Method not found: ${method}`);
export const notInitialized = (): McpError => new McpError(INVALID_REQUEST, 'Invalid Request: the session is not initialized');
export const batchRefused = (): McpError => new McpError(INVALID_REQUEST, 'Invalid Request: batches are only accepted on 2025-03-26 sessions');
export const cursorExpired = (): McpError => invalidParams('cursor expired');
export const invalidCursor = (): McpError => invalidParams('invalid cursor');
export const missingMeta = (key: string): McpError => invalidParams(`Invalid params: _meta["${key}"] is required`);
export const unsupportedRevision = (requested: unknown, supported: readonly string[]): McpError =>
  new McpError(UNSUPPORTED_PROTOCOL_VERSION, 'Unsupported protocol version', { supported, requested });
export const headerMismatch = (header: string, detail: string): McpError => new McpError(HEADER_MISMATCH, `Header mismatch: ${header} ${detail}`);
export const missingCapability = (capability: string): McpError =>
  new McpError(MISSING_CLIENT_CAPABILITY, `Missing required client capability: ${capability}`, { requiredCapabilities: { [capability]: {} } });

/**
 * The store could not commit a call's intent (`ran: false`: the handler did not run) or its record (`ran: true`: it
 * ran, and its outcome is not on record). Retryable: the store may be back; for a non_idempotent tool with `ran: true`
 * the caller must check before repeating (the intent is in `estate calls` as `started`).
 */
export const storeUnavailable = (ran: boolean, reason: string): McpError =>
  new McpError(
    STORE_UNAVAILABLE,
    ran ? `Store unavailable: the tool ran but its call record could not be written (${reason})` : `Store unavailable: the call was refused before the tool ran (${reason})`,
    { retryable: true, ran },
  );

/**
 * The caller (its subject: a token's `sub`, or the process's principal without authorization) has `max` tools/calls
 * running already: refused before anything is resolved or run, and nothing is recorded. Retryable once one ends.
 */
export const tooManyCalls = (subject: string, max: number): McpError =>
  new McpError(TOO_MANY_CALLS, `Too many calls in flight: subject '${subject.slice(0, 80)}' already has ${max} tools/calls running (at most ${max}, ESTATE_MAX_CALLS_PER_SUBJECT); try again when one has ended`, { retryable: true });

/**
 * The caller's clients have left `held` bytes of answers untaken (written, not read), past `max`: its next tools/call
 * is refused before anything is resolved or run, as one past the calls bound is. Retryable once it reads them (or
 * they are dropped, after 30 s of reading nothing).
 */
export const tooManyUntaken = (subject: string, held: number, max: number): McpError =>
  new McpError(
    TOO_MANY_CALLS,
    `Too many answers unread: subject '${subject.slice(0, 80)}' has left ${held} bytes of answers untaken (at most ${max}, ESTATE_MAX_UNTAKEN_BYTES_PER_SUBJECT); read them, then try again`,
    { retryable: true },
  );

/** Anything thrown while dispatching, as a JSON-RPC error object. Internal details never leave the server. */
export const toJsonRpcError = (e: unknown): JsonRpcErrorObject => {
  if (e instanceof McpError) return e.toJson();
  if (e instanceof DomainError) {
    if (e.kind === 'not-found' || e.kind === 'usage') return { code: INVALID_PARAMS, message: e.message };
  }
  return { code: INTERNAL_ERROR, message: 'Internal error' };
};

/**
 * HTTP status for an error answered by a gate before dispatch (and for an unknown method). Errors a dispatched method
 * produces (Unknown tool, cursor expired) are in-band: HTTP 200 with the JSON-RPC error as the payload.
 */
export const httpStatusOf = (code: number): number => {
  switch (code) {
    case METHOD_NOT_FOUND:
      return 404;
    case PARSE_ERROR:
    case INVALID_REQUEST:
    case INVALID_PARAMS:
    case HEADER_MISMATCH:
    case MISSING_CLIENT_CAPABILITY:
    case UNSUPPORTED_PROTOCOL_VERSION:
      return 400;
    case INTERNAL_ERROR:
      return 500;
    case TOO_MANY_CALLS:
      return 429;
    default:
      return 200;
  }
};

/** Tool-level failures: results with `isError: true`, never protocol errors (SPEC §3). */
export const errorResult = (text: string): { content: { type: 'text'; text: string }[]; isError: true } => ({
  content: [{ type: 'text', text }],
  isError: true,
});
