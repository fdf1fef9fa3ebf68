/**
 * The web console at /console/ (SPEC §8): server-rendered pages over the read models, a change stream (SSE) from the
 * catalogue reader, and lifecycle actions through the same CommandHandler and scope rules as the publishing API.
 *
 * Actions are JSON POSTs carrying `X-Estate-Console: 1` (and, with authorization, the bearer token): a cross-site
 * HTML form can send neither a JSON content type nor a custom header without a CORS preflight, which is never
 * granted, so another site cannot act through a visitor's browser.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { CatalogueReader } from '#app/catalogue-reader';
import { readRunStreams } from '#app/call-recorder';
import type { CommandHandler } from '#app/command-handler';
import { decodeToolCalled } from '#app/event-codec';
import type { EventStore, StoredEvent } from '#app/ports';
import { errorJson } from '#app/results-json';
import { covers, LIFECYCLE_SCOPE, scopeNeededFor } from '#auth/api-scopes';
import { DomainError } from '#domain/errors';
import { RUN_ID_PATTERN } from '#domain/events';
import { callRecords } from '#projections/calls';
import type { VersionDetails } from '#projections/catalogue';
import { CONSOLE_CSS, CONSOLE_JS } from './assets.ts';
import { html, page, type Html } from './html.ts';
import { cataloguePage, diffPage, notFoundPage, parseCatalogueQuery, parsePrincipal, principalPage, runPage, runsPage, searchCatalogue, toolPage, upstreamsPage, versionPage, type RunSummary } from './pages.ts';
import { isJsonContentType, readBody, refuseTooLarge } from '#http/guards';
import { sendJson as send } from '#http/send-json';
import { noUpstreams, type UpstreamConsoleSource } from './upstreams.ts';

export const CONSOLE_PREFIX = '/console';
export const ACTION_HEADER = 'x-estate-console';

/** Who acts through the console: the local operator (no authorization), or a signed-in subject. */
export interface ConsoleActor {
  by: string;
  /** Publishing-API scopes held: lifecycle actions need `estate:lifecycle[:<namespace>]` (src/auth/api-scopes.ts). */
  scopes: readonly string[];
}

export interface ConsoleOptions {
  reader: CatalogueReader;
  commands: CommandHandler;
  store: EventStore;
  /** The actor of every request (loopback, no authorization). */
  actor: ConsoleActor;
  upstreams?: UpstreamConsoleSource;
  /** How many runs "recent runs" lists. */
  recentRuns?: number;
  /** Open change streams (/console/events) at most; one more is 503 (default 256). */
  maxStreams?: number;
}

export interface ConsoleRoutes {
  serves(path: string): boolean;
  handle(req: IncomingMessage, res: ServerResponse, path: string): Promise<void>;
  close(): void;
}

const ASSETS: Record<string, { type: string; text: string }> = {
  'console.js': { type: 'text/javascript; charset=utf-8', text: CONSOLE_JS },
  'console.css': { type: 'text/css; charset=utf-8', text: CONSOLE_CSS },
};

/** Pages are framed by nobody, run only our own script, and load nothing from elsewhere. */
const SECURITY_HEADERS = {
  'content-security-policy': "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
};

const sendHtml = (res: ServerResponse, status: number, title: string, body: Html, who: string): void => {
  const text = page(title, body, who);
  res.writeHead(status, { 'content-type': 'text/html; charset=utf-8', 'content-length': String(Buffer.byteLength(text)), ...SECURITY_HEADERS });
  res.end(text);
};

const sendJson = (res: ServerResponse, status: number, body: unknown): void => send(res, status, body, SECURITY_HEADERS);

/** A decoded path segment: printable, bounded; anything else is simply not found. */
const decodeSegment = (s: string): string | null => {
  try {
    const d = decodeURIComponent(s);
    return /^[\x21-\x7e]{1,128}$/.test(d) ? d : null;
  } catch {
    return null;
  }
};

const LIFECYCLE_ACTION = /^\/console\/api\/tools\/([^/]+)\/versions\/([^/]+)\/lifecycle$/;

export const createConsole = (o: ConsoleOptions): ConsoleRoutes => {
  const upstreams = o.upstreams ?? noUpstreams;
  const streams = new Set<ServerResponse>();
  const unsubscribe = o.reader.onUpdate((u) => {
    const data = JSON.stringify({ tools: [...new Set(u.tools)].slice(0, 50), position: u.position });
    for (const res of streams) res.write(`event: catalogue\ndata: ${data}\n\n`);
  });
  const keepAlive = setInterval(() => {
    for (const res of streams) res.write(': keep-alive\n\n');
  }, 15_000);
  keepAlive.unref();

  const who = `local operator: ${o.actor.by}`;
  const canActOn = (name: string): boolean => covers(o.actor.scopes, LIFECYCLE_SCOPE, name);

  const recentRuns = async (): Promise<RunSummary[]> => {
    const byRun = new Map<string, RunSummary>();
    let after: string | null = null;
    for (;;) {
      const batch: StoredEvent[] = await o.store.readAll({ after, streamPrefix: 'run-', limit: 2000 });
      if (batch.length === 0) break;
      for (const e of batch) {
        if (e.type !== 'ToolCalled') continue;
        const c = decodeToolCalled(e).data;
        const r = byRun.get(c.runId);
        if (r) {
          r.calls++;
          if (c.at > r.last) r.last = c.at;
        } else byRun.set(c.runId, { runId: c.runId, calls: 1, last: c.at, tenant: c.tenant, subject: c.subject });
      }
      after = (batch[batch.length - 1] as StoredEvent).position;
    }
    return [...byRun.values()].sort((a, b) => (a.last < b.last ? 1 : a.last > b.last ? -1 : 0)).slice(0, o.recentRuns ?? 50);
  };

  const notFound = (res: ServerResponse, what: string): void => sendHtml(res, 404, 'Not found', notFoundPage(what), who);

  const get = async (req: IncomingMessage, res: ServerResponse, path: string, params: URLSearchParams): Promise<void> => {
    const catalogue = o.reader.catalogue;
    if (path === '/console' || path === '/console/') {
      const q = parseCatalogueQuery(params);
      const found = searchCatalogue(catalogue, q);
      const details = new Map(found.rows.map((v, i) => [v, i]));
      const read = await o.reader.details.ofMany(found.rows);
      return sendHtml(res, 200, 'Catalogue', cataloguePage(catalogue, q, found, (v) => read[details.get(v) ?? -1]), who);
    }
    if (path.startsWith('/console/assets/')) {
      const name = path.slice('/console/assets/'.length);
      const found = Object.hasOwn(ASSETS, name) ? ASSETS[name] : undefined;
      if (!found) return notFound(res, `There is no console asset '${name}'.`);
      const { type, text } = found;
      res.writeHead(200, { 'content-type': type, 'content-length': String(Buffer.byteLength(text)), 'x-content-type-options': 'nosniff', 'cache-control': 'no-cache' });
      res.end(text);
      return;
    }
    if (path === '/console/events') {
      if (streams.size >= (o.maxStreams ?? 256)) {
        res.writeHead(503, { 'retry-after': '30', 'content-type': 'text/plain', 'cache-control': 'no-store' }).end('Service Unavailable: too many open console change streams');
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store', connection: 'keep-alive', 'x-content-type-options': 'nosniff' });
      res.write(`event: hello\ndata: ${JSON.stringify({ position: o.reader.position })}\n\n`);
      streams.add(res);
      req.on('close', () => streams.delete(res));
      return;
    }
    if (path === '/console/principal') return sendHtml(res, 200, 'Try a principal', principalPage(catalogue, parsePrincipal(params)), who);
    if (path === '/console/runs') return sendHtml(res, 200, 'Runs', runsPage(await recentRuns()), who);
    if (path === '/console/upstreams') return sendHtml(res, 200, 'Upstreams', upstreamsPage(await upstreams.list(), o.actor.scopes.length > 0), who);
    const parts = path.split('/').slice(2); // ['tools', name, ...]
    if (parts[0] === 'runs' && parts.length === 2) {
      const runId = decodeSegment(parts[1] as string);
      if (runId === null || !RUN_ID_PATTERN.test(runId)) return notFound(res, 'That is not a run id: 1 to 128 characters of A-Z a-z 0-9 . _ : -, starting with a letter or digit.');
      const calls = (await readRunStreams(o.store, runId)).flatMap((stored) => callRecords(stored.filter((s) => s.type === 'ToolCalled').map(decodeToolCalled)));
      if (calls.length === 0) return notFound(res, `No calls are recorded for run '${runId}'.`);
      return sendHtml(res, 200, `Run ${runId}`, runPage(runId, calls), who);
    }
    if (parts[0] === 'tools' && parts.length >= 2) {
      const name = decodeSegment(parts[1] as string);
      const tool = name === null ? undefined : catalogue.tool(name);
      if (!tool || name === null) return notFound(res, `There is no tool '${name ?? parts[1]}' in the catalogue.`);
      if (parts.length === 2) return sendHtml(res, 200, name, toolPage(tool, await o.reader.details.ofMany(tool.versions)), who);
      if (parts.length === 3 && parts[2] === 'diff') {
        const a = (params.get('a') ?? '').slice(0, 128);
        const b = (params.get('b') ?? '').slice(0, 128);
        const va = catalogue.find(name, a);
        const vb = catalogue.find(name, b);
        if (!va || !vb) return notFound(res, `${name} has no version '${!va ? a : b}'.`);
        const [da, db] = (await o.reader.details.ofMany([va, vb])) as [VersionDetails, VersionDetails];
        return sendHtml(res, 200, `${name} ${a} → ${b}`, diffPage(va, da, vb, db), who);
      }
      if (parts.length === 4 && parts[2] === 'versions') {
        const version = decodeSegment(parts[3] as string);
        const v = version === null ? undefined : catalogue.find(name, version);
        if (!v) return notFound(res, `${name} has no version '${version ?? parts[3]}'.`);
        return sendHtml(res, 200, `${name}@${v.version}`, versionPage(catalogue, v, await o.reader.details.of(v), parsePrincipal(params), canActOn(name)), who);
      }
    }
    return notFound(res, `The console has no page at ${path}.`);
  };

  /** POST /console/api/tools/{name}/versions/{version}/lifecycle {action, reason}: deprecate or retire. */
  const act = async (req: IncomingMessage, res: ServerResponse, path: string): Promise<void> => {
    if (req.headers[ACTION_HEADER] !== '1' || !isJsonContentType(req.headers['content-type'])) {
      req.resume();
      return sendJson(res, 403, { error: { code: 'csrf', message: `Forbidden: console actions are JSON requests with the ${ACTION_HEADER} header, sent by the console itself` } });
    }
    const m = LIFECYCLE_ACTION.exec(path);
    const name = m ? decodeSegment(m[1] as string) : null;
    const version = m ? decodeSegment(m[2] as string) : null;
    if (!m || name === null || version === null) {
      req.resume();
      return sendJson(res, 404, { error: { code: 'not-found', message: `The console has no action at ${path}` } });
    }
    // Scope before body: a caller without the scope learns nothing and changes nothing.
    if (!canActOn(name)) {
      req.resume();
      const scope = scopeNeededFor(LIFECYCLE_SCOPE, name);
      return sendJson(res, 403, { error: { code: 'insufficient_scope', message: `Forbidden: deprecate or retire of ${name} needs the scope ${scope}` } });
    }
    const body = await readBody(req, 16 * 1024);
    if (!body.ok) return refuseTooLarge(req, res, { error: { code: 'payload-too-large', message: 'Payload Too Large: the body exceeds 16 KiB' } });
    let parsed: unknown;
    try {
      parsed = JSON.parse(body.text);
    } catch {
      return sendJson(res, 400, { error: { code: 'bad-json', message: 'Bad Request: the body is not JSON' } });
    }
    const { action, reason } = (parsed ?? {}) as { action?: unknown; reason?: unknown };
    if (action !== 'deprecate' && action !== 'retire') return sendJson(res, 400, { error: { code: 'bad-action', message: "Bad Request: action must be 'deprecate' or 'retire'" } });
    if (typeof reason !== 'string' || reason.trim().length === 0 || reason.length > 500) {
      return sendJson(res, 400, { error: { code: 'bad-reason', message: 'Bad Request: reason must be a non-empty string of at most 500 characters' } });
    }
    try {
      const out = action === 'deprecate' ? await o.commands.deprecate(name, version, reason.trim(), o.actor.by) : await o.commands.retire(name, version, reason.trim(), o.actor.by);
      return sendJson(res, 200, out);
    } catch (e) {
      if (e instanceof DomainError) return sendJson(res, e.kind === 'not-found' ? 404 : e.kind === 'usage' ? 400 : 422, errorJson(e));
      throw e;
    }
  };

  return {
    serves: (path) => path === CONSOLE_PREFIX || path.startsWith(`${CONSOLE_PREFIX}/`),
    async handle(req, res, path) {
      const params = new URL(req.url ?? '/', 'http://console.invalid').searchParams;
      if (req.method === 'GET' || req.method === 'HEAD') return get(req, res, path, params);
      if (req.method === 'POST' && path.startsWith('/console/api/')) return act(req, res, path);
      req.resume();
      res.writeHead(405, { allow: 'GET', 'content-type': 'text/plain' }).end('Method not allowed');
    },
    close() {
      unsubscribe();
      clearInterval(keepAlive);
      for (const res of streams) res.end();
      streams.clear();
    },
  };
};

/**
 * With authorization configured the console must not serve anyone unsigned; until its OAuth 2.1 + PKCE sign-in is
 * built, every console path answers 503 saying so (nothing of the catalogue is shown).
 */
export const consoleSignInUnavailable = (): ConsoleRoutes => ({
  serves: (path) => path === CONSOLE_PREFIX || path.startsWith(`${CONSOLE_PREFIX}/`),
  handle(req, res) {
    req.resume();
    sendHtml(res, 503, 'Console unavailable', html`<h1>Console unavailable</h1><p>This server requires authorization, and the console's sign-in is not available in this build. Serve without --auth-* on loopback to use the console, or use the CLI.</p>`, 'nobody');
    return Promise.resolve();
  },
  close() {},
});
