/**
 * The node HTTP listener of `estate serve --http`: one port that mounts MCP at /mcp (src/mcp/streamable-http.ts), the
 * publishing API and its metadata (src/http/edge.ts, with authorization), the web console (src/console) and the
 * operations routes (src/ops). It decides, per path, which checks run first: probes before the Host check, then
 * Host/Origin for everything else (DNS rebinding), then authorization, then the room that serves the path.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { HttpEdge } from '#http/edge';
import { limitConnections, type ListenerCounts, type ListenerLimits } from '#http/connection-limits';
import { hostAllowed, originAllowed, refusalBoundedResponse } from '#http/guards';
import { header } from '#http/header';
import { sendJson } from '#http/send-json';
import type { Log } from '#app/log';
import { isBrowserGet, sendBrowserPage } from '#mcp/browser-page';
import { failure } from '#mcp/jsonrpc';
import { FORBIDDEN, type StreamableHttp } from '#mcp/streamable-http';

export interface HttpListenerOptions {
  mcp: StreamableHttp;
  host: string;
  port: number;
  allowedHosts: readonly string[];
  allowedOrigins: readonly string[];
  log: Log;
  /** Open connections, and bytes of bodies being read, in total and per remote address (src/http/connection-limits.ts). */
  connections: ListenerLimits;
  /** Authorization: extra routes and the caller of each /mcp request (else every request is the flags' principal). */
  edge?: HttpEdge;
  /** The web console's routes (src/console), behind the same Host/Origin checks; absent with --no-console. */
  console?: { home: string; serves(path: string): boolean; handle(req: IncomingMessage, res: ServerResponse, path: string): Promise<void> };
  /** Operations routes (`/healthz`, `/readyz`, `/metrics`: src/ops/http-routes.ts); null for paths it does not serve. */
  ops?: (path: string, req: IncomingMessage) => Promise<{ status: number; body: unknown; contentType?: string }> | null;
  /** Bounds on a refused request's unread body (refusalBoundedResponse, src/http/guards.ts); its defaults unless a test sets them. */
  refusedDrain?: { drainLimit?: number; timeoutMs?: number };
  /** How long a whole request (headers and body) may take; and how often Node checks it. Tests lower them. */
  requestTimeoutMs?: number;
  requestCheckEveryMs?: number;
}

/**
 * How long a request may take to arrive whole, headers and body, from its first byte: a body that never ends (slow,
 * chunked, or never sent) holds its connection no longer than headers that never end. Node checks every 30 s, so such
 * a connection is answered 408 and closed between 66 and 96 s. It counts only the request: an answer (an event stream)
 * may last as long as it needs.
 */
export const REQUEST_TIMEOUT_MS = 66_000;

export interface RunningHttpListener {
  url: string;
  /** Open connections now, those refused since start, and the body bytes being read (for metrics). */
  connections(): ListenerCounts;
  close(): Promise<void>;
}

const NOT_FOUND = { error: 'not found: Estate serves MCP at /mcp' };

export const startHttpListener = async (o: HttpListenerOptions): Promise<RunningHttpListener> => {
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
    // A person who opens the server's root in a browser is sent where there is something to see: the console, or
    // (with --no-console) /mcp's page on connecting a client. Anything else at the root is still a 404.
    const toRoot = path === '/' && isBrowserGet(req);
    if (!toRoot && path !== '/mcp' && path !== '/metrics' && !o.edge?.serves(path) && !o.console?.serves(path)) return sendJson(res, 404, NOT_FOUND);
    if (!hostAllowed(header(req, 'host'), o.allowedHosts)) {
      return sendJson(res, 403, failure(null, FORBIDDEN, `Forbidden: Host '${header(req, 'host') ?? ''}' is not allowed`));
    }
    if (!originAllowed(header(req, 'origin'), o.allowedOrigins)) {
      return sendJson(res, 403, failure(null, FORBIDDEN, `Forbidden: Origin '${header(req, 'origin') ?? ''}' is not allowed`));
    }
    if (toRoot) {
      res.writeHead(302, { location: o.console?.home ?? '/mcp', 'cache-control': 'no-store' });
      return void res.end();
    }
    if (o.console?.serves(path)) return o.console.handle(req, res, path);
    if (path === '/metrics') return (await answerOps()) ? undefined : sendJson(res, 404, NOT_FOUND);
    // A person opening /mcp in a browser gets a page saying what this is, not a JSON-RPC error (src/mcp/browser-page.ts).
    if (path === '/mcp' && isBrowserGet(req)) return sendBrowserPage(req, res);
    if (!o.edge) return o.mcp.handle(req, res);
    if (path !== '/mcp') return o.edge.route(req, res, path);
    const caller = await o.edge.authenticate(req, res);
    if (caller) return o.mcp.handle(req, res, caller);
  };

  // Every refusal sent before its body was read closes the connection instead of reading the body to its end: the
  // responses' own class sees every head written (refusalBoundedResponse).
  const server: Server = createServer({ ServerResponse: refusalBoundedResponse(o.refusedDrain), ...(o.requestCheckEveryMs ? { connectionsCheckingInterval: o.requestCheckEveryMs } : {}) }, (req, res) => {
    handle(req, res).catch((e: unknown) => {
      o.log.error({ err: e }, 'http request failed');
      if (!res.headersSent) sendJson(res, 500, failure(null, -32603, 'Internal error'));
      else res.end();
    });
  });
  // Node closes an idle keep-alive connection after 5 s; a client that picks that connection for its next POST in the
  // same instant reads "other side closed" and cannot retry a POST. Keeping idle connections far longer than clients
  // do (undici: 4 s, browsers: a minute) makes the client the one that closes (the usual load-balancer setting).
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
  server.requestTimeout = o.requestTimeoutMs ?? REQUEST_TIMEOUT_MS;
  if (server.headersTimeout > server.requestTimeout) server.headersTimeout = server.requestTimeout;
  // Also charges every route's bodies (readBody) to the connection's address and the listener's total.
  const connections = limitConnections(server, o.connections, o.log);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port, o.host, () => resolve());
  });
  const addr = server.address() as AddressInfo;
  const hostForUrl = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  return {
    url: `http://${hostForUrl}:${addr.port}/mcp`,
    connections,
    close: async () => {
      o.mcp.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
};
