/**
 * What a person who opens `/mcp` in a browser gets: a short static page saying this is an MCP endpoint and how to
 * connect a client, instead of a JSON-RPC error about a missing session header. No script, no external asset, every
 * interpolated value escaped; served only to a GET that asks for HTML and carries no session id.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

/** A GET from a browser: it accepts text/html, does not ask for an event stream, and names no MCP session. */
export const isBrowserGet = (req: IncomingMessage): boolean => {
  if (req.method !== 'GET' || req.headers['mcp-session-id'] !== undefined) return false;
  const accept = String(req.headers.accept ?? '').toLowerCase();
  return accept.includes('text/html') && !accept.includes('text/event-stream');
};

export const escapeHtml = (s: string): string =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] as string);

/** The endpoint's public URL as the browser addressed it (Host was already checked against --allowed-hosts). */
const endpointUrl = (req: IncomingMessage): string => `http://${String(req.headers.host ?? 'localhost')}/mcp`;

export const browserPage = (url: string): string => {
  const u = escapeHtml(url);
  const config = escapeHtml(JSON.stringify({ mcpServers: { estate: { type: 'http', url } } }, null, 2));
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Estate MCP endpoint</title>
<meta name="viewport" content="width=device-width, initial-scale=1"></head>
<body style="font-family: sans-serif; max-width: 44rem; margin: 2rem auto; line-height: 1.5">
<h1>This is an MCP endpoint</h1>
<p><code>${u}</code> is an Estate server speaking the Model Context Protocol (Streamable HTTP). It is meant for MCP
clients, not browsers: there is nothing more to see here.</p>
<h2>Connect a client</h2>
<p>Point an MCP client (Claude Desktop, VS Code, Cursor, the MCP Inspector, an SDK <code>Client</code>) at this URL as a
Streamable HTTP server, for example:</p>
<pre>${config}</pre>
<p>Revisions 2026-07-28 (stateless) and 2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05 (sessions) are spoken here.
Which tools a client sees depends on the principal it is served as; <code>estate list</code> shows the whole catalogue,
and <code>estate serve --help</code> lists the options. The project's <code>docs/clients.md</code> has copy-paste
configurations.</p>
</body></html>
`;
};

export const sendBrowserPage = (req: IncomingMessage, res: ServerResponse): void => {
  const body = browserPage(endpointUrl(req));
  res.writeHead(200, {
    'content-type': 'text/html; charset=utf-8',
    'content-length': String(Buffer.byteLength(body)),
    'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'",
    'x-content-type-options': 'nosniff',
    'cache-control': 'no-store',
  });
  res.end(body);
};
