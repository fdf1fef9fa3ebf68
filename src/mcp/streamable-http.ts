/**
 * Streamable HTTP at `/mcp` (SPEC §3). Our own checks run first — Host/Origin (403), content type (415), body size
 * (413), JSON (-32700), envelope (-32600), the stateless gates (-32602/-32022/-32020/-32021 as HTTP 400) and session
 * lookup (404) — because errors sent through the SDK transport after dispatch come back as HTTP 200. Then:
 * stateless requests are answered here as JSON (a `subscriptions/listen` gets an SDK event stream); stateful
 * sessions go through their SDK transport.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { NodeStreamableHTTPServerTransport } from '@modelcontextprotocol/node';
import type { JSONRPCMessage } from '@modelcontextprotocol/server';
import type { Principal } from '../domain/types.ts';
import type { EdgeCaller, HttpEdge } from '../auth/http-edge.ts';
import { isBrowserGet, sendBrowserPage } from './browser-page.ts';
import { httpStatusOf, notInitialized } from './error-map.ts';
import { hostAllowed, isJsonContentType, originAllowed, readBody, refuseTooLarge } from './http-guards.ts';
import { HttpSessions, KEEP_ALIVE_MS, type SessionCaps } from './http-sessions.ts';
import { duplicateId, type BatchLimits } from './stateful-session.ts';
import { checkEnvelope, failure, INVALID_REQUEST, isRequest, isResponseEnvelope, parseFrame, success, type JsonRpcCall, type JsonRpcNotification, type JsonRpcRequest } from './jsonrpc.ts';
import { openListen } from './listen.ts';
import { STATELESS_REVISION } from './revisions.ts';
import type { ServerCore } from './server-core.ts';
import { checkStatelessRequest, handleStateless, isStatelessMessage, mayNotify, type StatelessContext } from './stateless.ts';

export interface HttpServeOptions {
  core: ServerCore;
  principal: Principal;
  host: string;
  port: number;
  allowedHosts: readonly string[];
  allowedOrigins: readonly string[];
  sessionIdleMs?: number;
  /** Session caps per subject and in total (default DEFAULT_SESSION_CAPS). */
  sessionCaps?: SessionCaps;
  /** The 2025-03-26 batch bound (default DEFAULT_BATCH_LIMITS). */
  batchLimits?: BatchLimits;
  /** Authorization: extra routes and the caller of each /mcp request (else every request is `principal`). */
  edge?: HttpEdge;
  /** The web console's routes (src/console), behind the same Host/Origin checks; absent with --no-console. */
  console?: { serves(path: string): boolean; handle(req: IncomingMessage, res: ServerResponse, path: string): Promise<void> };
  /** Operations routes (`/healthz`, `/readyz`: src/ops/http-routes.ts); answers null for paths it does not serve. */
  ops?: (path: string, req: IncomingMessage) => Promise<{ status: number; body: unknown; contentType?: string }> | null;
}

export interface RunningHttpServer {
  url: string;
  sessions: HttpSessions;
  close(): Promise<void>;
}

const SESSION_NOT_FOUND = -32001;
const FORBIDDEN = -32000;

const sendJson = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void => {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(text)), ...headers });
  res.end(text);
};

const header = (req: IncomingMessage, name: string): string | undefined => {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
};

export const startHttpServer = async (o: HttpServeOptions): Promise<RunningHttpServer> => {
  const { core, principal } = o;
  const sessions = new HttpSessions(core, principal, o.sessionIdleMs, o.sessionCaps, o.batchLimits);
  const callers = new WeakMap<IncomingMessage, EdgeCaller>();
  const principalOf = (req: IncomingMessage): Principal => callers.get(req)?.principal ?? principal;
  const ownerOf = (req: IncomingMessage): string | undefined => callers.get(req)?.owner;
  const listenStreams = new Set<() => void>();

  const stateless = async (req: IncomingMessage, res: ServerResponse, raw: unknown): Promise<void> => {
    if (Array.isArray(raw)) return sendJson(res, 400, failure(null, INVALID_REQUEST, 'Invalid Request: batches do not exist in 2026-07-28'));
    const env = checkEnvelope(raw);
    if (!env.ok) return sendJson(res, 400, env.response);
    // A client that hangs up has given up: its handler's signal is aborted (recorded `cancelled`).
    const gaveUp = new AbortController();
    res.on('close', () => {
      if (!res.writableFinished) gaveUp.abort();
    });
    const ctx: StatelessContext = { principal: principalOf(req), headers: (n) => header(req, n), cancel: gaveUp.signal };
    if (isRequest(env.message) && mayNotify(env.message) && checkStatelessRequest(env.message, ctx) === null) {
      return streamStateless(req, res, raw, ctx);
    }
    const out = await handleStateless(core, env.message, ctx);
    if (out.kind === 'none') {
      res.writeHead(202).end();
      return;
    }
    if (out.kind === 'response') {
      return sendJson(res, out.status, out.response);
    }
    // subscriptions/listen: a per-request SDK transport holds the event stream (keep-alive comments included).
    const transport = new NodeStreamableHTTPServerTransport({ sessionIdGenerator: undefined, keepAliveMs: KEEP_ALIVE_MS, supportedProtocolVersions: [STATELESS_REVISION] });
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
    await transport.handleRequest(req, res, raw);
  };

  /** A tools/call that asked for progress or log messages: answered as an event stream by a per-request SDK transport. */
  const streamStateless = async (req: IncomingMessage, res: ServerResponse, raw: unknown, ctx: StatelessContext): Promise<void> => {
    const transport = new NodeStreamableHTTPServerTransport({ sessionIdGenerator: undefined, keepAliveMs: KEEP_ALIVE_MS, supportedProtocolVersions: [STATELESS_REVISION] });
    transport.onmessage = (m) => {
      const request = m as unknown as JsonRpcRequest;
      const notify = (n: JsonRpcNotification) => void transport.send(n as JSONRPCMessage, { relatedRequestId: request.id }).catch(() => undefined);
      void handleStateless(core, request, { ...ctx, notify })
        .then((out) => (out.kind === 'response' ? transport.send(out.response as JSONRPCMessage) : undefined))
        .catch((e: unknown) => core.log.error({ err: e }, 'stateless stream failed'));
    };
    res.on('close', () => void transport.close().catch(() => undefined));
    await transport.start();
    await transport.handleRequest(req, res, raw);
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
      const refusal = sessions.admit(principalOf(req));
      if (refusal) return sendJson(res, refusal.status, failure(m.id, FORBIDDEN, refusal.message), refusal.status === 503 ? { 'retry-after': '60' } : {});
      const s = sessions.create(principalOf(req), ownerOf(req));
      await s.transport.handleRequest(req, res, raw);
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
    }
    await s.transport.handleRequest(req, res, raw);
  };

  const post = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    if (!isJsonContentType(header(req, 'content-type'))) {
      req.resume();
      return sendJson(res, 415, failure(null, FORBIDDEN, 'Unsupported Media Type: Content-Type must be application/json'));
    }
    const body = await readBody(req);
    if (!body.ok) return refuseTooLarge(req, res, failure(null, FORBIDDEN, 'Payload Too Large: the body exceeds 1 MiB'));
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
    }
    await s.transport.handleRequest(req, res);
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    // Probes come from load balancers under their own Host (a pod IP): before the Host check, and they reveal no data.
    // /metrics names tools: it passes the Host and Origin checks like /mcp (no DNS-rebinding read of the catalogue).
    const answerOps = async (): Promise<boolean> => {
      const probed = req.method === 'GET' ? o.ops?.(path, req) : null;
      if (!probed) return false;
      const { status, body, contentType } = await probed;
      if (contentType === undefined) sendJson(res, status, body, { 'cache-control': 'no-store' });
      else {
        res.writeHead(status, { 'content-type': contentType, 'cache-control': 'no-store' });
        res.end(String(body));
      }
      return true;
    };
    if ((path === '/healthz' || path === '/readyz') && (await answerOps())) return;
    if (path !== '/mcp' && path !== '/metrics' && !o.edge?.serves(path) && !o.console?.serves(path)) return sendJson(res, 404, { error: 'not found: Estate serves MCP at /mcp' });
    if (!hostAllowed(header(req, 'host'), o.allowedHosts)) {
      return sendJson(res, 403, failure(null, FORBIDDEN, `Forbidden: Host '${header(req, 'host') ?? ''}' is not allowed`));
    }
    if (!originAllowed(header(req, 'origin'), o.allowedOrigins)) {
      return sendJson(res, 403, failure(null, FORBIDDEN, `Forbidden: Origin '${header(req, 'origin') ?? ''}' is not allowed`));
    }
    if (o.console?.serves(path)) return o.console.handle(req, res, path);
    if (path === '/metrics') return (await answerOps()) ? undefined : sendJson(res, 404, { error: 'not found: Estate serves MCP at /mcp' });
    // A person opening /mcp in a browser gets a page saying what this is, not a JSON-RPC error (src/mcp/browser-page.ts).
    if (path === '/mcp' && isBrowserGet(req)) return sendBrowserPage(req, res);
    if (o.edge) {
      if (path !== '/mcp') return o.edge.route(req, res, path);
      const caller = await o.edge.authenticate(req, res);
      if (!caller) return;
      callers.set(req, caller);
    }
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

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((e: unknown) => {
      core.log.error({ err: e }, 'http request failed');
      if (!res.headersSent) sendJson(res, 500, failure(null, -32603, 'Internal error'));
      else res.end();
    });
  });
  // Node closes an idle keep-alive connection after 5 s; a client that picks that connection for its next POST in the
  // same instant reads "other side closed" and cannot retry a POST. Keeping idle connections far longer than clients
  // do (undici: 4 s, browsers: a minute) makes the client the one that closes (the usual load-balancer setting).
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port, o.host, () => resolve());
  });
  const addr = server.address() as AddressInfo;
  const hostForUrl = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  return {
    url: `http://${hostForUrl}:${addr.port}/mcp`,
    sessions,
    close: async () => {
      for (const stop of listenStreams) stop();
      sessions.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
};
