/**
 * The console with authorization on, over raw HTTP against a real `estate serve --http` and a real OpenID provider
 * (oidc-provider, for its metadata and keys; tokens minted with its key): the sign-in page shows nothing of the
 * catalogue; a forged, expired, foreign or scope-less token is refused and learns nothing; a token is read from the
 * Authorization header only (never a cookie or the query); an action without the lifecycle scope is refused before
 * its body is read and nothing changes; the change stream ends when its token expires.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOidcIssuer, type OidcIssuer } from '../fixtures/oidc-issuer.ts';
import { makeTempStore, openSse, runCli, startHttpServer, type HttpServer, type TempStore } from './helpers.ts';

const AUDIENCE = 'https://estate.test/mcp';
const ACCOUNTS = { ops: { password: 'x', tenant: 'acme', clearance: 'restricted', scopes: ['estate:read', 'estate:lifecycle'] } };
const now = (): number => Math.floor(Date.now() / 1000);

describe('the console with authorization: tokens, scopes and the sign-in page', () => {
  let tmp: TempStore;
  let idp: OidcIssuer;
  let srv: HttpServer;
  let base: string;
  let ops: string;
  let viewer: string;

  const get = async (path: string, headers: Record<string, string> = {}) => {
    const r = await fetch(`${base}${path}`, { headers });
    return { status: r.status, headers: r.headers, text: await r.text() };
  };
  const act = async (headers: Record<string, string>, body: unknown = { action: 'retire', reason: 'pwned' }, path = 'api/tools/payments.lookup/versions/1.0.0/lifecycle') => {
    const r = await fetch(`${base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-estate-console': '1', ...headers }, body: JSON.stringify(body) });
    return { status: r.status, body: (await r.json()) as { error?: { code: string; message: string }; result?: string } };
  };
  const bearer = (t: string) => ({ authorization: `Bearer ${t}` });
  const lookupStatus = async (): Promise<string> => {
    const out = JSON.parse((await runCli(['history', 'payments.lookup', '--json', '--store', tmp.store])).stdout) as { versions: { status: string }[] };
    return out.versions[0]?.status ?? 'none';
  };

  beforeAll(async () => {
    tmp = makeTempStore('estate-console-auth-');
    idp = await startOidcIssuer({ audience: AUDIENCE, accounts: ACCOUNTS });
    srv = await startHttpServer(['--demo', '--store', tmp.store, '--auth-issuer', idp.issuer, '--auth-jwks-url', idp.jwksUrl, '--auth-audience', AUDIENCE, '--console-client-id', idp.clientId]);
    base = srv.url.replace(/\/mcp$/, '/console/');
    idp.registerConsole(new URL(base).origin);
    ops = await idp.mint({ sub: 'ops', scope: 'estate:read estate:lifecycle', tenant: 'acme' });
    viewer = await idp.mint({ sub: 'viewer', scope: 'estate:read', tenant: 'acme' });
  }, 120_000);
  afterAll(async () => {
    await srv?.stop();
    await idp?.close();
    tmp?.cleanup();
  });

  it('answers any page without a credential with the sign-in page: the issuer and client, nothing of the catalogue', async () => {
    for (const path of ['', 'tools/payments.lookup', 'runs', 'upstreams', 'callback?code=x&state=y']) {
      const r = await get(path);
      expect(r.status, path).toBe(200);
      expect(r.text, path).toContain('data-sign-in');
      expect(r.text, path).not.toMatch(/payments\.|fx\.rates|accounts\.balance/);
      expect(r.text).toContain(`data-authorization-endpoint="${idp.issuer}/auth"`);
      expect(r.text).toContain(`data-token-endpoint="${idp.issuer}/token"`);
      expect(r.text).toContain(`data-resource="${AUDIENCE}"`);
      // The page may talk to its own origin and the issuer's token endpoint, nothing else.
      expect(r.headers.get('content-security-policy')).toContain(`connect-src 'self' ${idp.issuer};`);
    }
  });

  it('refuses a forged, expired, foreign, malformed or scope-less token, and shows nothing', async () => {
    const cases: [Record<string, string>, number, string][] = [
      [bearer(await idp.mint({ sub: 'ops', scope: 'estate:read' }, { key: 'forged' })), 401, 'signature does not verify'],
      [bearer(await idp.mint({ sub: 'ops', scope: 'estate:read', iat: now() - 900, exp: now() - 600 })), 401, 'the token is expired'],
      [bearer(await idp.mint({ sub: 'ops', scope: 'estate:read', aud: 'https://elsewhere.test/mcp' })), 401, 'issued for another resource'],
      [bearer('not.a.jwt'), 401, 'malformed'],
      [{ authorization: 'Basic b3BzOng=' }, 401, 'not a Bearer token'],
      [bearer(await idp.mint({ sub: 'agent', scope: 'payments.read payments.write', tenant: 'acme' })), 403, 'holds none of estate:read'],
    ];
    for (const [headers, status, says] of cases) {
      const r = await get('tools/payments.lookup', headers);
      expect(r.status, says).toBe(status);
      expect(r.text, says).toContain(says);
      expect(r.text, says).not.toContain('payments.lookup@');
      expect(r.text, says).not.toContain('Published by');
    }
  });

  it('serves the pages to a token holding estate:read, as the signed-in subject', async () => {
    const r = await get('tools/payments.lookup', bearer(viewer));
    expect(r.status).toBe(200);
    expect(r.text).toContain('signed in as <strong>viewer</strong>');
    expect(r.text).toContain('Published by');
    const v = await get('tools/payments.lookup/versions/1.0.0', bearer(viewer));
    expect(v.text).not.toContain('/lifecycle'); // no action offered without the scope
    expect((await get('tools/payments.lookup/versions/1.0.0', bearer(ops))).text).toContain('/lifecycle');
  });

  it('reads the token from the Authorization header only: a cookie or a query parameter is no credential', async () => {
    expect((await get(`tools/payments.lookup?access_token=${ops}`)).text).toContain('data-sign-in');
    expect((await get('tools/payments.lookup', { cookie: `access_token=${ops}; token=${ops}` })).text).toContain('data-sign-in');
    expect((await act({ cookie: `access_token=${ops}` })).status).toBe(401);
  });

  it('refuses an action without a credential, with a bad one, or without the lifecycle scope: nothing changes', async () => {
    expect((await act({})).status).toBe(401);
    expect((await act(bearer(await idp.mint({ sub: 'ops', scope: 'estate:lifecycle' }, { key: 'forged' })))).status).toBe(401);
    const refused = await act(bearer(viewer));
    expect(refused.status).toBe(403);
    expect(refused.body.error?.message).toContain('estate:lifecycle:payments');
    const narrow = await act(bearer(await idp.mint({ sub: 'fx-team', scope: 'estate:lifecycle:fx', tenant: 'acme' })));
    expect(narrow.status).toBe(403);
    // The ops token, but without the console's header (what a cross-site form would send): refused as well.
    const r = await fetch(`${base}api/tools/payments.lookup/versions/1.0.0/lifecycle`, { method: 'POST', headers: { ...bearer(ops), 'content-type': 'application/json' }, body: '{"action":"retire","reason":"pwned"}' });
    expect(r.status).toBe(403);
    expect(await lookupStatus()).toBe('active');
  });

  it('lets the lifecycle scope deprecate, recorded as the token subject', async () => {
    const r = await act(bearer(ops), { action: 'deprecate', reason: 'superseded' });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(await lookupStatus()).toBe('deprecated');
    expect((await get('tools/payments.lookup', bearer(ops))).text).toMatch(/Deprecated by <strong>ops<\/strong>/);
  });

  it('refuses the change stream without a valid token, and ends it when the token expires', async () => {
    expect((await fetch(`${base}events`)).status).toBe(401);
    expect((await fetch(`${base}events`, { headers: bearer(await idp.mint({ sub: 'ops', scope: 'estate:read' }, { key: 'forged' })) })).status).toBe(401);
    const shortLived = await idp.mint({ sub: 'ops', scope: 'estate:read', exp: now() + 2 });
    const sse = await openSse(`${base}events`, { headers: bearer(shortLived) });
    try {
      expect(sse.status).toBe(200);
      await sse.events.next((e) => e.event === 'hello', 10_000, 'hello');
      const expired = await sse.events.next((e) => e.event === 'expired', 15_000, 'expired');
      expect(expired.data).toContain('the token is expired');
    } finally {
      sse.close();
    }
  });
});

describe('estate serve: the console sign-in settings', () => {
  it('refuses --console-client-id without authorization, as a usage error', async () => {
    const tmp = makeTempStore('estate-console-flags-');
    try {
      const r = await runCli(['serve', '--http', '--port', '0', '--store', tmp.store, '--console-client-id', 'estate-console']);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain('--console-client-id signs the console in at the issuer of --auth-issuer');
    } finally {
      tmp.cleanup();
    }
  });
});
