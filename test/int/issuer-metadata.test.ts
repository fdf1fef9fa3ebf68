/**
 * The issuer's metadata as the console's sign-in reads it (src/auth/issuer-metadata.ts), from a loopback server that
 * can answer anything: the OpenID form first, RFC 8414's as the fallback; a document for another issuer, without
 * PKCE S256, with an endpoint an eavesdropper could read, or too large is refused; a good answer is kept and a
 * failure is not retried before the cooldown, which doubles with each failure in a row up to its cap.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createIssuerMetadata, metadataUrls, readIssuerMetadata } from '#auth/issuer-metadata';

const ISSUER = 'https://id.example.test';
const good = (issuer = ISSUER) => ({ issuer, authorization_endpoint: `${issuer}/authorize`, token_endpoint: `${issuer}/token`, code_challenge_methods_supported: ['S256'] });

describe('reading an issuer metadata document', () => {
  it('takes the endpoints of a document for this issuer that offers S256', () => {
    expect(readIssuerMetadata(ISSUER, good())).toEqual({ ok: true, endpoints: { issuer: ISSUER, authorizationEndpoint: `${ISSUER}/authorize`, tokenEndpoint: `${ISSUER}/token` } });
  });

  it('refuses another issuer, no PKCE S256, and endpoints that are not https (or http on loopback)', () => {
    expect(readIssuerMetadata(ISSUER, good('https://evil.test'))).toMatchObject({ ok: false, reason: expect.stringContaining('names the issuer "https://evil.test"') });
    expect(readIssuerMetadata(ISSUER, { ...good(), code_challenge_methods_supported: ['plain'] })).toMatchObject({ ok: false, reason: expect.stringContaining('S256') });
    expect(readIssuerMetadata(ISSUER, { ...good(), code_challenge_methods_supported: undefined })).toMatchObject({ ok: false });
    expect(readIssuerMetadata(ISSUER, { ...good(), token_endpoint: 'http://id.example.test/token' })).toMatchObject({ ok: false, reason: expect.stringContaining('token_endpoint') });
    expect(readIssuerMetadata(ISSUER, { ...good(), authorization_endpoint: 'javascript:alert(1)' })).toMatchObject({ ok: false, reason: expect.stringContaining('authorization_endpoint') });
    expect(readIssuerMetadata(ISSUER, null)).toMatchObject({ ok: false });
  });

  it('asks the OpenID Connect form first, then RFC 8414 (well-known before the issuer path)', () => {
    expect(metadataUrls('https://id.example.test/tenants/a/')).toEqual([
      'https://id.example.test/tenants/a/.well-known/openid-configuration',
      'https://id.example.test/.well-known/oauth-authorization-server/tenants/a',
    ]);
  });
});

describe('fetching an issuer metadata document', () => {
  let server: Server | undefined;
  afterEach(async () => {
    server?.closeAllConnections();
    await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
    server = undefined;
  });

  /** A loopback issuer answering `answer(path)`; counts requests. */
  const issuerAnswering = async (answer: (path: string, issuer: string) => { status: number; body: string }) => {
    const hits: string[] = [];
    server = createServer((req, res) => {
      hits.push(req.url ?? '');
      const { status, body } = answer(req.url ?? '', issuer);
      res.writeHead(status, { 'content-type': 'application/json' }).end(body);
    });
    await new Promise<void>((r) => server?.listen(0, '127.0.0.1', () => r()));
    const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    return { issuer, hits };
  };

  it('falls back to RFC 8414 and keeps a good answer', async () => {
    const { issuer, hits } = await issuerAnswering((path, iss) => (path.startsWith('/.well-known/oauth-authorization-server') ? { status: 200, body: JSON.stringify(good(iss)) } : { status: 404, body: '{}' }));
    const m = createIssuerMetadata(issuer);
    expect(await m.get()).toMatchObject({ ok: true, endpoints: { tokenEndpoint: `${issuer}/token` } });
    await m.get();
    expect(hits).toEqual(['/.well-known/openid-configuration', '/.well-known/oauth-authorization-server']);
  });

  it('refuses a document past the size bound, and does not ask again before the cooldown', async () => {
    const { issuer, hits } = await issuerAnswering((_p, iss) => ({ status: 200, body: JSON.stringify({ ...good(iss), padding: 'x'.repeat(200_000) }) }));
    const m = createIssuerMetadata(issuer, { maxBytes: 64 * 1024, cooldownMs: 60_000 });
    const r = await m.get();
    expect(r).toMatchObject({ ok: false, reason: expect.stringContaining('larger than 65536 bytes') });
    await m.get();
    expect(hits).toHaveLength(2); // both forms once, then the cooldown
  });

  /** An issuer failing (500) until `up` is set; `get()` asked each second, by a clock the test drives. */
  const failingIssuer = async () => {
    const state = { up: false };
    const { issuer, hits } = await issuerAnswering((_p, iss) => (state.up ? { status: 200, body: JSON.stringify(good(iss)) } : { status: 500, body: '{}' }));
    const clock = { t: Date.now() };
    return { issuer, hits, state, clock, lookups: () => hits.filter((h) => h === '/.well-known/openid-configuration').length };
  };

  it('failed lookups in a row double the wait up to the 5-minute cap: 17 lookups in a failing hour, not 720', async () => {
    const f = await failingIssuer();
    const m = createIssuerMetadata(f.issuer, { now: () => f.clock.t });
    const start = f.clock.t;
    const at: number[] = [];
    for (let s = 0; s <= 3_600; s++) {
      f.clock.t = start + s * 1000;
      const before = f.lookups();
      expect(await m.get()).toMatchObject({ ok: false });
      if (f.lookups() > before) at.push(s);
    }
    const gaps = at.slice(1).map((s, i) => s - at[i]!);
    expect(gaps.slice(0, 7)).toEqual([5, 10, 20, 40, 80, 160, 300]);
    expect(gaps.slice(7).every((g) => g === 300)).toBe(true);
    expect(at).toHaveLength(17);
    expect(f.hits).toHaveLength(34); // both forms each time
  });

  it('the issuer back: found at the first lookup the grown wait allows, then kept', async () => {
    const f = await failingIssuer();
    const m = createIssuerMetadata(f.issuer, { now: () => f.clock.t, cooldownMs: 1_000, maxCooldownMs: 4_000 });
    for (const wait of [0, 1_000, 2_000, 4_000, 4_000]) {
      f.clock.t += wait;
      expect(await m.get()).toMatchObject({ ok: false });
    }
    expect(f.lookups()).toBe(5);
    f.state.up = true;
    f.clock.t += 3_999; // capped at 4 s, not 16 s
    expect(await m.get()).toMatchObject({ ok: false });
    expect(f.lookups()).toBe(5);
    f.clock.t += 1;
    expect(await m.get()).toMatchObject({ ok: true });
    f.clock.t += 3_600_000;
    expect(await m.get()).toMatchObject({ ok: true });
    expect(f.lookups()).toBe(6);
  });

  it('says why when the issuer cannot be reached', async () => {
    const m = createIssuerMetadata('http://127.0.0.1:9', { timeoutMs: 2_000 });
    expect(await m.get()).toMatchObject({ ok: false, reason: expect.stringContaining("the issuer's metadata cannot be used") });
  });
});
