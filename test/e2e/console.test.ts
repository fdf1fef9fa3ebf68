/**
 * The web console (SPEC §8) served by a real `estate serve --http` process: pages over the catalogue, not-found pages,
 * the run log linked to versions, the lifecycle action and its CSRF defences, live updates from a publish made by the
 * CLI in another process, and `--no-console`.
 */
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestIssuer } from '../fixtures/jwks.ts';
import { makeTempStore, openSse, runCli, startHttpServer, toolDefinition, type HttpServer, type TempStore } from './helpers.ts';

interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

const send = (url: string, o: { method?: string; body?: string; headers?: Record<string, string> } = {}): Promise<Reply> =>
  new Promise((resolve, reject) => {
    const req = request(url, { method: o.method ?? 'GET', headers: o.headers ?? {} }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end(o.body);
  });

/** The text of the page's main region, tags dropped, whitespace folded. */
const mainText = (html: string): string =>
  (/<main id="main">([\s\S]*)<\/main>/.exec(html)?.[1] ?? '').replace(/<[^>]+>/g, ' ')
    .replace(/&(#39|quot|lt|gt|amp);/g, (_, e: string) => ({ '#39': "'", quot: '"', lt: '<', gt: '>', amp: '&' })[e] as string)
    .replace(/\s+/g, ' ')
    .trim();

const META = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };

describe('the web console at /console/', () => {
  let tmp: TempStore;
  let srv: HttpServer;
  let base: string;

  const publish = async (def: Record<string, unknown>, by = 'alice'): Promise<void> => {
    const r = await runCli(['publish', tmp.file(`${String(def.name)}-${String(def.version)}.json`, def), '--store', tmp.store, '--by', by]);
    expect(r.code, r.stderr).toBe(0);
  };
  const action = (name: string, version: string, body: unknown, headers: Record<string, string> = { 'content-type': 'application/json', 'x-estate-console': '1' }) =>
    send(`${base}api/tools/${encodeURIComponent(name)}/versions/${encodeURIComponent(version)}/lifecycle`, { method: 'POST', headers, body: typeof body === 'string' ? body : JSON.stringify(body) });
  const history = async (name: string): Promise<{ version: string; status: string }[]> => {
    const r = await runCli(['history', name, '--json', '--store', tmp.store]);
    expect(r.code, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout) as { versions?: { version: string; status: string }[] } | { version: string; status: string }[];
    return Array.isArray(out) ? out : (out.versions ?? []);
  };

  beforeAll(async () => {
    tmp = makeTempStore('estate-console-');
    await publish(toolDefinition({ name: 'test.echo', version: '1.0.0' }));
    await publish(toolDefinition({ name: 'test.echo', version: '1.1.0', inputSchema: { type: 'object', properties: { text: { type: 'string' }, loud: { type: 'boolean' } }, required: ['text'], additionalProperties: false } }), 'bob');
    await publish(toolDefinition({ name: 'test.echo', version: '2.0.0', inputSchema: { type: 'object', properties: { loud: { type: 'boolean' } }, additionalProperties: false } }), 'carol');
    await publish(toolDefinition({ name: 'vault.open', version: '1.0.0', title: 'Vault', description: 'Opens the <script>alert(1)</script> vault.', handler: 'vault.open', access: { requiredScopes: ['vault.read'], tenants: ['acme'], classification: 'restricted' } }));
    srv = await startHttpServer(['--demo', '--store', tmp.store]);
    base = srv.url.replace(/\/mcp$/, '/console/');
  }, 120_000);
  afterAll(async () => {
    await srv?.stop();
    tmp?.cleanup();
  });

  it('serves the catalogue with server-side search and filters, and its own assets (no CDN)', async () => {
    const all = await send(base);
    expect(all.status).toBe(200);
    expect(all.headers['content-security-policy']).toContain("default-src 'none'");
    expect(all.body).not.toMatch(/(src|href)="https?:\/\//);
    expect(mainText(all.body)).toContain('9 tools match (9 in the catalogue)');
    const echo = await send(`${base}?q=ECHOES`);
    expect(mainText(echo.body)).toContain('1 tool matches');
    expect(echo.body).toContain('href="/console/tools/test.echo"');
    const restricted = await send(`${base}?classification=restricted`);
    expect(mainText(restricted.body)).toContain('2 tools match');
    expect(restricted.body).toContain('vault.open');
    const ns = await send(`${base}?namespace=payments&status=active`);
    expect(ns.body).toContain('payments.lookup');
    expect(ns.body).not.toContain('test.echo');
    const deprecated = await send(`${base}?status=deprecated`);
    expect(mainText(deprecated.body)).toContain('1 tool matches');
    expect(deprecated.body).toContain('payments.export_csv');
    for (const a of ['console.js', 'console.css']) expect((await send(`${base}assets/${a}`)).status).toBe(200);
  });

  it('escapes catalogue text: a description cannot inject markup', async () => {
    const page = await send(`${base}tools/vault.open/versions/1.0.0`);
    expect(page.body).not.toContain('<script>alert(1)</script>');
    expect(page.body).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
  });

  it("shows a tool's version timeline: level, reasons, who, when, status", async () => {
    const page = await send(`${base}tools/test.echo`);
    expect(page.status).toBe(200);
    const text = mainText(page.body);
    expect(text).toMatch(/2\.0\.0 major active Published by carol/);
    expect(text).toMatch(/1\.1\.0 minor active Published by bob/);
    expect(text).toContain('inputSchema.properties.text');
  });

  it('diffs two versions side by side with the reasons on the lines they concern', async () => {
    const page = await send(`${base}tools/test.echo/diff?a=1.0.0&b=2.0.0`);
    expect(page.status).toBe(200);
    expect(mainText(page.body)).toContain('The classifier says major');
    // The removal of `text` is explained on a row that shows the `"text"` property line of 1.0.0.
    const rows = page.body.split('<tr class="').slice(1);
    const removal = rows.find((r) => r.includes('class="reason"') && r.includes('inputSchema.properties.text'));
    expect(removal, 'a row carrying the property-removed reason').toBeDefined();
    expect(removal).toMatch(/&quot;text&quot;/);
  });

  it('tells who can see a version and what a tried principal discovers', async () => {
    const page = await send(`${base}tools/vault.open/versions/1.0.0`);
    const text = mainText(page.body);
    expect(text).toContain('Tenants: acme');
    expect(text).toContain('Scopes required (all of): vault.read');
    const no = await send(`${base}tools/vault.open/versions/1.0.0?tenant=acme&scopes=vault.read&clearance=confidential`);
    expect(mainText(no.body)).toContain('Not visible to this principal');
    const yes = await send(`${base}tools/vault.open/versions/1.0.0?tenant=acme&scopes=vault.read&clearance=restricted`);
    expect(mainText(yes.body)).toContain('Visible to this principal');
    expect(yes.body).toContain('href="/console/tools/vault.open/versions/1.0.0">vault.open@1.0.0');
    const other = await send(`${base}principal?tenant=globex&scopes=vault.read&clearance=restricted`);
    expect(other.body).not.toContain('vault.open@');
  });

  it('answers a clear not-found page for an unknown tool, version, diff version, run or page', async () => {
    for (const [path, says] of [
      ['tools/no.such', "There is no tool 'no.such'"],
      ['tools/test.echo/versions/9.9.9', "test.echo has no version '9.9.9'"],
      ['tools/test.echo/diff?a=1.0.0&b=7.0.0', "test.echo has no version '7.0.0'"],
      ['runs/never-ran', "No calls are recorded for run 'never-ran'"],
      ['runs/%2e%2e%2fetc', 'That is not a run id'],
      ['tools/%E0%A4%A', "There is no tool '%E0%A4%A'"],
      ['nowhere', 'The console has no page at /console/nowhere'],
    ] as const) {
      const r = await send(`${base}${path}`);
      expect(r.status, path).toBe(404);
      expect(mainText(r.body), path).toContain(says);
    }
  });

  it('lists recent runs and a run’s calls, each linked to the exact version', async () => {
    const call = await send(srv.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'fx.rates' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'fx.rates', arguments: { base: 'EUR', quote: 'USD' }, _meta: { ...META, 'io.estate/runId': 'console-run-1' } } }),
    });
    expect(call.status, call.body).toBe(200);
    expect(JSON.parse(call.body).result.isError).toBeFalsy();
    const runs = await send(`${base}runs`);
    expect(runs.body).toContain('href="/console/runs/console-run-1"');
    const run = await send(`${base}runs/console-run-1`);
    expect(run.status).toBe(200);
    expect(run.body).toContain('href="/console/tools/fx.rates/versions/1.0.0">fx.rates@1.0.0');
  });

  it('says that no upstream is registered', async () => {
    const page = await send(`${base}upstreams`);
    expect(page.status).toBe(200);
    expect(mainText(page.body)).toContain('No upstream MCP servers are registered.');
  });

  it('refuses cross-site actions: a form post, JSON without the console header, a foreign Origin; nothing changes', async () => {
    const form = await action('test.echo', '1.0.0', 'action=retire&reason=pwned', { 'content-type': 'application/x-www-form-urlencoded' });
    expect(form.status).toBe(403);
    const plain = await action('test.echo', '1.0.0', 'action=retire&reason=pwned', { 'content-type': 'text/plain', 'x-estate-console': '1' });
    expect(plain.status).toBe(403);
    const noHeader = await action('test.echo', '1.0.0', { action: 'retire', reason: 'pwned' }, { 'content-type': 'application/json' });
    expect(noHeader.status).toBe(403);
    const foreign = await action('test.echo', '1.0.0', { action: 'retire', reason: 'pwned' }, { 'content-type': 'application/json', 'x-estate-console': '1', origin: 'https://evil.example' });
    expect(foreign.status).toBe(403);
    expect((await history('test.echo')).find((v) => v.version === '1.0.0')?.status).toBe('active');
  });

  it('refuses a bad action body with a specific error', async () => {
    expect((await action('test.echo', '1.0.0', { action: 'delete', reason: 'x' })).body).toContain("action must be 'deprecate' or 'retire'");
    expect((await action('test.echo', '1.0.0', { action: 'deprecate', reason: '  ' })).body).toContain('reason must be a non-empty string');
    expect((await action('test.echo', '1.0.0', '{not json')).status).toBe(400);
    expect((await action('test.echo', '9.9.9', { action: 'deprecate', reason: 'x' })).status).toBe(404);
  });

  it('deprecates with a reason through the command handler, and the timeline shows who and why', async () => {
    const r = await action('test.echo', '1.0.0', { action: 'deprecate', reason: 'use 2.0.0' });
    expect(r.status, r.body).toBe(200);
    expect(JSON.parse(r.body)).toMatchObject({ result: 'deprecated', name: 'test.echo', version: '1.0.0' });
    expect((await history('test.echo')).find((v) => v.version === '1.0.0')?.status).toBe('deprecated');
    const again = await send(`${base}tools/test.echo`);
    expect(mainText(again.body)).toMatch(/Deprecated by \S+ at \S+: use 2\.0\.0/);
  });

  it('streams catalogue changes: a publish by the CLI in another process reaches an open console', async () => {
    const sse = await openSse(`${base}events`, {});
    try {
      expect(sse.status).toBe(200);
      await sse.events.next((e) => e.event === 'hello', 10_000, 'hello');
      await publish(toolDefinition({ name: 'live.added', version: '1.0.0', handler: 'live.added' }));
      const ev = await sse.events.next((e) => e.event === 'catalogue' && e.data.includes('live.added'), 20_000, 'catalogue event');
      expect(JSON.parse(ev.data).tools).toContain('live.added');
      expect(mainText((await send(`${base}?q=live.added`)).body)).toContain('1 tool matches');
    } finally {
      sse.close();
    }
  });
});

describe('estate serve --http --no-console', () => {
  it('does not serve /console/', async () => {
    const tmp = makeTempStore('estate-console-off-');
    const srv = await startHttpServer(['--store', tmp.store, '--no-console']);
    try {
      const r = await send(srv.url.replace(/\/mcp$/, '/console/'));
      expect(r.status).toBe(404);
      // A browser at the root is sent to /mcp's page on connecting a client instead of the console.
      const root = await send(srv.url.replace(/\/mcp$/, '/'), { headers: { accept: 'text/html' } });
      expect([root.status, root.headers.location]).toEqual([302, '/mcp']);
    } finally {
      await srv.stop();
      tmp.cleanup();
    }
  });
});

describe('estate serve --http with authorization but no --console-client-id', () => {
  it('shows nothing of the catalogue to anyone, a valid token included (503, saying what to configure)', async () => {
    const tmp = makeTempStore('estate-console-auth-');
    const audience = 'http://127.0.0.1/mcp';
    const idp = await startTestIssuer(audience);
    const srv = await startHttpServer(['--demo', '--store', tmp.store, '--auth-issuer', idp.issuer, '--auth-jwks-url', idp.jwksUrl, '--auth-audience', audience]);
    try {
      const base = srv.url.replace(/\/mcp$/, '/console/');
      const token = await idp.mint({ claims: { sub: 'ops', tenant: 'acme', scope: 'estate:lifecycle', clearance: 'restricted' } });
      for (const headers of [{}, { authorization: `Bearer ${token}` }] as Record<string, string>[]) {
        for (const path of ['', 'tools/payments.lookup', 'events', 'runs']) {
          const r = await send(`${base}${path}`, { headers });
          expect(r.status, path).toBe(503);
          expect(r.body, path).not.toContain('payments.lookup');
          expect(r.body, path).toContain('--console-client-id');
        }
        const act = await send(`${base}api/tools/payments.lookup/versions/1.0.0/lifecycle`, { method: 'POST', headers: { ...headers, 'content-type': 'application/json', 'x-estate-console': '1' }, body: JSON.stringify({ action: 'retire', reason: 'x' }) });
        expect(act.status).toBe(503);
      }
      const show = await runCli(['history', 'payments.lookup', '--json', '--store', tmp.store]);
      expect(show.stdout).not.toContain('retired');
    } finally {
      await srv.stop();
      await idp.close();
      tmp.cleanup();
    }
  });
});
