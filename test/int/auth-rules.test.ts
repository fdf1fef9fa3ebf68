/** The pure rules of the HTTP edge: configuration, claim mapping, API scopes, metadata and challenges. */
import { validateHeaderValue } from 'node:http';
import { describe, expect, it } from 'vitest';
import { covers, holdsAny, inNamespace, LIFECYCLE_SCOPE, PUBLISH_SCOPE, scopeNeededFor } from '#auth/api-scopes';
import { NO_TENANT, principalFromClaims } from '#auth/claims';
import { DEFAULT_CLAIMS, loadAuthConfig } from '#auth/config';
import { metadataPaths, metadataUrl, protectedResourceMetadata, wwwAuthenticate } from '#auth/resource-metadata';
import { DomainError } from '#domain/errors';

const FULL = { authIssuer: 'https://idp.example', authJwksUrl: 'https://idp.example/jwks', authAudience: 'https://estate.example/mcp' };

describe('auth configuration', () => {
  it('nothing configured: no authorization', () => {
    expect(loadAuthConfig({}, {})).toBeUndefined();
  });

  it('flags win over environment; defaults for claims and leeway', () => {
    const c = loadAuthConfig({ authIssuer: 'https://flag.example' }, { ESTATE_AUTH_ISSUER: 'https://env.example', ESTATE_AUTH_JWKS_URL: 'https://env.example/jwks', ESTATE_AUTH_AUDIENCE: 'https://estate.example/mcp' });
    expect(c).toEqual({ issuer: 'https://flag.example', jwksUrl: 'https://env.example/jwks', audience: 'https://estate.example/mcp', claims: DEFAULT_CLAIMS, clockToleranceSec: 30, maxTokenLifetimeSec: 86_400, scopesSupported: [] });
  });

  it('token lifetime and scopes_supported come from the environment; a bad lifetime is a clear usage error', () => {
    const c = loadAuthConfig(FULL, { ESTATE_AUTH_MAX_TOKEN_LIFETIME_S: '3600', ESTATE_AUTH_SCOPES_SUPPORTED: 'payments.read accounts.read' });
    expect(c).toMatchObject({ maxTokenLifetimeSec: 3600, scopesSupported: ['payments.read', 'accounts.read'] });
    expect(() => loadAuthConfig(FULL, { ESTATE_AUTH_MAX_TOKEN_LIFETIME_S: 'soon' })).toThrow(/ESTATE_AUTH_MAX_TOKEN_LIFETIME_S must be a number of seconds/);
    expect(() => loadAuthConfig(FULL, { ESTATE_AUTH_MAX_TOKEN_LIFETIME_S: '5' })).toThrow(/at least 60/);
  });

  it('claim names come from the environment', () => {
    const c = loadAuthConfig(FULL, { ESTATE_AUTH_TENANT_CLAIM: 'org', ESTATE_AUTH_SCOPES_CLAIM: 'roles, scp', ESTATE_AUTH_CLEARANCE_CLAIM: 'lvl', ESTATE_AUTH_SUBJECT_CLAIM: 'oid' });
    expect(c?.claims).toEqual({ subject: 'oid', tenant: 'org', scopes: ['roles', 'scp'], clearance: 'lvl' });
  });

  it('half a configuration is a usage error naming what is missing', () => {
    const e = (() => {
      try {
        loadAuthConfig({ authIssuer: 'https://idp.example' }, {});
      } catch (x) {
        return x;
      }
    })();
    expect(e).toBeInstanceOf(DomainError);
    expect(e).toMatchObject({ kind: 'usage', code: 'auth-incomplete', message: 'authorization: --auth-jwks-url, --auth-audience are missing (set all of --auth-issuer, --auth-jwks-url, --auth-audience, or none)' });
  });

  it('an audience that is not an absolute URL is refused', () => {
    expect(() => loadAuthConfig({ ...FULL, authAudience: 'estate' }, {})).toThrow(/--auth-audience must be an absolute http\(s\) URL/);
  });
});

describe('claims to principal', () => {
  it('scope (space-separated) and the defaults', () => {
    expect(principalFromClaims({ sub: 'a', tenant: 'acme', scope: 'b a  a', clearance: 'internal' }, DEFAULT_CLAIMS)).toEqual({
      ok: true,
      principal: { subject: 'a', tenant: 'acme', scopes: ['a', 'b'], clearance: 'internal' },
    });
  });

  it('scp (array) when there is no scope claim; non-strings dropped', () => {
    expect(principalFromClaims({ sub: 'a', tenant: 'acme', scp: ['x', 3, 'y'] }, DEFAULT_CLAIMS)).toMatchObject({ ok: true, principal: { scopes: ['x', 'y'] } });
  });

  it.each([[undefined], ['top-secret'], [4], ['RESTRICTED']])('clearance %s is public, never more', (clearance) => {
    expect(principalFromClaims({ sub: 'a', tenant: 'acme', clearance }, DEFAULT_CLAIMS)).toMatchObject({ ok: true, principal: { clearance: 'public' } });
  });

  it('no tenant claim: a tenant no definition can list', () => {
    expect(principalFromClaims({ sub: 'a' }, DEFAULT_CLAIMS)).toMatchObject({ ok: true, principal: { tenant: NO_TENANT } });
  });

  it('no subject: refused', () => {
    expect(principalFromClaims({ tenant: 'acme' }, DEFAULT_CLAIMS)).toEqual({ ok: false, reason: 'the token has no \'sub\' claim' });
  });

  it('the subject `anonymous` (the name of callers without one): refused, under whichever claim the subject is read from', () => {
    expect(principalFromClaims({ sub: 'anonymous', tenant: 'acme' }, DEFAULT_CLAIMS)).toEqual({
      ok: false,
      reason: 'the token\'s \'sub\' claim is \'anonymous\', reserved for callers without a subject',
    });
    const byEmail = { ...DEFAULT_CLAIMS, subject: 'email' };
    expect(principalFromClaims({ sub: 'x', email: 'anonymous' }, byEmail)).toMatchObject({ ok: false, reason: expect.stringContaining('\'email\' claim is \'anonymous\'') });
    // Only the exact string: a subject that merely contains it, or another case of it, is someone's name.
    for (const sub of ['anonymous2', 'Anonymous', ' anonymous']) expect(principalFromClaims({ sub }, DEFAULT_CLAIMS)).toMatchObject({ ok: true, principal: { subject: sub } });
  });
});

describe('publishing API scopes', () => {
  it('namespaces are dotted prefixes', () => {
    expect(inNamespace('payments.lookup', 'payments')).toBe(true);
    expect(inNamespace('payments', 'payments')).toBe(true);
    expect(inNamespace('payments.v2.lookup', 'payments.v2')).toBe(true);
    expect(inNamespace('paymentsx.lookup', 'payments')).toBe(false);
    expect(inNamespace('cards.payments', 'payments')).toBe(false);
    expect(inNamespace('payments.lookup', '')).toBe(false);
  });

  it('estate:publish covers every name; estate:publish:<ns> only its namespace', () => {
    expect(covers(['estate:publish'], PUBLISH_SCOPE, 'cards.block')).toBe(true);
    expect(covers(['estate:publish:payments'], PUBLISH_SCOPE, 'payments.lookup')).toBe(true);
    expect(covers(['estate:publish:payments'], PUBLISH_SCOPE, 'cards.block')).toBe(false);
    expect(covers(['estate:lifecycle'], PUBLISH_SCOPE, 'cards.block')).toBe(false);
    expect(covers(['estate:publish'], LIFECYCLE_SCOPE, 'cards.block')).toBe(false);
    expect(covers(['payments.read', 'estate:publisher'], PUBLISH_SCOPE, 'payments.lookup')).toBe(false);
    expect(covers(['estate:publish:'], PUBLISH_SCOPE, 'payments.lookup')).toBe(false);
  });

  it('holdsAny and the scope a 403 names', () => {
    expect(holdsAny(['estate:publish:cards'], PUBLISH_SCOPE)).toBe(true);
    expect(holdsAny(['estate:publisher'], PUBLISH_SCOPE)).toBe(false);
    expect(scopeNeededFor(PUBLISH_SCOPE, 'payments.lookup')).toBe('estate:publish:payments');
    expect(scopeNeededFor(LIFECYCLE_SCOPE, 'fx')).toBe('estate:lifecycle:fx');
  });
});

describe('protected resource metadata and challenges', () => {
  it('the metadata names the resource and its issuer, and lists the scopes the operator chose (none by default)', () => {
    const m = protectedResourceMetadata('https://estate.example/mcp', 'https://idp.example');
    expect(m).toEqual({ resource: 'https://estate.example/mcp', authorization_servers: ['https://idp.example'], bearer_methods_supported: ['header'], resource_name: 'Estate MCP tool catalogue', scopes_supported: [] });
    expect(protectedResourceMetadata('https://estate.example/mcp', 'https://idp.example', ['payments.read']).scopes_supported).toEqual(['payments.read']);
  });

  it('the metadata URL is the path-suffixed form of the audience', () => {
    expect(metadataUrl('https://estate.example/mcp')).toBe('https://estate.example/.well-known/oauth-protected-resource/mcp');
    expect(metadataUrl('https://estate.example/')).toBe('https://estate.example/.well-known/oauth-protected-resource');
    expect(metadataUrl('https://estate.example:8443/bank/mcp/')).toBe('https://estate.example:8443/.well-known/oauth-protected-resource/bank/mcp');
    expect([...metadataPaths('https://estate.example/bank/mcp')].sort()).toEqual([
      '/.well-known/oauth-protected-resource',
      '/.well-known/oauth-protected-resource/bank/mcp',
      '/.well-known/oauth-protected-resource/mcp',
    ]);
  });

  it('challenges quote and escape their values', () => {
    expect(wwwAuthenticate('https://e/x', { kind: 'insufficient-scope', scope: 'estate:publish', description: 'say "hi"' })).toBe(
      'Bearer resource_metadata="https://e/x", error="insufficient_scope", scope="estate:publish", error_description="say \\"hi\\""',
    );
  });

  it('challenges carry printable ASCII only: other characters become ?, line breaks a space', () => {
    const header = wwwAuthenticate('https://e/x', { kind: 'invalid', description: 'a\u2603b\u0001c\u00e9d\u{1F600}e\tf\r\ng\u007f"\\' });
    expect(header).toBe('Bearer resource_metadata="https://e/x", error="invalid_token", error_description="a?b?c?d?e?f  g?\\"\\\\"');
    expect(() => validateHeaderValue('www-authenticate', header)).not.toThrow();
  });
});
