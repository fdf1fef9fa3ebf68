/**
 * The web console at /console/ (SPEC §8): pages rendered on the server over the same read models the CLI and MCP
 * paths use, a change stream from the catalogue reader (./live.ts), and actions through the same commands and scope
 * rule as the CLI and the publishing API (./actions.ts). Who may look is decided by ./access.ts: the local operator
 * without authorization, a signed-in token holder with it (the page itself signs in: ./client-script.ts).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { CatalogueReader } from '#app/catalogue-reader';
import type { CommandHandler } from '#app/command-handler';
import type { EventStore } from '#app/ports';
import { readRun } from '#app/runs';
import { RunsIndex } from '#app/runs-index';
import { covers, LIFECYCLE_SCOPE } from '#auth/api-scopes';
import { RUN_ID_PATTERN } from '#domain/events';
import type { VersionDetails } from '#projections/catalogue';
import { sendJson as send } from '#http/send-json';
import type { Admission, ConsoleAccess, ConsoleViewer } from './access.ts';
import { runAction } from './actions.ts';
import { CONSOLE_ASSETS } from './assets.ts';
import { decodeSegment, html, page, type Chrome, type Html } from './html.ts';
import { createLiveStreams } from './live.ts';
import { parseCatalogueQuery, searchCatalogue } from './catalogue-search.ts';
import { cataloguePage, diffPage, notFoundPage, parsePrincipal, principalPage, toolPage, toolPageVersions, versionPage } from './pages.ts';
import { runPage, runsPage } from './run-pages.ts';
import { cannotSignInPage, signedOutPage, signInPage, whoOperator, whoSignedIn, whoSignedOut } from './signin-pages.ts';
import { upstreamsPage } from './upstream-page.ts';
import { noUpstreams, type UpstreamConsoleSource } from './upstreams.ts';

export const CONSOLE_PREFIX = '/console';
/** Calls one owner's section of a run page shows, the newest (`estate calls <run>` lists every one). */
export const RUN_PAGE_CALLS = 1000;
/** How long the runs page waits for the runs index to read the log before it says how far the read has got. */
export const RUNS_PAGE_WAIT_MS = 2000;
export { ACTION_HEADER } from './actions.ts';

export interface ConsoleOptions {
  reader: CatalogueReader;
  commands: CommandHandler;
  store: EventStore;
  /** Who is looking: `operatorAccess` (no authorization) or `tokenAccess` (./access.ts). */
  access: ConsoleAccess;
  upstreams?: UpstreamConsoleSource;
  /** How many runs "recent runs" lists. */
  recentRuns?: number;
  /** Where "recent runs" comes from (default: an index of `store` kept in memory only). */
  runs?: RunsIndex;
  /** Open change streams (/console/events) at most; one more is 503 (default 256). */
  maxStreams?: number;
}

export interface ConsoleRoutes {
  /** Where a person starts: the catalogue page (the server's root sends browsers here). */
  home: string;
  serves(path: string): boolean;
  handle(req: IncomingMessage, res: ServerResponse, path: string): Promise<void>;
  close(): void;
}

/** Pages are framed by nobody, run only our own script, and load nothing from elsewhere; `connect` adds the issuer's token endpoint. */
const securityHeaders = (connect: string): Record<string, string> => ({
  'content-security-policy': `default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'${connect}; form-action 'self'; frame-ancestors 'none'; base-uri 'none'`,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
  vary: 'authorization',
});

const serves = (path: string): boolean => path === CONSOLE_PREFIX || path.startsWith(`${CONSOLE_PREFIX}/`);
const home = `${CONSOLE_PREFIX}/`;

export const createConsole = (o: ConsoleOptions): ConsoleRoutes => {
  const upstreams = o.upstreams ?? noUpstreams;
  const live = createLiveStreams(o.reader, o.maxStreams);
  const runs = o.runs ?? new RunsIndex(o.store);
  /** The issuer's token endpoint origin, once its metadata has been read (the page posts the code there). */
  let connect = '';
  const sendJson = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void => send(res, status, body, { ...securityHeaders(connect), ...headers });
  const sendHtml = (res: ServerResponse, status: number, title: string, main: Html, chrome: Chrome, headers: Record<string, string> = {}): void => {
    const text = page(title, main, chrome);
    res.writeHead(status, { 'content-type': 'text/html; charset=utf-8', 'content-length': String(Buffer.byteLength(text)), ...securityHeaders(connect), ...headers });
    res.end(text);
  };

  /** The sign-in page, for any console page asked for without a credential: the issuer and client, no catalogue. */
  const shell = async (res: ServerResponse): Promise<void> => {
    const signIn = o.access.signIn;
    if (!signIn) return sendHtml(res, 401, 'Signed out', signedOutPage('This console needs a credential.'), { who: whoSignedOut });
    const found = await signIn.issuer.get();
    if (!found.ok) return sendHtml(res, 503, 'Sign-in unavailable', cannotSignInPage(found.reason), { who: whoSignedOut }, { 'retry-after': '5' });
    const e = found.endpoints;
    connect = ` ${new URL(e.tokenEndpoint).origin}`;
    const body = { auth: 'oauth', issuer: e.issuer, 'client-id': signIn.clientId, 'authorization-endpoint': e.authorizationEndpoint, 'token-endpoint': e.tokenEndpoint, resource: signIn.resource, scope: signIn.scope };
    return sendHtml(res, 200, 'Sign in', signInPage(e.issuer), { who: whoSignedOut, body });
  };

  const pages = async (res: ServerResponse, path: string, params: URLSearchParams, viewer: ConsoleViewer): Promise<void> => {
    const chrome: Chrome = { who: viewer.signedIn ? whoSignedIn(viewer.by) : whoOperator(viewer.by) };
    const ok = (title: string, main: Html): void => sendHtml(res, 200, title, main, chrome);
    const notFound = (what: string): void => sendHtml(res, 404, 'Not found', notFoundPage(what), chrome);
    const canActOn = (name: string): boolean => covers(viewer.scopes, LIFECYCLE_SCOPE, name);
    const catalogue = o.reader.catalogue;
    if (path === '/console' || path === '/console/') {
      // The shown rows' details (when they were published) are read before the page is made.
      const q = parseCatalogueQuery(params);
      const found = searchCatalogue(catalogue, q);
      const read = await o.reader.details.ofMany(found.rows);
      const at = new Map(found.rows.map((v, i) => [v, read[i]]));
      return ok('Catalogue', cataloguePage(catalogue, q, found, (v) => at.get(v)));
    }
    if (path === '/console/principal') return ok('Try a principal', principalPage(catalogue, parsePrincipal(params)));
    if (path === '/console/runs') return ok('Runs', runsPage(await runs.list({ limit: o.recentRuns ?? 50 }, { waitMs: RUNS_PAGE_WAIT_MS })));
    if (path === '/console/upstreams') return ok('Upstreams', upstreamsPage(await upstreams.list(), canActOn));
    const parts = path.split('/').slice(2); // ['tools', name, ...]
    if (parts[0] === 'runs' && parts.length === 2) {
      const runId = decodeSegment(parts[1] as string);
      if (runId === null || !RUN_ID_PATTERN.test(runId)) return notFound('That is not a run id: 1 to 128 characters of A-Z a-z 0-9 . _ : -, starting with a letter or digit.');
      const runs = await readRun(o.store, runId, { newest: RUN_PAGE_CALLS });
      if (runs.length === 0) return notFound(`No calls are recorded for run '${runId}'.`);
      return ok(`Run ${runId}`, runPage(runId, runs));
    }
    if (parts[0] === 'tools' && parts.length >= 2) {
      const name = decodeSegment(parts[1] as string);
      const tool = name === null ? undefined : catalogue.tool(name);
      if (!tool || name === null) return notFound(`There is no tool '${name ?? parts[1]}' in the catalogue.`);
      if (parts.length === 2) return ok(name, toolPage(tool, await o.reader.details.ofMany(toolPageVersions(tool))));
      if (parts.length === 3 && parts[2] === 'diff') {
        const a = (params.get('a') ?? '').slice(0, 128);
        const b = (params.get('b') ?? '').slice(0, 128);
        const va = catalogue.find(name, a);
        const vb = catalogue.find(name, b);
        if (!va || !vb) return notFound(`${name} has no version '${!va ? a : b}'.`);
        const [da, db] = (await o.reader.details.ofMany([va, vb])) as [VersionDetails, VersionDetails];
        return ok(`${name} ${a} → ${b}`, diffPage(va, da, vb, db));
      }
      if (parts.length === 4 && parts[2] === 'versions') {
        const version = decodeSegment(parts[3] as string);
        const v = version === null ? undefined : catalogue.find(name, version);
        if (!v) return notFound(`${name} has no version '${version ?? parts[3]}'.`);
        return ok(`${name}@${v.version}`, versionPage(catalogue, v, await o.reader.details.of(v), parsePrincipal(params), canActOn(name)));
      }
    }
    return notFound(`The console has no page at ${path.slice(0, 300)}.`);
  };

  const refusedJson = (res: ServerResponse, a: Exclude<Admission, { kind: 'viewer' }>): void =>
    a.kind === 'signed-out' ? sendJson(res, 401, { error: { code: 'unauthorized', message: 'Unauthorized: sign in first' } }) : sendJson(res, a.status, { error: { code: a.status === 403 ? 'insufficient_scope' : 'invalid_token', message: a.reason } }, a.headers);

  const get = async (req: IncomingMessage, res: ServerResponse, path: string, params: URLSearchParams): Promise<void> => {
    const asset = path.startsWith('/console/assets/') ? path.slice('/console/assets/'.length) : undefined;
    if (asset !== undefined) {
      const found = Object.hasOwn(CONSOLE_ASSETS, asset) ? CONSOLE_ASSETS[asset] : undefined;
      if (!found) return sendHtml(res, 404, 'Not found', notFoundPage(`There is no console asset '${asset.slice(0, 100)}'.`), { who: html`` });
      res.writeHead(200, { 'content-type': found.type, 'content-length': String(Buffer.byteLength(found.text)), 'x-content-type-options': 'nosniff', 'cache-control': 'no-cache' });
      res.end(found.text);
      return;
    }
    const admission = await o.access.admit(req);
    if (path === '/console/events') return admission.kind === 'viewer' ? live.open(req, res, admission.viewer.expiresAt, admission.viewer.key) : refusedJson(res, admission);
    if (admission.kind === 'signed-out') return shell(res);
    if (admission.kind === 'refused') {
      const title = admission.status === 401 ? 'Signed out' : admission.status === 403 ? 'Not allowed' : 'Cannot check the token';
      return sendHtml(res, admission.status, title, admission.status === 503 ? cannotSignInPage(admission.reason) : signedOutPage(admission.reason, title), { who: whoSignedOut }, admission.headers);
    }
    return pages(res, path, params, admission.viewer);
  };

  return {
    home,
    serves,
    async handle(req, res, path) {
      const params = new URL(req.url ?? '/', 'http://console.invalid').searchParams;
      if (req.method === 'GET' || req.method === 'HEAD') return get(req, res, path, params);
      if (req.method === 'POST' && path.startsWith('/console/api/')) return runAction(req, res, path, await o.access.admit(req), { commands: o.commands, upstreams, send: sendJson });
      // The unread body is the listener's to bound and close (refusalBoundedResponse, src/http/guards.ts).
      res.writeHead(405, { allow: 'GET, POST', 'content-type': 'text/plain', 'content-length': '18' }).end('Method not allowed');
    },
    close: () => live.close(),
  };
};

/** With authorization but no `--console-client-id`, nobody can sign in: every console path says so, showing nothing. */
export const consoleSignInUnconfigured = (): ConsoleRoutes => ({
  home,
  serves,
  handle(req, res) {
    const text = page('Console unavailable', html`<h1>Console unavailable</h1><p>This server requires authorization, and the console signs people in at the issuer as an OAuth client: start the server with --console-client-id &lt;id&gt; (env ESTATE_CONSOLE_CLIENT_ID), a public client registered at the issuer with the redirect URI &lt;console origin&gt;/console/callback. Until then, use the CLI.</p>`, { who: whoSignedOut });
    res.writeHead(503, { 'content-type': 'text/html; charset=utf-8', 'content-length': String(Buffer.byteLength(text)), ...securityHeaders('') });
    res.end(text);
    return Promise.resolve();
  },
  close() {},
});
