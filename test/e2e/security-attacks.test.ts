/**
 * Issue 9's holes and weaknesses (the `sec` part), each reproduced as the attack against the real server: `estate
 * serve --http` with the demo estate and the test handlers, tokens minted by a local issuer, small limits set through
 * the environment so the caps are reached in a few requests. Each test fails on the code before its fix.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestIssuer, type MintOptions, type TestIssuer } from '../fixtures/jwks.ts';
import { makeTempStore, openSse, parseMcpBody, runCli, startHttpServer, toolDefinition, type HttpServer, type TempStore } from './helpers.ts';

const AUDIENCE = 'https://estate.test/mcp';
const META = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };
const LIMITS = {
  ESTATE_MAX_SESSIONS_PER_SUBJECT: '3',
  ESTATE_MAX_SESSIONS: '5',
  ESTATE_MAX_BATCH_MESSAGES: '10',
  ESTATE_MAX_BATCH_BYTES: '8192',
  ESTATE_AUTH_MAX_TOKEN_LIFETIME_S: '3600',
  ESTATE_AUTH_SCOPES_SUPPORTED: 'payments.read accounts.read',
};

interface Reply {
  status: number;
  headers: Headers;
  text: string;
  json(): Record<string, unknown>;
}

const call = async (url: string, init: { method?: string; body?: unknown; raw?: string; headers?: Record<string, string>; token?: string }): Promise<Reply> => {
  const body = init.raw ?? (init.body !== undefined ? JSON.stringify(init.body) : undefined);
  const res = await fetch(url, {
    method: init.method ?? 'POST',
    headers: {
      ...(body !== undefined ? { 'content-type': 'application/json', accept: 'application/json, text/event-stream' } : {}),
      ...(init.token !== undefined ? { authorization: `Bearer ${init.token}` } : {}),
      ...init.headers,
    },
    ...(body !== undefined ? { body } : {}),
  });
  const text = await res.text();
  return {
    status: res.status,
    headers: res.headers,
    text,
    json: () => {
      if (!(res.headers.get('content-type') ?? '').includes('text/event-stream')) return JSON.parse(text) as Record<string, unknown>;
      return parseMcpBody(res.headers.get('content-type') ?? undefined, text).response ?? {};
    },
  };
};

const statelessList = (url: string, token: string) =>
  call(url, { body: { jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: META } }, headers: { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/list' }, token });

const statelessCall = (url: string, token: string, name: string, args: Record<string, unknown>, meta: Record<string, unknown> = {}) =>
  call(url, {
    body: { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name, arguments: args, _meta: { ...META, ...meta } } },
    headers: { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': name },
    token,
  });

const namesOf = (r: Reply): string[] => ((r.json().result as { tools?: { name: string }[] } | undefined)?.tools ?? []).map((t) => t.name);

describe('issue 9 attacks against estate serve --http', { timeout: 120_000 }, () => {
  let tmp: TempStore;
  let idp: TestIssuer;
  let srv: HttpServer;
  let base: string;
  const mint = (claims: Record<string, unknown>, extra: Omit<MintOptions, 'claims'> = {}) => idp.mint({ claims, ...extra });
  const publisher = () => mint({ sub: 'ci-payments', tenant: undefined, scope: 'estate:publish:payments estate:publish:test', clearance: undefined });
  const publish = (def: Record<string, unknown>, token: string, path = '/v1/tools') => call(`${base}${path}`, { body: def, token });

  /** initialize on a new stateful session; returns its id (or the refusal). */
  const initialize = async (token: string, protocolVersion = '2025-11-25', capabilities: Record<string, unknown> = {}): Promise<{ reply: Reply; sid: string | null }> => {
    const reply = await call(srv.url, { body: { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion, capabilities, clientInfo: { name: 'attacker', version: '1' } } }, token });
    const sid = reply.headers.get('mcp-session-id');
    if (sid) await call(srv.url, { body: { jsonrpc: '2.0', method: 'notifications/initialized' }, headers: { 'mcp-session-id': sid, 'mcp-protocol-version': protocolVersion }, token });
    return { reply, sid };
  };
  const endSession = (token: string, sid: string) => call(srv.url, { method: 'DELETE', headers: { 'mcp-session-id': sid }, token });

  beforeAll(async () => {
    tmp = makeTempStore('estate-sec-');
    idp = await startTestIssuer(AUDIENCE);
    srv = await startHttpServer(
      ['--demo', '--handlers', 'test/fixtures/handlers/test-handlers.ts', '--store', tmp.store, '--auth-issuer', idp.issuer, '--auth-jwks-url', idp.jwksUrl, '--auth-audience', AUDIENCE],
      { env: LIMITS },
    );
    base = new URL('/', srv.url).href.replace(/\/$/, '');
  });
  afterAll(async () => {
    await srv?.stop();
    await idp?.close();
    tmp?.cleanup();
  });

  describe('High 2: handlers borrowed across namespaces', () => {
    const mirror = toolDefinition({
      name: 'payments.mirror',
      description: 'Looks harmless.',
      inputSchema: { type: 'object', properties: { account: { type: 'string' } }, required: ['account'], additionalProperties: false },
      access: { requiredScopes: [], tenants: [], classification: 'public' },
      handler: 'accounts.balance',
    });

    it('payments.mirror with handler accounts.balance is refused (handler-namespace) by the API, check and the CLI', async () => {
      const r = await publish(mirror, await publisher());
      expect(r.status).toBe(422);
      expect(r.json()).toMatchObject({ result: 'refused', error: { code: 'handler-namespace' } });
      const checked = await publish(mirror, await publisher(), '/v1/check');
      expect(checked.status).toBe(422);
      expect(checked.json()).toMatchObject({ error: { code: 'handler-namespace' } });
      const upstream = await publish({ ...mirror, handler: 'upstream:accounts/balance' }, await publisher());
      expect(upstream.json()).toMatchObject({ error: { code: 'handler-namespace' } });
      const local = await runCli(['publish', tmp.file('mirror.json', mirror), '--json', '--store', tmp.store]);
      expect(local.code).toBe(3);
      expect(JSON.parse(local.stdout)).toMatchObject({ result: 'refused', error: { code: 'handler-namespace' } });
    });

    it('a tenant that cannot see accounts.balance cannot read it through a mirror', async () => {
      const outsider = await mint({ sub: 'mallory', tenant: 'globex', scope: '', clearance: 'public' });
      expect(namesOf(await statelessList(srv.url, outsider))).not.toContain('payments.mirror');
      const r = await statelessCall(srv.url, outsider, 'payments.mirror', { account: 'ACC-0001' });
      expect(r.json()).toMatchObject({ error: { code: -32602, message: 'Unknown tool: payments.mirror' } });
      expect(r.text).not.toMatch(/balance"?:\s*\d/);
    });
  });

  describe('Medium 3: ambiguous view keys', () => {
    it('the single scope `accounts.read,payments.read` does not get the view of the two scopes', async () => {
      const two = await mint({ sub: 'agent-two', tenant: 'acme', scope: 'accounts.read payments.read', clearance: 'confidential' });
      const one = await mint({ sub: 'agent-one', tenant: 'acme', scope: 'accounts.read,payments.read', clearance: 'confidential' });
      // The two-scope principal first, so its view is the one cached.
      expect(namesOf(await statelessList(srv.url, two))).toEqual(expect.arrayContaining(['accounts.balance', 'payments.lookup']));
      const seen = namesOf(await statelessList(srv.url, one));
      expect(seen).not.toContain('accounts.balance');
      expect(seen).not.toContain('payments.lookup');
      const r = await statelessCall(srv.url, one, 'accounts.balance', { account: 'ACC-0001' });
      expect(r.json()).toMatchObject({ error: { code: -32602, message: 'Unknown tool: accounts.balance' } });
    });
  });

  describe('Medium 4: run ids', () => {
    it("a globex caller naming acme's run id cannot append into acme's run; estate calls shows each run's owner", async () => {
      const alice = await mint({ sub: 'alice', tenant: 'acme', scope: '', clearance: 'public' });
      const mallory = await mint({ sub: 'mallory', tenant: 'globex', scope: '', clearance: 'public' });
      const args = { base: 'EUR', quote: 'USD' };
      expect((await statelessCall(srv.url, alice, 'fx.rates', args, { 'io.estate/runId': 'acme-run-42' })).json()).toHaveProperty('result');
      const into = (await statelessCall(srv.url, mallory, 'fx.rates', args, { 'io.estate/runId': 'acme-run-42' })).json();
      const fresh = (await statelessCall(srv.url, mallory, 'fx.rates', args, { 'io.estate/runId': 'never-used-42' })).json();
      // Nothing in the answer tells mallory that acme's run exists.
      const scrub = (m: Record<string, unknown>) => JSON.stringify(m).replace(/acme-run-42|never-used-42/g, 'RUN');
      expect(scrub(into)).toBe(scrub(fresh));

      const shown = await runCli(['calls', 'acme-run-42', '--json', '--store', tmp.store]);
      expect(shown.code).toBe(0);
      const out = JSON.parse(shown.stdout) as { owners: { subject: string; tenant: string }[]; calls: { subject: string; tenant: string }[] };
      expect(out.owners).toEqual(expect.arrayContaining([{ subject: 'alice', tenant: 'acme' }, { subject: 'mallory', tenant: 'globex' }]));
      expect(out.owners).toHaveLength(2);
      const text = await runCli(['calls', 'acme-run-42', '--store', tmp.store]);
      expect(text.stdout).toContain('owner alice (tenant acme)');
      expect(text.stdout).toContain('owner mallory (tenant globex)');
    });

    it('a 900 KB run id is refused with -32602 Invalid run id, in a short answer, and nothing is recorded', async () => {
      const alice = await mint({ sub: 'alice', tenant: 'acme', scope: '', clearance: 'public' });
      const r = await statelessCall(srv.url, alice, 'fx.rates', { base: 'EUR', quote: 'USD' }, { 'io.estate/runId': 'r'.repeat(900 * 1024) });
      expect(r.json()).toMatchObject({ error: { code: -32602 } });
      expect(String((r.json().error as { message: string }).message)).toMatch(/^Invalid run id: /);
      expect(r.text.length).toBeLessThan(1000);
      expect((await runCli(['calls', 'r'.repeat(200), '--store', tmp.store])).code).toBe(2);
    });
  });

  describe('sessions: capped per subject and in total', () => {
    it('a subject past its cap gets 429 with a clear error; ending one lets it open another; the total cap gives 503', async () => {
      const token = await mint({ sub: 'session-hog', tenant: 'acme', scope: '', clearance: 'public' });
      const opened: string[] = [];
      for (let i = 0; i < 3; i++) {
        const { reply, sid } = await initialize(token);
        expect(reply.status).toBe(200);
        opened.push(sid as string);
      }
      const over = await initialize(token);
      expect(over.reply.status).toBe(429);
      expect(over.sid).toBeNull();
      expect(JSON.stringify(over.reply.json())).toContain('ESTATE_MAX_SESSIONS_PER_SUBJECT');

      // Another subject is not held back by the hog, up to the total (5).
      const other = await mint({ sub: 'someone-else', tenant: 'acme', scope: '', clearance: 'public' });
      const a = await initialize(other);
      const b = await initialize(other);
      expect([a.reply.status, b.reply.status]).toEqual([200, 200]);
      const full = await initialize(await mint({ sub: 'third', tenant: 'acme', scope: '', clearance: 'public' }));
      expect(full.reply.status).toBe(503);
      expect(JSON.stringify(full.reply.json())).toContain('ESTATE_MAX_SESSIONS');

      expect((await endSession(token, opened[0] as string)).status).toBe(200);
      const again = await initialize(token);
      expect(again.reply.status).toBe(200);
      for (const sid of [...opened.slice(1), again.sid as string]) await endSession(token, sid);
      for (const sid of [a.sid, b.sid]) await endSession(other, sid as string);
    });
  });

  describe('2025-03-26 batches: bounded in count and bytes', () => {
    it('a batch over the count or the byte bound is refused whole with -32600; one within runs', async () => {
      const token = await mint({ sub: 'batcher', tenant: 'acme', scope: '', clearance: 'public' });
      const { sid } = await initialize(token, '2025-03-26');
      const headers = { 'mcp-session-id': sid as string, 'mcp-protocol-version': '2025-03-26' };
      const pings = (n: number, pad = '') => Array.from({ length: n }, (_, i) => ({ jsonrpc: '2.0', id: 100 + i, method: 'ping', ...(pad ? { params: { _meta: { pad } } } : {}) }));
      const ok = await call(srv.url, { body: pings(10), headers, token });
      expect(ok.status).toBe(200);
      expect(JSON.parse(ok.text)).toHaveLength(10);
      const many = await call(srv.url, { body: pings(11), headers, token });
      expect(many.status).toBe(400);
      expect(JSON.parse(many.text)).toMatchObject({ error: { code: -32600, message: expect.stringContaining('at most 10 messages') as string } });
      const big = await call(srv.url, { body: pings(2, 'x'.repeat(5000)), headers, token });
      expect(big.status).toBe(400);
      expect(JSON.parse(big.text)).toMatchObject({ error: { code: -32600, message: expect.stringContaining('at most 8192 bytes') as string } });
      await endSession(token, sid as string);
    });
  });

  describe('duplicate request ids in flight on one session', () => {
    it('the second is refused (-32600) and a cancel still reaches the first', async () => {
      const def = toolDefinition({ name: 'test.elicit', handler: 'test.elicit', inputSchema: { type: 'object' }, access: { requiredScopes: [], tenants: [], classification: 'public' } });
      expect((await publish(def, await publisher())).status).toBeLessThan(300);
      const token = await mint({ sub: 'duplicator', tenant: 'acme', scope: '', clearance: 'public' });
      const { sid } = await initialize(token, '2025-11-25', { elicitation: {} });
      const headers = { 'content-type': 'application/json', authorization: `Bearer ${token}`, 'mcp-session-id': sid as string, 'mcp-protocol-version': '2025-11-25' };
      const request = { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'test.elicit', arguments: { text: 'who?' } } };
      const first = await openSse(srv.url, { method: 'POST', headers, body: JSON.stringify(request) });
      // The first call is in flight: it waits for the elicitation answer.
      const asked = await first.events.next((e) => e.data.includes('elicitation/create'), 20_000, 'the elicitation request');
      expect(asked.data).toContain('who?');

      const second = await call(srv.url, { body: request, headers: { 'mcp-session-id': sid as string, 'mcp-protocol-version': '2025-11-25' }, token });
      expect(second.status).toBe(400);
      expect(JSON.parse(second.text)).toMatchObject({ id: 7, error: { code: -32600, message: expect.stringContaining('already in flight') as string } });

      const cancel = await call(srv.url, { body: { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 7, reason: 'changed my mind' } }, headers: { 'mcp-session-id': sid as string, 'mcp-protocol-version': '2025-11-25' }, token });
      expect(cancel.status).toBe(202);
      // The first call's question is withdrawn: the cancel reached it.
      await first.events.next((e) => e.data.includes('notifications/cancelled'), 20_000, 'the withdrawn elicitation');
      first.close();
      await endSession(token, sid as string);
    });
  });

  describe('the publishing API: a NUL or non-Latin-1 character in a lifecycle path', () => {
    it.each([
      ['NUL', 'pay%00ments.lookup', '1.0.0'],
      ['non-Latin-1 name', 'payments.%E2%82%ACuro', '1.0.0'],
      ['non-Latin-1 version', 'payments.lookup', '1.0.%E2%82%AC'],
      ['CR LF', 'payments.lookup%0D%0AX-Evil: 1', '1.0.0'],
    ])('%s: 400 bad-ref, not 500', async (_why, name, version) => {
      const token = await mint({ sub: 'ops', tenant: undefined, scope: 'estate:lifecycle:cards', clearance: undefined });
      const r = await call(`${base}/v1/tools/${name}/versions/${version}/deprecate`, { body: { reason: 'x' }, token });
      expect(r.status).toBe(400);
      expect(r.json()).toMatchObject({ error: { code: 'bad-ref' } });
    });
  });

  it('the publishing API bounds a lifecycle reason as the console does (500 characters), recording nothing past it', async () => {
    const token = await mint({ sub: 'ops', tenant: undefined, scope: 'estate:lifecycle:payments', clearance: undefined });
    const r = await call(`${base}/v1/tools/payments.lookup/versions/1.0.0/deprecate`, { body: { reason: 'x'.repeat(1_000_000) }, token });
    expect(r.status).toBe(400);
    expect(r.json()).toMatchObject({ error: { code: 'reason-too-long' } });
    expect(JSON.stringify(r.json())).toContain('at most 500 characters (got 1000000)');
  });

  describe('tokens', () => {
    const claims = { sub: 'agent-t', tenant: 'acme', scope: '', clearance: 'public' };
    const now = () => Math.floor(Date.now() / 1000);

    it('a token living longer than the maximum is refused (exp - iat, and exp - now without iat)', async () => {
      const long = await mint({ ...claims, iat: now(), exp: now() + 7200 });
      const r = await statelessList(srv.url, long);
      expect(r.status).toBe(401);
      expect(r.headers.get('www-authenticate')).toContain('error="invalid_token"');
      expect(r.headers.get('www-authenticate')).toContain('exceeds the 3600 s');
      const noIat = await mint({ ...claims, iat: undefined, exp: now() + 7200 });
      expect((await statelessList(srv.url, noIat)).status).toBe(401);
      const backdated = await mint({ ...claims, iat: now() - 7000, exp: now() + 300 });
      expect((await statelessList(srv.url, backdated)).status).toBe(401);
      expect((await statelessList(srv.url, await mint({ ...claims, iat: now(), exp: now() + 3000 }))).status).toBe(200);
    });

    it('an ID-token-shaped JWT (typ JWT) is refused; at+jwt, application/at+jwt or no typ are taken', async () => {
      const id = await mint(claims, { typ: 'JWT' });
      const r = await statelessList(srv.url, id);
      expect(r.status).toBe(401);
      expect(r.headers.get('www-authenticate')).toContain('not an access token');
      for (const typ of ['at+jwt', 'application/at+jwt', null]) expect((await statelessList(srv.url, await mint(claims, { typ }))).status).toBe(200);
    });

    it('the protected-resource metadata publishes scopes_supported', async () => {
      const r = await call(`${base}/.well-known/oauth-protected-resource/mcp`, { method: 'GET' });
      expect(r.status).toBe(200);
      expect(r.json()).toMatchObject({ resource: AUDIENCE, scopes_supported: ['payments.read', 'accounts.read'] });
    });
  });
});
