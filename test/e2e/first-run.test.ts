/**
 * The first minutes with Estate (issue 8): the start-up banner says where it serves and how much of the catalogue the
 * principal sees; a browser opening /mcp gets a page, not a JSON-RPC error; a port in use and a broken handlers module
 * are explained in the user's terms.
 */
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTempStore, REPO_ROOT, runCli, startHttpServer, type HttpServer, type TempStore } from './helpers.ts';

const get = (url: string, headers: Record<string, string>): Promise<{ status: number; headers: Record<string, unknown>; body: string }> =>
  new Promise((resolve, reject) => {
    const req = request(url, { method: 'GET', headers }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });

let t: TempStore;
let server: HttpServer;
beforeAll(async () => {
  t = makeTempStore('estate-first-run-');
  server = await startHttpServer(['--demo', '--store', t.store]);
}, 120_000);
afterAll(async () => {
  await server?.stop();
  t?.cleanup();
});

describe('start-up banner', () => {
  it('says URL, store, how many tools the principal sees and how to see more, beside the JSON logs', () => {
    const raw = server.logs.seen.filter((l) => typeof l.raw === 'string').map((l) => l.raw as string);
    expect(raw[0]).toBe(`Estate: MCP server at ${server.url} (store ${t.store})`);
    expect(raw).toContain('  serving 1 of 7 tools to tenant=default, scopes=(none), clearance=public');
    expect(raw.some((l) => l.includes('to see more') && l.includes('--tenant acme --scopes payments.read,accounts.read --clearance confidential'))).toBe(true);
    expect(raw.some((l) => l.includes('open the URL in a browser'))).toBe(true);
    // The JSON logs are kept: the ready line (what scripts wait for) is still one JSON object.
    expect(server.ready).toMatchObject({ msg: 'estate serve ready', transport: 'http', url: server.url });
  });
});

describe('a browser opening /mcp', () => {
  it('gets a short HTML page saying this is an MCP endpoint and how to connect', async () => {
    const r = await get(server.url, { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' });
    expect(r.status).toBe(200);
    expect(r.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(r.headers['content-security-policy']).toBe("default-src 'none'; style-src 'unsafe-inline'");
    expect(r.body).toContain('<h1>This is an MCP endpoint</h1>');
    expect(r.body).toContain(`<code>${server.url}</code>`);
    expect(r.body).toContain('&quot;url&quot;: &quot;' + server.url + '&quot;');
    expect(r.body).not.toMatch(/<script|src=|<link|https?:\/\/(?!127\.0\.0\.1)/i);
  });
  it('MCP clients are unchanged: a GET for an event stream, or with a session id, is not answered with the page', async () => {
    const sse = await get(server.url, { accept: 'text/event-stream' });
    expect(sse.status).toBe(400);
    expect(sse.body).toContain('Mcp-Session-Id header is required');
    const both = await get(server.url, { accept: 'text/html, text/event-stream' });
    expect(both.status).toBe(400);
    const withSession = await get(server.url, { accept: 'text/html', 'mcp-session-id': 'no-such-session' });
    expect(withSession.status).toBe(404);
  });
  it('the Host check still comes first', async () => {
    const r = await get(server.url, { accept: 'text/html', host: 'evil.example' });
    expect(r.status).toBe(403);
  });
});

describe('a browser opening the server\'s root', () => {
  const root = () => server.url.replace(/\/mcp$/, '/');
  it('is sent to the console, where there is something to see', async () => {
    const r = await get(root(), { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' });
    expect([r.status, r.headers.location]).toEqual([302, '/console/']);
    const page = await get(new URL(String(r.headers.location), root()).href, { accept: 'text/html' });
    expect(page.status).toBe(200);
  });
  it('anything else at the root is still a 404 naming /mcp; the Host and Origin checks come first; other paths are not redirected', async () => {
    const json = await get(root(), { accept: 'application/json' });
    expect(json.status).toBe(404);
    expect(json.body).toContain('Estate serves MCP at /mcp');
    expect((await get(root(), { accept: 'text/html', host: 'evil.example' })).status).toBe(403);
    expect((await get(root(), { accept: 'text/html', origin: 'http://evil.example' })).status).toBe(403);
    const elsewhere = await get(root() + 'index.html', { accept: 'text/html' });
    expect([elsewhere.status, elsewhere.headers.location]).toEqual([404, undefined]);
  });
});

describe('start-up failures explained in the user\'s terms', () => {
  it('a port in use suggests --port', async () => {
    const port = new URL(server.url).port;
    const r = await runCli(['serve', '--http', '--port', port, '--store', t.store], { timeoutMs: 60_000 });
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toContain(`estate: error: serve: port ${port} on 127.0.0.1 is already in use (another estate serve?): choose another with --port <n>, or --port 0 for any free port`);
  }, 90_000);
  it.each([
    ['a syntax error', 'syntax.mjs', 'export default {\n  a: async () => ({ content: [] }),\n  b: ;\n};\n', /failed to load: SyntaxError: Unexpected token ';' \(at line 3\)$/],
    ['a throw at load', 'throws.mjs', 'const x = 1;\nthrow new Error("no database configured");\nexport default {};\n', /failed to load: no database configured \(at line 2, column 7\)$/],
    ['a missing import', 'imports.mjs', 'import "./not-there.mjs";\nexport default {};\n', /failed to load: Cannot find module '.*not-there\.mjs' imported from .*imports\.mjs$/],
    ['no such file', 'absent.mjs', null, /absent\.mjs\)?: no such file$/],
    ['no handler map', 'empty.mjs', 'export const x = 1;\n', /expected a default export or a named export 'handlers'/],
  ])('a handlers module with %s names the module and the cause, not a path inside Estate', async (_why, name, text, cause) => {
    const path = text === null ? `${t.dir}/${name}` : t.file(name, text);
    const r = await runCli(['serve', '--stdio', '--handlers', path, '--store', t.store], { timeoutMs: 60_000 });
    expect(r.code, r.stderr).toBe(2);
    const line = r.stderr.trim().split('\n').find((l) => l.startsWith('estate: error: --handlers')) ?? '';
    expect(line, r.stderr).toContain(path);
    expect(line).toMatch(cause);
    expect(line).not.toContain(`${REPO_ROOT}src`);
    expect(line).not.toContain(`${REPO_ROOT}dist`);
  }, 90_000);
});
