/**
 * `estate serve --http` with authorization, driven over real HTTP with tokens minted by a local issuer whose JWKS is
 * served on loopback: each request's principal comes from its token; bad tokens are refused with the right status and
 * challenge and learn nothing of the catalogue; views of two tenants never mix; a session belongs to its opener.
 */
import { request as httpRequest, validateHeaderValue } from 'node:http';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestIssuer, type MintOptions, type TestIssuer } from '../fixtures/jwks.ts';
import { makeTempStore, parseMcpBody, runCli, startHttpServer, type HttpServer, type TempStore } from './helpers.ts';

const AUDIENCE = 'https://estate.test/mcp';
const METADATA_URL = 'https://estate.test/.well-known/oauth-protected-resource/mcp';
const META = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };
const now = () => Math.floor(Date.now() / 1000);

interface Reply {
  status: number;
  headers: Headers;
  text: string;
  json(): Record<string, unknown>;
}

const call = async (url: string, init: { method?: string; body?: unknown; headers?: Record<string, string>; token?: string }): Promise<Reply> => {
  const res = await fetch(url, {
    method: init.method ?? 'POST',
    headers: {
      ...(init.body !== undefined ? { 'content-type': 'application/json', accept: 'application/json, text/event-stream' } : {}),
      ...(init.token !== undefined ? { authorization: `Bearer ${init.token}` } : {}),
      ...init.headers,
    },
    ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
  });
  const text = await res.text();
  // A stateful session may answer a POST as an event stream: read the response out of it either way.
  return { status: res.status, headers: res.headers, text, json: () => parseMcpBody(res.headers.get('content-type') ?? undefined, text).response ?? {} };
};

const statelessList = (url: string, token?: string) =>
  call(url, {
    body: { jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: META } },
    headers: { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/list' },
    ...(token !== undefined ? { token } : {}),
  });

const statelessCall = (url: string, name: string, args: Record<string, unknown>, token?: string) =>
  call(url, {
    body: { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name, arguments: args, _meta: META } },
    headers: { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': name },
    ...(token !== undefined ? { token } : {}),
  });

/** A POST carrying each of `authorizations` as its own header line (fetch would fold them into one). */
const postWithAuthorizations = (url: string, authorizations: string[], body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; challenge: string | undefined; text: string }> =>
  new Promise((resolve, reject) => {
    const payload = JSON.stringify(body);
    // Raw header lines: Node adds none of its own to these (no Host, no framing), so they are all given here.
    const fields = { host: new URL(url).host, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(payload)), accept: 'application/json, text/event-stream', ...headers };
    const raw = Object.entries(fields).flat();
    for (const a of authorizations) raw.push('Authorization', a);
    const req = httpRequest(url, { method: 'POST', headers: raw }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, challenge: res.headers['www-authenticate'], text }));
    });
    req.on('error', reject);
    req.end(payload);
  });

const namesOf = (r: Reply): string[] => ((r.json().result as { tools: { name: string }[] }).tools ?? []).map((t) => t.name);

/** Every tool name of the demo estate: none may appear in a refusal. */
const DEMO_NAMES = ['payments.lookup', 'payments.transfer', 'payments.cancel', 'payments.export_csv', 'accounts.balance', 'fx.rates', 'reports.statement'];

describe('estate serve --http with authorization', () => {
  let tmp: TempStore;
  let idp: TestIssuer;
  let srv: HttpServer;
  const acme: MintOptions = { claims: { sub: 'agent-acme', tenant: 'acme', scope: 'payments.read', clearance: 'confidential' } };
  const globex: MintOptions = { claims: { sub: 'agent-globex', tenant: 'globex', scope: 'payments.read reports.read', clearance: 'confidential' } };

  beforeAll(async () => {
    tmp = makeTempStore('estate-auth-');
    idp = await startTestIssuer(AUDIENCE);
    srv = await startHttpServer(['--demo', '--store', tmp.store, '--auth-issuer', idp.issuer, '--auth-jwks-url', idp.jwksUrl, '--auth-audience', AUDIENCE], {
      env: { ESTATE_AUTH_CLOCK_TOLERANCE_S: '30' },
    });
  });
  afterAll(async () => {
    await srv?.stop();
    await idp?.close();
    tmp?.cleanup();
  });

  it('serves the Protected Resource Metadata at the root and the path-suffixed form, without a token', async () => {
    for (const path of ['/.well-known/oauth-protected-resource', '/.well-known/oauth-protected-resource/mcp']) {
      const r = await call(new URL(path, srv.url).href, { method: 'GET' });
      expect(r.status).toBe(200);
      expect(r.json()).toEqual({ resource: AUDIENCE, authorization_servers: [idp.issuer], bearer_methods_supported: ['header'], resource_name: 'Estate MCP tool catalogue', scopes_supported: [] });
    }
    expect(srv.logs.seen.some((l) => String(l.msg).startsWith('NO AUTHORIZATION'))).toBe(false);
  });

  it('an accepted token gets the view of its principal', async () => {
    expect(namesOf(await statelessList(srv.url, await idp.mint(acme)))).toEqual(['fx.rates', 'payments.lookup']);
    expect(namesOf(await statelessList(srv.url, await idp.mint(globex)))).toEqual(['fx.rates', 'payments.lookup', 'reports.statement']);
    // No clearance claim: public, never more (payments.lookup is confidential).
    expect(namesOf(await statelessList(srv.url, await idp.mint({ claims: { sub: 'agent-x', tenant: 'acme', scope: 'payments.read', clearance: undefined } })))).toEqual(['fx.rates']);
    // An unknown clearance is public too.
    expect(namesOf(await statelessList(srv.url, await idp.mint({ claims: { sub: 'agent-x', tenant: 'acme', scope: 'payments.read', clearance: 'cosmic' } })))).toEqual(['fx.rates']);
    // No tenant claim: only tools open to every tenant.
    expect(namesOf(await statelessList(srv.url, await idp.mint({ claims: { sub: 'agent-x', tenant: undefined, scope: undefined, scp: ['payments.read', 'accounts.read'], clearance: 'restricted' } })))).toEqual(['accounts.balance', 'fx.rates']);
  });

  it('no token: 401 with the metadata URL, on every method of /mcp', async () => {
    for (const r of [
      await statelessList(srv.url),
      await call(srv.url, { body: { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'e2e', version: '1' } } } }),
      await call(srv.url, { method: 'GET', headers: { 'mcp-session-id': 'whatever', accept: 'text/event-stream' } }),
      await call(srv.url, { method: 'DELETE', headers: { 'mcp-session-id': 'whatever' } }),
    ]) {
      expect(r.status).toBe(401);
      expect(r.headers.get('www-authenticate')).toBe(`Bearer resource_metadata="${METADATA_URL}"`);
    }
  });

  it.each([
    ['expired', async (i: TestIssuer) => i.mint({ ...acme, claims: { ...acme.claims, exp: now() - 600 } }), 'the token is expired'],
    ['from another issuer', async (i: TestIssuer) => i.mint({ ...acme, claims: { ...acme.claims, iss: 'https://evil.example' } }), 'the token was issued by another issuer'],
    ['for another resource', async (i: TestIssuer) => i.mint({ ...acme, claims: { ...acme.claims, aud: 'https://other.example/mcp' } }), 'the token was issued for another resource'],
    ['with a bad signature', async (i: TestIssuer) => i.mint({ ...acme, key: 'impostor' }), 'the token\'s signature does not verify'],
    ['with alg none', async (i: TestIssuer) => Promise.resolve(i.mintUnsecured(acme.claims)), 'the token\'s algorithm is not accepted'],
    ['with an unknown key id', async (i: TestIssuer) => i.mint({ ...acme, key: 'unpublished' }), 'the token was signed with an unknown key'],
    // The name call records give callers without a subject: accepted, it would have added to their runs as one of them.
    ['whose sub is the reserved "anonymous"', async (i: TestIssuer) => i.mint({ ...acme, claims: { ...acme.claims, sub: 'anonymous' } }), 'the token\'s \'sub\' claim is \'anonymous\', reserved for callers without a subject'],
  ])('a token %s: 401 invalid_token, and nothing of the catalogue leaks', async (_what, mint, description) => {
    const token = await mint(idp);
    const list = await statelessList(srv.url, token);
    const known = await statelessCall(srv.url, 'payments.lookup', { reference: 'PMT-771' }, token);
    const unknown = await statelessCall(srv.url, 'no.such.tool', {}, token);
    for (const r of [list, known, unknown]) {
      expect(r.status).toBe(401);
      expect(r.headers.get('www-authenticate')).toBe(`Bearer resource_metadata="${METADATA_URL}", error="invalid_token", error_description="${description}"`);
      for (const name of DEMO_NAMES) expect(r.text).not.toContain(name);
    }
    // Whether a tool exists changes nothing in the answer.
    expect(known.text).toBe(unknown.text);
  });

  it('two tenants\' views never mix, even interleaved', async () => {
    const tokens = [await idp.mint(acme), await idp.mint(globex)];
    const replies = await Promise.all(Array.from({ length: 24 }, (_, i) => statelessList(srv.url, tokens[i % 2])));
    replies.forEach((r, i) => expect(namesOf(r)).toEqual(i % 2 === 0 ? ['fx.rates', 'payments.lookup'] : ['fx.rates', 'payments.lookup', 'reports.statement']));
    // A tool outside the caller's view is the same Unknown tool as one that does not exist.
    const hidden = await statelessCall(srv.url, 'reports.statement', { account: 'ACC-1' }, tokens[0]);
    expect(hidden.json()).toEqual({ jsonrpc: '2.0', id: 2, error: { code: -32602, message: 'Unknown tool: reports.statement' } });
  });

  it('a call is recorded under the token\'s subject and tenant', async () => {
    const r = await statelessCall(srv.url, 'payments.lookup', { reference: 'PMT-771' }, await idp.mint(acme));
    expect(r.status).toBe(200);
    const runId = ((r.json().result as { _meta: Record<string, string> })._meta)['io.estate/runId'] as string;
    const calls = await runCli(['calls', runId, '--json', '--store', tmp.store]);
    expect(calls.code).toBe(0);
    expect(JSON.parse(calls.stdout)).toMatchObject({ runId, calls: [{ tool: 'payments.lookup', subject: 'agent-acme', tenant: 'acme', outcome: 'ok' }] });
  });

  it.each(['2025-11-25', '2026-07-28'])('the official MCP client (%s) with a Bearer token lists its principal\'s view; without one it cannot connect', async (revision) => {
    const connect = async (headers: Record<string, string>) => {
      const client = new Client({ name: 'auth-e2e', version: '1.0.0' }, revision === '2026-07-28' ? { versionNegotiation: { mode: { pin: '2026-07-28' } } } : {});
      await client.connect(new StreamableHTTPClientTransport(new URL(srv.url), { requestInit: { headers } }));
      return client;
    };
    const client = await connect({ authorization: `Bearer ${await idp.mint(globex)}` });
    try {
      expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['fx.rates', 'payments.lookup', 'reports.statement']);
    } finally {
      await client.close();
    }
    await expect(connect({})).rejects.toThrow();
  });

  it('a session belongs to the subject that opened it: another subject\'s token gets 404 like an unknown session', async () => {
    const owner = await idp.mint(acme);
    const init = await call(srv.url, {
      token: owner,
      body: { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'e2e', version: '1' } } },
    });
    expect(init.status).toBe(200);
    const sid = init.headers.get('mcp-session-id') as string;
    await call(srv.url, { token: owner, body: { jsonrpc: '2.0', method: 'notifications/initialized' }, headers: { 'mcp-session-id': sid } });
    const list = (token: string, session: string) => call(srv.url, { token, body: { jsonrpc: '2.0', id: 2, method: 'tools/list' }, headers: { 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' } });
    const mine = await list(owner, sid);
    expect(mine.status).toBe(200);
    expect(namesOf(mine)).toEqual(['fx.rates', 'payments.lookup']);

    const intruder = await idp.mint({ claims: { ...acme.claims, sub: 'agent-intruder' } });
    const stolen = await list(intruder, sid);
    const madeUp = await list(intruder, '00000000-0000-4000-8000-000000000000');
    expect(stolen.status).toBe(404);
    expect(stolen.text).toBe(madeUp.text);
    expect((await call(srv.url, { token: intruder, method: 'GET', headers: { 'mcp-session-id': sid, accept: 'text/event-stream' } })).status).toBe(404);
    expect((await call(srv.url, { token: intruder, method: 'DELETE', headers: { 'mcp-session-id': sid } })).status).toBe(404);
    // The same subject with a token for another view does not inherit the session's view either.
    const widened = await idp.mint({ claims: { ...acme.claims, scope: 'payments.read payments.write', clearance: 'restricted' } });
    expect((await list(widened, sid)).status).toBe(404);
    // Without a token at all: 401 before any session lookup.
    expect((await call(srv.url, { body: { jsonrpc: '2.0', id: 2, method: 'tools/list' }, headers: { 'mcp-session-id': sid } })).status).toBe(401);
    // The owner's session is untouched.
    expect(namesOf(await list(owner, sid))).toEqual(['fx.rates', 'payments.lookup']);
    // Its owner ends it: DELETE answers 200, and from then on the session is unknown, to the owner too.
    expect((await call(srv.url, { token: owner, method: 'DELETE', headers: { 'mcp-session-id': sid } })).status).toBe(200);
    const ended = await list(owner, sid);
    expect(ended.status).toBe(404);
    expect(ended.text).toBe(madeUp.text);
    expect((await call(srv.url, { token: owner, method: 'DELETE', headers: { 'mcp-session-id': sid } })).status).toBe(404);
  });

  it('a token whose typ has a non-Latin-1 or control character: 401 with a sendable challenge on /mcp and /v1, not 500', async () => {
    const v1 = new URL('/v1/tools', srv.url).href;
    for (const typ of ['JWT\u2603', 'JWT\u0001x']) {
      const token = await idp.mint({ ...acme, typ });
      const description = 'the token is not an access token (typ \'JWT?' + (typ.endsWith('x') ? 'x' : '') + '\'; expected \'at+jwt\', RFC 9068)';
      for (const r of [await statelessList(srv.url, token), await call(v1, { body: {}, token })]) {
        expect(r.status).toBe(401);
        const challenge = r.headers.get('www-authenticate') ?? '';
        expect(() => validateHeaderValue('www-authenticate', challenge)).not.toThrow();
        expect(challenge).toBe(`Bearer resource_metadata="${METADATA_URL}", error="invalid_token", error_description="${description}"`);
      }
    }
    expect(srv.logs.seen.some((l) => l.level === 50)).toBe(false);
  });

  it('two Authorization headers: 401 invalid_request on /mcp and /v1, even when the first holds a valid token', async () => {
    const valid = `Bearer ${await idp.mint(acme)}`;
    const list = { jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: META } };
    const mcpHeaders = { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/list' };
    expect((await postWithAuthorizations(srv.url, [valid], list, mcpHeaders)).status).toBe(200);
    const challenge = `Bearer resource_metadata="${METADATA_URL}", error="invalid_request", error_description="the request has more than one Authorization header"`;
    for (const second of ['Bearer x', 'Basic eDp5']) {
      for (const r of [await postWithAuthorizations(srv.url, [valid, second], list, mcpHeaders), await postWithAuthorizations(new URL('/v1/tools', srv.url).href, [valid, second], {})]) {
        expect(r.status).toBe(401);
        expect(r.challenge).toBe(challenge);
        for (const name of DEMO_NAMES) expect(r.text).not.toContain(name);
      }
    }
  });

  // Last: it changes the issuer's key set.
  it('a key the issuer rotates in is picked up by one refetch of the key set on its first use', async () => {
    const token = await idp.mint({ ...acme, key: 'unpublished' });
    expect((await statelessList(srv.url, token)).status).toBe(401);
    idp.publishPendingKey();
    const before = idp.fetches;
    // Refetches are spaced by a short cooldown; until it has passed the token stays refused without a fetch.
    let r = await statelessList(srv.url, token);
    for (let i = 0; i < 40 && r.status === 401; i++) {
      await new Promise((ok) => setTimeout(ok, 250));
      r = await statelessList(srv.url, token);
    }
    expect(r.status).toBe(200);
    expect(namesOf(r)).toEqual(['fx.rates', 'payments.lookup']);
    expect(idp.fetches - before).toBe(1);
  });
});

describe('estate serve --http configuration with authorization', { timeout: 120_000 }, () => {
  it('principal flags are refused with authorization configured (exit 2)', async () => {
    const r = await runCli(['serve', '--http', '--port', '0', '--store', 'memory:', '--auth-issuer', 'https://idp.example', '--auth-jwks-url', 'https://idp.example/jwks', '--auth-audience', AUDIENCE, '--tenant', 'acme']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('estate: error: serve: with authorization configured each request\'s principal comes from its token; remove --tenant');
  });

  it('half a configuration is refused (exit 2)', async () => {
    const r = await runCli(['serve', '--http', '--port', '0', '--store', 'memory:'], { env: { ESTATE_AUTH_ISSUER: 'https://idp.example' } });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--auth-jwks-url, --auth-audience are missing');
  });

  it('with authorization the server may bind beyond loopback; without, it may not', async () => {
    const idp = await startTestIssuer(AUDIENCE);
    const tmp = makeTempStore('estate-auth-bind-');
    try {
      const refused = await runCli(['serve', '--http', '--port', '0', '--host', '0.0.0.0', '--store', tmp.store]);
      expect(refused.code).toBe(2);
      const srv = await startHttpServer(['--host', '0.0.0.0', '--store', tmp.store, '--demo', '--auth-issuer', idp.issuer, '--auth-jwks-url', idp.jwksUrl, '--auth-audience', AUDIENCE]);
      try {
        const port = new URL(srv.url).port;
        const r = await statelessList(`http://127.0.0.1:${port}/mcp`, await idp.mint({ claims: { sub: 'a', tenant: 'acme', clearance: 'public' } }));
        expect(namesOf(r)).toEqual(['fx.rates']);
      } finally {
        await srv.stop();
      }
    } finally {
      await idp.close();
      tmp.cleanup();
    }
  });
});
