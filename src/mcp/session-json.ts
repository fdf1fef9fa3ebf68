/**
 * A session's request answered as plain JSON by Estate itself, past the SDK transport. Streamable HTTP lets the server
 * choose, per POST, between an event stream and one JSON response; a request that can send nothing before its answer
 * (StatefulSession.sendsOnlyItsAnswer: anything but a tools/call that may report progress, log, or ask the client)
 * gets JSON. The SDK transport keeps everything that may stream, and initialize, notifications, GET and DELETE
 * (http-sessions.ts). Why: the transport answers through a web Request/Response bridge and an event stream whose
 * priming event and message are written apart; for a call whose answer is all there is to send, that cost more than
 * the rest of the call (docs/benchmarks-history.md, "Issue 15: tools/call, profiled").
 *
 * Before dispatch, the checks the SDK transport makes on such a POST, in its order and with its answers (id null,
 * HTTP status): Accept must name both media types (406), an MCP-Protocol-Version header must be one the transport
 * speaks (400). Not the SDK's message shape: its -32700 with id null for valid JSON is not SPEC §3's answer, and Estate
 * takes here what it takes on stdio. The ones Estate made already (content type, size, JSON, envelope, session,
 * duplicate id) ran before this.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { header } from '#http/header';
import { sendJson, sendJsonText } from '#http/send-json';
import type { UntakenOwners } from '#http/unsent';
import { isPlainObject, responseBody, type JsonRpcRequest } from './jsonrpc.ts';
import type { StatefulSession } from './stateful-session.ts';

/** What the session transports speak (http-sessions.ts hands the same list to the SDK transport). */
export interface SessionJsonOptions {
  revisions: readonly string[];
  onRefused?: (why: string) => void;
  /** Whom a large answer left untaken is charged to (#http/unsent). */
  owners?: UntakenOwners;
}

interface Refusal {
  status: number;
  code: number;
  message: string;
}

const REQUEST_KEYS = new Set(['jsonrpc', 'id', 'method', 'params']);
const isId = (v: unknown): boolean => typeof v === 'string' || (typeof v === 'number' && Number.isSafeInteger(v));
const RELATED_TASK_META = 'io.modelcontextprotocol/related-task';

/**
 * Why the SDK's JSONRPCMessageSchema (@modelcontextprotocol/core) refuses a request, or null when it takes it: no
 * member beyond the four of JSON-RPC, a string or safe-integer id, a string method, and params (if any) an object whose
 * `_meta` (if any) is an object with a string or safe-integer progressToken and a related-task `{taskId: string}` when
 * present. Written out because the zod parse cost more than the rest of the check; test/unit/mcp-session-json.test.ts
 * holds it equal to the schema on generated messages. Asked of what goes on to the SDK transport (streamable-http.ts).
 */
export const sdkRequestShapeProblem = (raw: unknown): string | null => {
  if (!isPlainObject(raw) || raw.jsonrpc !== '2.0' || typeof raw.method !== 'string') return 'not a JSON-RPC request';
  if (!isId(raw.id)) return 'id must be a string or an integer';
  for (const key of Object.keys(raw)) if (!REQUEST_KEYS.has(key)) return `unknown member '${key.slice(0, 64)}' (a request has jsonrpc, id, method and params)`;
  if (raw.params === undefined) return null;
  if (!isPlainObject(raw.params)) return 'params must be an object';
  const meta = raw.params._meta;
  if (meta === undefined) return null;
  if (!isPlainObject(meta)) return 'params._meta must be an object';
  if (meta.progressToken !== undefined && !isId(meta.progressToken)) return 'params._meta.progressToken must be a string or an integer';
  const task = meta[RELATED_TASK_META];
  return task === undefined || (isPlainObject(task) && typeof task.taskId === 'string') ? null : `params._meta["${RELATED_TASK_META}"] must be {taskId: string}`;
};

export const isSdkRequestShape = (raw: unknown): boolean => sdkRequestShapeProblem(raw) === null;

/**
 * The SDK transport's refusal of this POST, or null; its order: Accept, protocol version header. Not its refusal of a
 * message shape it does not take (-32700 with id null, for valid JSON): Estate answers these requests itself, as it
 * does on stdio, and what goes on to the SDK transport is checked before (streamable-http.ts, -32600 with the id).
 */
export const sdkRefusal = (req: IncomingMessage, _raw: unknown, revisions: readonly string[]): Refusal | null => {
  const accept = header(req, 'accept');
  if (!accept?.includes('application/json') || !accept.includes('text/event-stream')) {
    return { status: 406, code: -32000, message: 'Not Acceptable: Client must accept both application/json and text/event-stream' };
  }
  const version = header(req, 'mcp-protocol-version');
  if (version !== undefined && !revisions.includes(version)) {
    return { status: 400, code: -32000, message: `Bad Request: Unsupported protocol version: ${version} (supported versions: ${revisions.join(', ')})` };
  }
  return null;
};

/**
 * Whether the SDK transport would have refused this POST; if so it is answered as the transport would (its own body,
 * key order included) and the request's id is released for the client to use again.
 */
export const refusedAsSdk = (req: IncomingMessage, res: ServerResponse, s: { session: StatefulSession }, message: JsonRpcRequest, raw: unknown, o: SessionJsonOptions): boolean => {
  const refused = sdkRefusal(req, raw, o.revisions);
  if (!refused) return false;
  s.session.unclaim(message.id);
  o.onRefused?.(refused.message);
  sendJson(res, refused.status, { jsonrpc: '2.0', error: { code: refused.code, message: refused.message }, id: null });
  return true;
};

/** Answers `message` (a request the session has claimed) as one JSON response carrying the session id. */
export const answerAsJson = async (
  req: IncomingMessage,
  res: ServerResponse,
  s: { id: string; session: StatefulSession },
  message: JsonRpcRequest,
  raw: unknown,
  o: SessionJsonOptions,
): Promise<void> => {
  if (refusedAsSdk(req, res, s, message, raw, o)) return;
  const answer = await s.session.handle(message);
  // A client that hung up gets nothing (as on the SDK's JSON path); the call itself ran and was recorded.
  if (answer && !res.destroyed) sendJsonText(res, 200, responseBody(answer), { 'mcp-session-id': s.id }, o.owners);
};
