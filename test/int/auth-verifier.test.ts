/**
 * The JWT checks against a real JWKS served over HTTP on loopback, with tokens minted by jose: what is accepted, what
 * is refused and why, how the key set is fetched (cached; one refetch on an unknown kid), and the 401 challenges.
 */
import { validateHeaderValue, type IncomingMessage } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAuthenticator } from '#auth/authenticator';
import { DEFAULT_CLAIMS, type AuthConfig } from '#auth/config';
import { createJwtVerifier } from '#auth/jwt-verifier';
import { startTestIssuer, type TestIssuer } from '../fixtures/jwks.ts';

const AUDIENCE = 'https://estate.example/mcp';
const METADATA = 'https://estate.example/.well-known/oauth-protected-resource/mcp';
const now = () => Math.floor(Date.now() / 1000);

const requestWith = (authorization?: string): IncomingMessage =>
  ({ headers: authorization === undefined ? {} : { authorization }, rawHeaders: authorization === undefined ? [] : ['Authorization', authorization] }) as unknown as IncomingMessage;
/** What Node makes of several Authorization headers: the first in `headers`, every one in `rawHeaders`. */
const requestWithAll = (...authorization: string[]): IncomingMessage =>
  ({ headers: { authorization: authorization[0] }, rawHeaders: authorization.flatMap((a, i) => [i % 2 === 0 ? 'Authorization' : 'authorization', a]) }) as unknown as IncomingMessage;

describe('JWT access tokens against a local JWKS', () => {
  let idp: TestIssuer;
  let config: AuthConfig;
  beforeAll(async () => {
    idp = await startTestIssuer(AUDIENCE);
    config = { issuer: idp.issuer, jwksUrl: idp.jwksUrl, audience: AUDIENCE, claims: DEFAULT_CLAIMS, clockToleranceSec: 30 };
  });
  afterAll(() => idp?.close());

  const verifier = (cooldownMs = 30_000) => createJwtVerifier({ ...config, jwksCooldownMs: cooldownMs });

  it('accepts a token signed by a published key, for this audience, from this issuer, in date', async () => {
    const out = await verifier().verify(await idp.mint({ claims: { sub: 'ci-payments', scope: 'payments.read' } }));
    expect(out).toMatchObject({ ok: true, claims: { sub: 'ci-payments', scope: 'payments.read', iss: idp.issuer, aud: AUDIENCE } });
  });

  it('accepts an audience array that names this resource among others', async () => {
    const out = await verifier().verify(await idp.mint({ claims: { aud: ['https://other.example/', AUDIENCE] } }));
    expect(out.ok).toBe(true);
  });

  it.each([
    ['expired', { exp: now() - 120 }, 'the token is expired'],
    ['not valid yet', { nbf: now() + 120 }, 'the token is not valid yet'],
    ['from another issuer', { iss: 'https://evil.example' }, 'the token was issued by another issuer'],
    ['for another resource', { aud: 'https://other.example/mcp' }, 'the token was issued for another resource'],
    ['without an audience', { aud: undefined }, 'the token was issued for another resource'],
    ['without an expiry', { exp: undefined }, 'the token\'s \'exp\' claim is invalid'],
  ])('refuses a token %s', async (_what, claims, reason) => {
    expect(await verifier().verify(await idp.mint({ claims }))).toEqual({ ok: false, kind: 'invalid', reason });
  });

  it('refuses a token issued in the future beyond the clock leeway (its exp - iat would slip past the lifetime check)', async () => {
    const at = Date.now();
    const sec = Math.floor(at / 1000);
    const v = createJwtVerifier({ ...config, now: () => at });
    expect((await v.verify(await idp.mint({ claims: { iat: sec + 30, exp: sec + 300 } }))).ok).toBe(true);
    expect(await v.verify(await idp.mint({ claims: { iat: sec + 3600, exp: sec + 300 } }))).toEqual({
      ok: false,
      kind: 'invalid',
      reason: 'the token was issued in the future (\'iat\' is 3600 s ahead of this server\'s clock)',
    });
    expect(await v.verify(await idp.mint({ claims: { iat: sec + 1e9, exp: sec + 300 } }))).toEqual({
      ok: false,
      kind: 'invalid',
      reason: 'the token was issued in the future (\'iat\' is 1000000000 s ahead of this server\'s clock)',
    });
  });

  it('allows a small clock skew on exp and nbf, and no more', async () => {
    const v = verifier();
    expect((await v.verify(await idp.mint({ claims: { exp: now() - 10 } }))).ok).toBe(true);
    expect((await v.verify(await idp.mint({ claims: { nbf: now() + 10 } }))).ok).toBe(true);
    expect((await v.verify(await idp.mint({ claims: { exp: now() - 45 } }))).ok).toBe(false);
  });

  it('refuses a bad signature (same kid, another key)', async () => {
    expect(await verifier().verify(await idp.mint({ key: 'impostor' }))).toEqual({ ok: false, kind: 'invalid', reason: 'the token\'s signature does not verify' });
  });

  it('refuses alg none without fetching any key', async () => {
    const v = verifier();
    const before = idp.fetches;
    expect(await v.verify(idp.mintUnsecured())).toEqual({ ok: false, kind: 'invalid', reason: 'the token\'s algorithm is not accepted' });
    expect(idp.fetches).toBe(before);
  });

  it('refuses an HMAC token even when its secret is guessable', async () => {
    const { SignJWT } = await import('jose');
    const token = await new SignJWT({ sub: 'x', iss: idp.issuer, aud: AUDIENCE, exp: now() + 60 }).setProtectedHeader({ alg: 'HS256', kid: 'key-1' }).sign(new TextEncoder().encode('secret-secret-secret-secret-1234'));
    expect(await verifier().verify(token)).toMatchObject({ ok: false, kind: 'invalid', reason: 'the token\'s algorithm is not accepted' });
  });

  it('refuses garbage', async () => {
    expect(await verifier().verify('not.a.jwt')).toMatchObject({ ok: false, kind: 'invalid' });
  });

  it('caches the key set, refetches exactly once on an unknown kid, then refuses', async () => {
    const v = verifier(0);
    await v.verify(await idp.mint());
    const afterFirst = idp.fetches;
    await v.verify(await idp.mint());
    expect(idp.fetches).toBe(afterFirst); // cached
    expect(await v.verify(await idp.mint({ key: 'unpublished' }))).toEqual({ ok: false, kind: 'invalid', reason: 'the token was signed with an unknown key' });
    expect(idp.fetches).toBe(afterFirst + 1);
  });

  it('does not refetch for unknown kids within the cooldown (a stream of made-up kids cannot hammer the issuer)', async () => {
    const v = verifier(60_000);
    await v.verify(await idp.mint());
    const afterFirst = idp.fetches;
    for (let i = 0; i < 3; i++) expect((await v.verify(await idp.mint({ key: 'unpublished' }))).ok).toBe(false);
    expect(idp.fetches).toBe(afterFirst);
  });

  it('picks up a rotated key on its first use', async () => {
    const other = await startTestIssuer(AUDIENCE);
    try {
      const v = createJwtVerifier({ ...config, issuer: other.issuer, jwksUrl: other.jwksUrl, jwksCooldownMs: 0 });
      expect((await v.verify(await other.mint())).ok).toBe(true);
      expect((await v.verify(await other.mint({ key: 'unpublished' }))).ok).toBe(false);
      other.publishPendingKey();
      const before = other.fetches;
      expect(await v.verify(await other.mint({ key: 'unpublished' }))).toMatchObject({ ok: true });
      expect(other.fetches).toBe(before + 1);
    } finally {
      await other.close();
    }
  });

  it('says the key set is unavailable (not that the token is bad) when the issuer cannot serve it', async () => {
    const other = await startTestIssuer(AUDIENCE);
    try {
      other.setDown(true);
      const v = createJwtVerifier({ ...config, issuer: other.issuer, jwksUrl: other.jwksUrl });
      expect(await v.verify(await other.mint())).toMatchObject({ ok: false, kind: 'unavailable' });
    } finally {
      await other.close();
    }
  });

  describe('the authenticator: Bearer header to principal, or the challenge', () => {
    it('maps the claims to a principal', async () => {
      const auth = createAuthenticator(config, verifier());
      const exp = Math.floor(Date.now() / 1000) + 120;
      const token = await idp.mint({ claims: { sub: 'agent-7', tenant: 'globex', scope: 'reports.read payments.read', clearance: 'confidential', exp } });
      expect(await auth.authenticate(requestWith(`Bearer ${token}`))).toEqual({
        ok: true,
        caller: { principal: { tenant: 'globex', scopes: ['payments.read', 'reports.read'], clearance: 'confidential', subject: 'agent-7' }, expiresAt: exp },
      });
    });

    it('no token: 401 with the metadata URL and no error code', async () => {
      const auth = createAuthenticator(config, verifier());
      const out = await auth.authenticate(requestWith());
      expect(out).toMatchObject({ ok: false, refusal: { status: 401, code: 'unauthorized' } });
      if (!out.ok) expect(out.refusal.headers['www-authenticate']).toBe(`Bearer resource_metadata="${METADATA}"`);
    });

    it('a bad token: 401 invalid_token with a description', async () => {
      const auth = createAuthenticator(config, verifier());
      const out = await auth.authenticate(requestWith(`Bearer ${await idp.mint({ claims: { exp: now() - 600 } })}`));
      expect(out).toMatchObject({ ok: false, refusal: { status: 401, code: 'invalid_token' } });
      if (!out.ok) expect(out.refusal.headers['www-authenticate']).toBe(`Bearer resource_metadata="${METADATA}", error="invalid_token", error_description="the token is expired"`);
    });

    it.each([
      ['a non-Latin-1 character', 'JWT\u2603', 'JWT?'],
      ['a control character', 'JWT\u0001x', 'JWT?x'],
      ['a line break, a quote and a backslash', 'J\r\n"\\', 'J  \\"\\\\'],
    ])('a typ with %s: 401 with a challenge Node can send', async (_what, typ, shown) => {
      const auth = createAuthenticator(config, verifier());
      const out = await auth.authenticate(requestWith(`Bearer ${await idp.mint({ typ })}`));
      expect(out).toMatchObject({ ok: false, refusal: { status: 401, code: 'invalid_token' } });
      if (out.ok) return;
      const header = out.refusal.headers['www-authenticate'] ?? '';
      expect(() => validateHeaderValue('www-authenticate', header)).not.toThrow();
      expect(header).toBe(`Bearer resource_metadata="${METADATA}", error="invalid_token", error_description="the token is not an access token (typ '${shown}'; expected 'at+jwt', RFC 9068)"`);
    });

    it('several Authorization headers: 401 invalid_request, whichever comes first', async () => {
      const auth = createAuthenticator(config, verifier());
      const valid = `Bearer ${await idp.mint()}`;
      expect((await auth.authenticate(requestWithAll(valid))).ok).toBe(true);
      for (const req of [requestWithAll(valid, 'Bearer x'), requestWithAll(valid, 'Basic eDp5'), requestWithAll(valid, valid)]) {
        const out = await auth.authenticate(req);
        expect(out).toEqual({
          ok: false,
          refusal: {
            status: 401,
            code: 'invalid_request',
            message: 'Unauthorized: the request has more than one Authorization header',
            headers: { 'www-authenticate': `Bearer resource_metadata="${METADATA}", error="invalid_request", error_description="the request has more than one Authorization header"` },
          },
        });
      }
    });

    it('another scheme is no Bearer token: 401 invalid_token', async () => {
      const auth = createAuthenticator(config, verifier());
      expect(await auth.authenticate(requestWith('Basic YWdlbnQ6c2VjcmV0'))).toMatchObject({ ok: false, refusal: { status: 401, code: 'invalid_token' } });
    });

    it('a token without a subject is refused', async () => {
      const auth = createAuthenticator(config, verifier());
      expect(await auth.authenticate(requestWith(`Bearer ${await idp.mint({ claims: { sub: undefined } })}`))).toMatchObject({
        ok: false,
        refusal: { status: 401, message: 'Unauthorized: the token has no \'sub\' claim' },
      });
    });

    it('the key set down: 503, no challenge', async () => {
      const other = await startTestIssuer(AUDIENCE);
      try {
        other.setDown(true);
        const auth = createAuthenticator({ ...config, issuer: other.issuer, jwksUrl: other.jwksUrl }, createJwtVerifier({ ...config, issuer: other.issuer, jwksUrl: other.jwksUrl }));
        const out = await auth.authenticate(requestWith(`Bearer ${await other.mint()}`));
        expect(out).toMatchObject({ ok: false, refusal: { status: 503 } });
        if (!out.ok) expect(out.refusal.headers['www-authenticate']).toBeUndefined();
      } finally {
        await other.close();
      }
    });
  });
});
