/**
 * The HTTP edge of `estate serve --http` with authorization, attacked as the probe did (F3, F4): a request refused
 * before its body was read (401 without a token on /mcp and /v1, 403 for its Host, 404) while its client sends an
 * endless chunked body as fast as it can; and /metrics reached from loopback through a same-host proxy. Before, the
 * server read each refused body to its end (~500 MB in 3 s on one connection, until Node's 300 s request timeout),
 * and /metrics answered anything that came from loopback.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestIssuer, type TestIssuer } from '../fixtures/jwks.ts';
import { rawPost } from '../fixtures/raw-post.ts';
import { startHttpServer, type HttpServer } from './helpers.ts';

const MiB = 1024 * 1024;
/** What the client writes at most before giving up on the server closing: far past the drain bound (1 MiB). */
const CAP = 48 * MiB;

describe('estate serve --http: refused requests do not keep reading their bodies; /metrics is not opened by a proxy', { timeout: 60_000 }, () => {
  let idp: TestIssuer;
  let srv: HttpServer;
  let port: number;
  let audience: string;

  beforeAll(async () => {
    // The audience names the server's URL, which is known only once it listens: any fixed one does for these refusals.
    audience = 'http://127.0.0.1/mcp';
    idp = await startTestIssuer(audience);
    srv = await startHttpServer(['--demo', '--store', 'memory:', '--no-console', '--auth-issuer', idp.issuer, '--auth-jwks-url', idp.jwksUrl, '--auth-audience', audience]);
    port = Number(new URL(srv.url).port);
  });
  afterAll(async () => {
    await srv?.stop();
    await idp?.close();
  });

  /** A POST whose chunked body never ends, as fast as the server takes it (test/fixtures/raw-post.ts). */
  const flood = (path: string, host = `127.0.0.1:${port}`) => rawPost({ port, path, host, cap: CAP });

  it.each([
    ['401 on /mcp without a token', '/mcp', undefined, 401],
    ['401 on /v1/tools without a token', '/v1/tools', undefined, 401],
    ['403 for a Host not allowed', '/mcp', 'evil.example', 403],
    ['404 for a path not served', '/nope', undefined, 404],
  ])('%s: answered with Connection: close, then the connection goes', async (_what, path, host, status) => {
    const out = await flood(path, host);
    expect(out.answer).toMatch(new RegExp(`^HTTP/1\\.1 ${status} `));
    expect(out.answer.toLowerCase()).toContain('connection: close');
    expect(out.closed).toBe(true);
    expect(out.written).toBeLessThan(CAP);
  });

  /** GET /metrics from loopback, with `headers`. */
  const metrics = async (headers: Record<string, string> = {}) => {
    const r = await fetch(`http://127.0.0.1:${port}/metrics`, { headers });
    return { status: r.status, text: await r.text() };
  };

  it('/metrics: 200 from loopback, 403 from loopback through a proxy (X-Forwarded-For, Forwarded, X-Real-IP)', async () => {
    const direct = await metrics();
    expect(direct.status).toBe(200);
    expect(direct.text).toMatch(/^estate_catalogue_tools \d+$/m);
    const proxies: Record<string, string>[] = [{ 'x-forwarded-for': '192.0.2.2' }, { forwarded: 'for=192.0.2.2' }, { 'x-real-ip': '192.0.2.2' }];
    for (const headers of proxies) {
      const proxied = await metrics(headers);
      expect(proxied.status).toBe(403);
      expect(proxied.text).toContain('scrape it from loopback directly');
      expect(proxied.text).not.toContain('estate_catalogue_tools');
    }
  });
});
