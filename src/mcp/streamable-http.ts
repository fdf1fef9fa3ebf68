/**
 * Streamable HTTP at `/mcp` (SPEC §3): what one request to /mcp gets, once the listener (src/compose/http-listener.ts)
 * has checked Host/Origin and, with authorization, found its caller. Our own checks run first — content type (415),
 * body size (413), JSON (-32700), envelope (-32600), the stateless gates (-32602/-32022/-32020/-32021 as HTTP 400) and
 * session lookup (404) — because errors sent through the SDK transport after dispatch come back as HTTP 200. Then:
 * stateless requests are answered here as JSON (a `subscriptions/listen` gets an SDK event stream); a session's
 * requests once it is initialized are answered by Estate (session-json.ts, session-stream.ts, and a reconnect to a
 * running call's stream), and the rest (initialize, notifications, the GET stream, DELETE) by its SDK transport.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { JSONRPCMessage } from '@modelcontextprotocol/server';
import type { Principal } from '#domain/types';
import { isJsonContentType, readBody, refuseBusy, refuseTooLarge } from '#http/guards';
import { header } from '#http/header';
import { sendJson, sendJsonText } from '#http/send-json';
import { MAX_UNSENT_BYTES, type UntakenOwners } from '#http/unsent';
import { DEFAULT_MAX_LISTENS_PER_SUBJECT } from '#config';
import { clientInfoRefusal } from './client-info.ts';
import { httpStatusOf, notInitialized } from './error-map.ts';
import { HttpSessions, KEEP_ALIVE_MS, SESSION_TRANSPORT_REVISIONS, type SessionCaps } from './http-sessions.ts';
import { createSdkTransport, loadSdkTransport, serveOverNode } from './sdk-transport.ts';
import { answerAsJson, sdkRequestShapeProblem } from './session-json.ts';
import { answerAsStream, resumeCallStream } from './session-stream.ts';
import { Cancellation } from './cancellation.ts';
import { duplicateId, type BatchLimits } from './batch-limits.ts';
import {
  checkEnvelope,
  failure,
  INVALID_REQUEST,
  isPlainObject,
  isRequest,
  isResponseEnvelope,
  parseFrame,
  readableId,
  responseBody,
  success,
  type JsonRpcCall,
  type JsonRpcFailure,
  type JsonRpcNotification,
  type JsonRpcRequest,
} from './jsonrpc.ts';
import { openListen } from './listen.ts';
import { negotiate, STATELESS_REVISION } from './revisions.ts';
import type { ServerCore } from './server-core.ts';
import { checkStatelessRequest, handleStateless, isStatelessMessage, mayNotify, type StatelessContext } from './stateless.ts';
import { SubjectCounts, boundKey, subjectOf } from './subject-counts.ts';

/** The caller of one /mcp request, found by authorization; `owner` keys the sessions it may use. */
export interface McpCaller {
  principal: Principal;
  owner: string;
}

export interface StreamableHttpOptions {
  core: ServerCore;
  /** Every request's principal when no caller is given (no authorization: the flags' principal). */
  principal: Principal;
  sessionIdleMs?: number;
  /** Session caps per subject and in total (default DEFAULT_SESSION_CAPS). */
  sessionCaps?: SessionCaps;
  /** The 2025-03-26 batch bound (default DEFAULT_BATCH_LIMITS). */
  batchLimits?: BatchLimits;
  /** 2026-07-28 listen streams one subject may hold open at once (default DEFAULT_MAX_LISTENS_PER_SUBJECT). */
  maxListensPerSubject?: number;
}

export interface StreamableHttp {
  /** Answers one request to /mcp; `caller` is authorization's (absent: `principal`, no owner). */
  handle(req: IncomingMessage, res: ServerResponse, caller?: McpCaller): Promise<void>;
  sessions: HttpSessions;
  /** Ends every listen stream and session. */
  close(): void;
}

const SESSION_NOT_FOUND = -32001;
/** Bytes the SDK transport adds around a message's JSON in an event without an id: `event: message\ndata: ` and `\n\n`. */
const SSE_EVENT_FRAMING = 23;
export const FORBIDDEN = -32000;

/**
 * A request about to go to the SDK transport (an initialize, or a request before the session is initialized) that it
 * would refuse as "Parse error" with id null although it is valid JSON (SPEC §3: -32600 with the id): answered here
 * instead. Null: the transport takes it.
 */
const refusedBeforeSdk = (m: JsonRpcRequest): JsonRpcFailure | null => {
  const shape = sdkRequestShapeProblem(m);
  return shape ? failure(readableId(m), INVALID_REQUEST, `Invalid Request: ${shape}`) : null;
};

/**
 * An initialize as the SDK transport recognises one. Over stdio a session takes an initialize whatever its params
 * hold (a protocolVersion it does not speak, or none, negotiates its newest; no clientInfo is an unnamed client); the
 * SDK transport, which starts an HTTP session, took one without a string protocolVersion, an object capabilities or a
 * clientInfo with string name and version for something else, and answered "Server not initialized" with id null.
 * Filled in the way the session reads them, so the two transports agree.
 */
const asSdkInitialize = (m: JsonRpcRequest): JsonRpcRequest => {
  const p = m.params ?? {};
  const info = p.clientInfo;
  const named = isPlainObject(info) && typeof info.name === 'string' && typeof info.version === 'string';
  if (typeof p.protocolVersion === 'string' && isPlainObject(p.capabilities) && named) return m;
  return {
    ...m,
    params: {
      ...p,
      protocolVersion: negotiate(p.protocolVersion),
      capabilities: isPlainObject(p.capabilities) ? p.capabilities : {},
      clientInfo: named ? info : { name: isPlainObject(info) && typeof info.name === 'string' ? info.name : '', version: '' },
    },
  };
};

export const createStreamableHttp = (o: StreamableHttpOptions): StreamableHttp => {
  const { core, principal } = o;
  const sessions = new HttpSessions(core, principal, o.sessionIdleMs, o.sessionCaps, o.batchLimits);
  const callers = new WeakMap<IncomingMessage, McpCaller>();
  const principalOf = (req: IncomingMessage): Principal => callers.get(req)?.principal ?? principal;
  const ownerOf = (req: IncomingMessage): string | undefined => callers.get(req)?.owner;
  const listenStreams = new Set<() => void>();
  /** Listen streams open per subject: each is a connection, a transport and a watcher every catalogue change visits. */
  const listening = new SubjectCounts();
  const maxListens = o.maxListensPerSubject ?? DEFAULT_MAX_LISTENS_PER_SUBJECT;
  /** A large answer its client leaves untaken counts against the caller (#http/unsent, ServerCore.callTool). */
  const owners: UntakenOwners = { accountOf: (req) => core.untakenAccount(principalOf(req)) };
  const jsonOptions = { revisions: SESSION_TRANSPORT_REVISIONS, onRefused: (why: string) => core.log.debug({ err: why }, 'transport error'), owners };
  const streamOptions = { ...jsonOptions, keepAliveMs: KEEP_ALIVE_MS, onError: (e: unknown) => core.log.error({ err: e }, 'session call failed') };

  const stateless = async (req: IncomingMessage, res: ServerResponse, raw: unknown): Promise<void> => {
    if (Array.isArray(raw)) return sendJson(res, 400, failure(null, INVALID_REQUEST, 'Invalid Request: batches do not exist in 2026-07-28'));
    const env = checkEnvelope(raw);
    if (!env.ok) return sendJson(res, 400, env.response);
    // A client that hangs up has given up: its handler's signal is aborted (recorded `cancelled`).
    const gaveUp = new Cancellation();
    res.on('close', () => {
      if (!res.writableFinished) gaveUp.abort();
    });
    const ctx: StatelessContext = { principal: principalOf(req), headers: (n) => header(req, n), cancel: gaveUp };
    if (isRequest(env.message) && mayNotify(env.message) && checkStatelessRequest(env.message, ctx) === null) {
      return streamStateless(req, res, raw, ctx);
    }
    const out = await handleStateless(core, env.message, ctx);
    if (out.kind === 'none') {
      res.writeHead(202).end();
      return;
    }
    if (out.kind === 'response') {
      return sendJsonText(res, out.status, responseBody(out.response), {}, owners);
    }
    // subscriptions/listen: a per-request SDK transport holds the event stream (keep-alive comments included). At most
    // maxListens of them per subject, as sessions are capped: refused before anything is opened.
    const subject = subjectOf(principalOf(req));
    const key = boundKey(principalOf(req));
    const open = listening.of(key);
    if (open >= maxListens) {
      const message = `Too Many Requests: subject '${subject.slice(0, 80)}' already has ${open} subscriptions/listen streams open (at most ${maxListens}, ESTATE_MAX_LISTENS_PER_SUBJECT); close one`;
      return sendJson(res, 429, failure(out.request.id, FORBIDDEN, message));
    }
    listening.take(key);
    res.once('close', () => listening.give(key));
    await loadSdkTransport();
    const transport = createSdkTransport({ sessionIdGenerator: undefined, keepAliveMs: KEEP_ALIVE_MS, supportedProtocolVersions: [STATELESS_REVISION] });
    let listen: { close(): void } | undefined;
    const stop = () => listen?.close();
    listenStreams.add(stop);
    res.on('close', () => {
      stop();
      listenStreams.delete(stop);
      void transport.close().catch(() => undefined);
    });
    transport.onmessage = (m) => {
      const request = m as unknown as JsonRpcRequest;
      listen = openListen(core, principalOf(req), request, out.toolsListChanged, (n) => {
        void transport.send(n as JSONRPCMessage, { relatedRequestId: request.id }).catch(() => undefined);
      });
    };
    await transport.start();
    await serveOverNode(transport, req, res, raw, { owners });
  };

  /**
   * A tools/call that asked for progress or log messages: answered as an event stream by a per-request SDK transport.
   * A client that stops reading is not sent more than MAX_UNSENT_BYTES of them: past that, what the transport holds
   * for it (`handed` less `written`) plus what Node holds for its socket, further notifications are dropped (a stateless
   * stream has nothing to resume from; the answer is always sent), and a client that reads nothing for STALL_MS is
   * dropped (serveOverNode), which cancels the call. One call may send 1,000 log lines of 8 KiB and 10,000 progress
   * notifications: without the bound they all waited in this process's memory for such a client, call by call.
   */
  const streamStateless = async (req: IncomingMessage, res: ServerResponse, raw: unknown, ctx: StatelessContext): Promise<void> => {
    await loadSdkTransport();
    const transport = createSdkTransport({ sessionIdGenerator: undefined, keepAliveMs: KEEP_ALIVE_MS, supportedProtocolVersions: [STATELESS_REVISION] });
    const written = { bytes: 0 };
    let handed = 0;
    let dropped = 0;
    transport.onmessage = (m) => {
      const request = m as unknown as JsonRpcRequest;
      const notify = (n: JsonRpcNotification): void => {
        if (handed - written.bytes + res.writableLength > MAX_UNSENT_BYTES) {
          if (dropped++ === 0) core.log.debug({ method: n.method }, 'a stateless call stream\'s client is not reading: its notifications are dropped');
          return;
        }
        // The transport's event: `event: message\ndata: <json>\n\n` (no id: a stateless stream is not resumable).
        handed += SSE_EVENT_FRAMING + Buffer.byteLength(JSON.stringify(n));
        void transport.send(n as JSONRPCMessage, { relatedRequestId: request.id }).catch(() => undefined);
      };
      void handleStateless(core, request, { ...ctx, notify })
        .then((out) => (out.kind === 'response' ? transport.send(out.response as JSONRPCMessage) : undefined))
        .catch((e: unknown) => core.log.error({ err: e }, 'stateless stream failed'));
    };
    res.on('close', () => void transport.close().catch(() => undefined));
    await transport.start();
    await serveOverNode(transport, req, res, raw, { written, owners });
  };

  const stateful = async (req: IncomingMessage, res: ServerResponse, raw: unknown, bytes: number): Promise<void> => {
    const sid = header(req, 'mcp-session-id');
    if (sid === undefined) {
      // No session yet: only initialize starts one; ping is answerable before it (gate 4), notifications are dropped.
      if (Array.isArray(raw)) return sendJson(res, 400, failure(null, INVALID_REQUEST, notInitialized().message));
      const env = checkEnvelope(raw);
      if (!env.ok) return sendJson(res, 400, env.response);
      const m: JsonRpcCall = env.message;
      if (m.method.startsWith('notifications/') || !isRequest(m)) {
        res.writeHead(202).end();
        return;
      }
      if (m.method === 'ping') return sendJson(res, 200, success(m.id, {}));
      if (m.method !== 'initialize') return sendJson(res, 400, failure(m.id, notInitialized().code, notInitialized().message));
      const refused = refusedBeforeSdk(m);
      if (refused) return sendJson(res, 400, refused);
      // Refused here, not by the session after the SDK has named it: a plain 400, no session id handed out.
      const tooLong = clientInfoRefusal(m.params?.clientInfo, 'clientInfo');
      if (tooLong) return sendJson(res, 400, failure(m.id, tooLong.code, tooLong.message));
      // Loaded before the admission check, so that nothing awaits between admitting the session and counting it.
      await loadSdkTransport();
      const refusal = sessions.admit(principalOf(req));
      if (refusal) return sendJson(res, refusal.status, failure(m.id, FORBIDDEN, refusal.message), refusal.status === 503 ? { 'retry-after': '60' } : {});
      const s = sessions.create(principalOf(req), ownerOf(req));
      await serveOverNode(s.transport, req, res, asSdkInitialize(m), { owners });
      if (!s.session.isInitialized) sessions.drop(s.id);
      return;
    }
    const s = sessions.get(sid, ownerOf(req));
    if (!s) return sendJson(res, 404, failure(null, SESSION_NOT_FOUND, 'Session not found'));
    if (Array.isArray(raw)) {
      const answer = await s.session.handleFrame(raw, bytes);
      if (answer === null) {
        res.writeHead(202).end();
        return;
      }
      const status = !Array.isArray(answer) && 'error' in answer ? httpStatusOf(answer.error.code) : 200;
      return sendJson(res, status, answer, { 'mcp-session-id': s.id });
    }
    if (isResponseEnvelope(raw)) {
      // The client answering our elicitation/sampling request: accepted like a notification, whatever it settled.
      s.session.acceptResponse(raw);
      res.writeHead(202, { 'mcp-session-id': s.id }).end();
      return;
    }
    const env = checkEnvelope(raw);
    if (!env.ok) return sendJson(res, 400, env.response, { 'mcp-session-id': s.id });
    if (env.message.method === 'initialize' && isRequest(env.message)) {
      return sendJson(res, 400, failure(env.message.id, INVALID_REQUEST, 'Invalid Request: the session is already initialized'), { 'mcp-session-id': s.id });
    }
    if (isRequest(env.message)) {
      // Refused here, before the SDK transport maps the id to this response stream and takes it from the first.
      const id = env.message.id;
      if (!s.session.claim(id)) return sendJson(res, 400, duplicateId(id), { 'mcp-session-id': s.id });
      res.on('close', () => s.session.unclaim(id));
      if (s.session.isInitialized && s.session.sendsOnlyItsAnswer(env.message)) return answerAsJson(req, res, s, env.message, raw, jsonOptions);
      if (s.session.isInitialized) return answerAsStream(req, res, s, env.message, raw, streamOptions);
      const refused = refusedBeforeSdk(env.message);
      if (refused) {
        s.session.unclaim(id);
        return sendJson(res, 400, refused, { 'mcp-session-id': s.id });
      }
    }
    await serveOverNode(s.transport, req, res, raw, { owners });
  };

  const post = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    // The unread body of a refusal is the listener's to bound and close (refusalBoundedResponse, src/http/guards.ts).
    if (!isJsonContentType(header(req, 'content-type'))) {
      return sendJson(res, 415, failure(null, FORBIDDEN, 'Unsupported Media Type: Content-Type must be application/json'));
    }
    const body = await readBody(req);
    if (!body.ok) {
      if ('busy' in body) return refuseBusy(req, res, failure(null, FORBIDDEN, body.busy));
      return refuseTooLarge(req, res, failure(null, FORBIDDEN, 'Payload Too Large: the body exceeds 1 MiB'));
    }
    const parsed = parseFrame(body.text);
    if (!parsed.ok) return sendJson(res, 400, parsed.response);
    const raw = parsed.value;
    if (header(req, 'mcp-protocol-version') === STATELESS_REVISION || isStatelessMessage(raw)) return stateless(req, res, raw);
    return stateful(req, res, raw, Buffer.byteLength(body.text));
  };

  const streamOrDelete = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const sid = header(req, 'mcp-session-id');
    if (sid === undefined) return sendJson(res, 400, failure(null, FORBIDDEN, 'Bad Request: Mcp-Session-Id header is required'));
    const s = sessions.get(sid, ownerOf(req));
    if (!s) return sendJson(res, 404, failure(null, SESSION_NOT_FOUND, 'Session not found'));
    if (req.method === 'GET') {
      s.openStreams++;
      res.on('close', () => {
        s.openStreams--;
        s.lastSeen = Date.now();
      });
      // A reconnect to one of Estate's own call streams while its call runs (session-stream.ts); any other (the GET
      // stream's, or a call stream whose call has ended) is the SDK transport's to replay from the shared buffer.
      const last = header(req, 'last-event-id');
      if (last !== undefined && header(req, 'accept')?.includes('text/event-stream') && resumeCallStream(s, res, last)) return;
    }
    await serveOverNode(s.transport, req, res, undefined, { owners });
  };

  const handle = async (req: IncomingMessage, res: ServerResponse, caller?: McpCaller): Promise<void> => {
    if (caller) callers.set(req, caller);
    switch (req.method) {
      case 'POST':
        return post(req, res);
      case 'GET':
      case 'DELETE':
        return streamOrDelete(req, res);
      default:
        return sendJson(res, 405, failure(null, FORBIDDEN, 'Method not allowed'), { allow: 'GET, POST, DELETE' });
    }
  };

  return {
    handle,
    sessions,
    close: () => {
      for (const stop of listenStreams) stop();
      sessions.close();
    },
  };
};
