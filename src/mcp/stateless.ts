/**
 * The stateless path (2026-07-28), in this order: envelope → notifications → required `_meta` keys (-32602) →
 * revision (-32022 with {supported, requested}) → HTTP headers against the body (-32020) → required client
 * capabilities (-32021) → dispatch through the method table (method-table.ts). No handshake: every request carries its revision and capabilities, and the run id
 * is the request's own unless it names one.
 */
import { randomUUID } from 'node:crypto';
import { traceRequest } from '#app/tracing';
import type { Principal } from '#domain/types';
import { headerMismatch, httpStatusOf, McpError, methodNotFound, missingCapability, missingMeta, toJsonRpcError, unsupportedRevision } from './error-map.ts';
import type { Cancel } from './cancellation.ts';
import { isMcpLogLevel, LOG_LEVEL_META } from './client-channel.ts';
import { errorOfResponse, isPlainObject, isRequest, jsonBytesOf, MISSING_CLIENT_CAPABILITY, success, TOO_MANY_CALLS, type JsonRpcCall, type JsonRpcNotification, type JsonRpcRequest, type JsonRpcResponse } from './jsonrpc.ts';
import { isInputRequiredResult } from './input-required.ts';
import { clientInfoRefusal, clientOfInfo, type ClientInfo } from './client-info.ts';
import { CLIENT_CAPABILITIES_META, CLIENT_INFO_META, PROTOCOL_VERSION_META, SERVER_INFO_META, STATELESS_REVISION } from './revisions.ts';
import { countedMethod, findMethod, type RequestHost } from './method-table.ts';
import type { ServerCore } from './server-core.ts';
import { SERVER_INFO } from './server-info.ts';

/** A message goes the stateless way when its params carry the per-request protocol version. */
export const isStatelessMessage = (raw: unknown): boolean =>
  isPlainObject(raw) && isPlainObject(raw.params) && isPlainObject(raw.params._meta) && PROTOCOL_VERSION_META in raw.params._meta;

export interface StatelessContext {
  principal: Principal;
  /** HTTP request headers (lower-case names); absent on stdio, where there are none to match. */
  headers?: (name: string) => string | undefined;
  /** Aborted when the client gives up on the request (HTTP disconnect, `notifications/cancelled` on stdio). */
  cancel?: Cancel;
  /** The request's channel for progress and log notifications, where the transport can carry them. */
  notify?: (n: JsonRpcNotification) => void;
}

/** Whether a request may produce notifications before its answer (so HTTP answers it as an event stream). */
export const mayNotify = (req: JsonRpcRequest): boolean => {
  const meta = isPlainObject(req.params?._meta) ? req.params._meta : {};
  return req.method === 'tools/call' && (meta.progressToken !== undefined || isMcpLogLevel(meta[LOG_LEVEL_META]));
};

export type StatelessOutcome =
  | { kind: 'none' }
  /** `status`: the HTTP status — gate refusals and unknown methods map to 4xx, dispatch errors stay in-band (200). */
  | { kind: 'response'; response: JsonRpcResponse; status: number }
  /** A validated `subscriptions/listen`: the transport opens the stream. */
  | { kind: 'listen'; request: JsonRpcRequest; toolsListChanged: boolean };

/**
 * Every 2026-07-28 result says what it is (the revision's `resultType` discriminator: `complete`, or `input_required`
 * when a tool asks the client for input, SEP-2322) and names the server in `_meta`, as the revision asks of every response.
 */
const complete = (result: Record<string, unknown>): Record<string, unknown> => {
  // A cached page is complete already (list-cache.ts builds its 2026-07-28 form).
  if (jsonBytesOf(result) !== undefined) return result;
  // Key by key: a literal that spreads an object and then adds keys takes V8's slow path (tool-call/answer.ts).
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(result)) out[key] = result[key];
  out.resultType = isInputRequiredResult(result) ? result.resultType : 'complete';
  const meta: Record<string, unknown> = isPlainObject(result._meta) ? Object.assign({}, result._meta) : {};
  meta[SERVER_INFO_META] = { ...SERVER_INFO };
  out._meta = meta;
  return out;
};

const fail = (id: JsonRpcRequest['id'], e: McpError): StatelessOutcome => ({
  kind: 'response',
  response: { jsonrpc: '2.0', id, error: e.toJson() },
  status: httpStatusOf(e.code),
});

/** Gates after the envelope and before dispatch; null when the request may be dispatched. */
export const checkStatelessRequest = (req: JsonRpcRequest, ctx: StatelessContext): McpError | null => {
  const meta = isPlainObject(req.params?._meta) ? req.params._meta : {};
  for (const key of [PROTOCOL_VERSION_META, CLIENT_CAPABILITIES_META]) if (!(key in meta)) return missingMeta(key);
  const declared = meta[PROTOCOL_VERSION_META];
  // Over HTTP the revision a request asks for is its MCP-Protocol-Version header (the header routes it here); a body
  // that disagrees with a supported header is a header mismatch, not an unsupported revision.
  const version = ctx.headers?.('mcp-protocol-version');
  const requested = version ?? declared;
  if (requested !== STATELESS_REVISION) return unsupportedRevision(requested, [STATELESS_REVISION]);
  if (ctx.headers) {
    if (version !== declared) return headerMismatch('MCP-Protocol-Version', version === undefined ? 'is missing' : `'${version}' does not match the body`);
    const method = ctx.headers('mcp-method');
    if (method !== req.method) return headerMismatch('Mcp-Method', method === undefined ? 'is missing' : `'${method}' does not match the body`);
    if (req.method === 'tools/call') {
      const name = ctx.headers('mcp-name');
      if (name !== req.params?.name) return headerMismatch('Mcp-Name', name === undefined ? 'is missing' : `'${name}' does not match the body`);
    }
  }
  const caps = isPlainObject(meta[CLIENT_CAPABILITIES_META]) ? meta[CLIENT_CAPABILITIES_META] : null;
  if (!caps) return missingMeta(CLIENT_CAPABILITIES_META);
  const tooLong = clientInfoRefusal(meta[CLIENT_INFO_META], `_meta["${CLIENT_INFO_META}"]`);
  if (tooLong) return tooLong;
  // The table's rows (method-table.ts); none of Estate's tools-only methods needs one yet.
  const needs = findMethod(req.method, 'stateless')?.requires ?? [];
  for (const need of needs) if (!Object.hasOwn(caps, need)) return missingCapability(need);
  return null;
};

/**
 * A stateless request's own run id: a time-ordered UUID (version 7: 48 bits of milliseconds, then 74 random bits). Its
 * record opens a new `run-<id>` stream, and ids that grow with time put each one at the end of the store's stream
 * index instead of at a random page of it: fewer pages written per commit (issue 15).
 */
export const newRunId = (now: number = Date.now()): string => {
  const ts = now.toString(16).padStart(12, '0');
  return `${ts.slice(0, 8)}-${ts.slice(8, 12)}-7${randomUUID().slice(15)}`;
};

const clientOf = (req: JsonRpcRequest): ClientInfo | null => clientOfInfo(isPlainObject(req.params?._meta) ? req.params._meta[CLIENT_INFO_META] : undefined);

export const handleStateless = async (core: ServerCore, message: JsonRpcCall, ctx: StatelessContext): Promise<StatelessOutcome> => {
  if (message.method.startsWith('notifications/')) return { kind: 'none' };
  if (!isRequest(message)) return { kind: 'none' };
  // One span per request (src/app/tracing.ts), parented on the caller's params._meta.traceparent; no session.
  const method = countedMethod(message.method);
  const out = await traceRequest(method, message.params?._meta, STATELESS_REVISION, false, () => answerStateless(core, message, ctx), errorOfOutcome);
  // Counted like a session's requests (stateful-session.ts): `ok` or the JSON-RPC error code, gate refusals included.
  const error = errorOfOutcome(out);
  core.observeRequest(method, STATELESS_REVISION, error === undefined ? 'ok' : String(error.code));
  return out;
};

const errorOfOutcome = (out: StatelessOutcome) => (out.kind === 'response' ? errorOfResponse(out.response) : undefined);

const answerStateless = async (core: ServerCore, message: JsonRpcRequest, ctx: StatelessContext): Promise<StatelessOutcome> => {
  const refused = checkStatelessRequest(message, ctx);
  if (refused) return fail(message.id, refused);
  const params = message.params ?? {};
  core.log.debug({ protocolVersion: STATELESS_REVISION, method: message.method, id: message.id }, 'stateless request');
  const row = findMethod(message.method, 'stateless');
  // ping and logging/setLevel do not exist in this revision: the table says which methods do.
  if (!row) return fail(message.id, methodNotFound(message.method));
  const host: RequestHost = {
    family: 'stateless',
    callTool: (p) => {
      const logLevel = isPlainObject(p._meta) ? p._meta[LOG_LEVEL_META] : undefined;
      return core.callTool({
        params: p,
        principal: ctx.principal,
        defaultRunId: newRunId(),
        protocolVersion: STATELESS_REVISION,
        client: clientOf(message),
        ...(ctx.cancel ? { cancel: ctx.cancel } : {}),
        ...(ctx.notify ? { notify: ctx.notify } : {}),
        ...(isMcpLogLevel(logLevel) ? { logLevel } : {}),
        inputRequired: { capabilities: isPlainObject(p._meta) && isPlainObject(p._meta[CLIENT_CAPABILITIES_META]) ? p._meta[CLIENT_CAPABILITIES_META] : {} },
      });
    },
  };
  try {
    const answer = await row.run({ core, revision: STATELESS_REVISION, principal: ctx.principal, params, host });
    if ('listen' in answer) return { kind: 'listen', request: message, toolsListChanged: answer.listen.toolsListChanged };
    return { kind: 'response', status: 200, response: success(message.id, complete(answer.result)) };
  } catch (e) {
    if (!(e instanceof McpError)) core.log.error({ err: e, method: message.method }, 'stateless request failed');
    // In-band (200) like every dispatch error, but for a missing client capability (HTTP 400 wherever it is found) and a
    // caller at its bound of running calls (429: HTTP clients and proxies know to retry it later).
    const status = e instanceof McpError && (e.code === MISSING_CLIENT_CAPABILITY || e.code === TOO_MANY_CALLS) ? httpStatusOf(e.code) : 200;
    return { kind: 'response', status, response: { jsonrpc: '2.0', id: message.id, error: toJsonRpcError(e) } };
  }
};
