/** /metrics under authorization answers loopback callers only unless --metrics-public (SPEC §9). */
import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { createMetrics } from '#ops/metrics';
import { opsRoutes } from '#ops/http-routes';
import { createStoreHealth, publicReason } from '#ops/store-health';

const from = (remoteAddress: string | undefined, headers: Record<string, string> = {}) => ({ socket: { remoteAddress }, headers }) as unknown as IncomingMessage;
const deps = (metricsLoopbackOnly: boolean) => ({
  health: createStoreHealth('memory:'),
  readModels: () => Promise.resolve(null),
  metrics: createMetrics({ catalogue: () => ({ size: 2, position: '7' }) }),
  metricsLoopbackOnly,
});

describe('/metrics access', () => {
  it.each(['10.0.0.5', '::ffff:10.0.0.5', '128.0.0.1', '::2', undefined])('refuses %s when loopback-only', async (addr) => {
    expect(await opsRoutes(deps(true))('/metrics', from(addr))).toMatchObject({ status: 403 });
  });
  it.each(['127.0.0.1', '::1', '::ffff:127.0.0.1'])('answers loopback %s', async (addr) => {
    const r = await opsRoutes(deps(true))('/metrics', from(addr));
    expect(r?.status).toBe(200);
    expect(String(r?.body)).toMatch(/^estate_catalogue_tools 2$/m);
    expect(String(r?.body)).toMatch(/^estate_catalogue_position 7$/m);
  });
  // Behind a same-host reverse proxy or sidecar everything comes from loopback (probe F4: a request from 192.0.2.2
  // through a 20-line local proxy got the whole exposition): the proxy's headers say it is someone else's.
  it.each([
    ['x-forwarded-for', '192.0.2.2'],
    ['forwarded', 'for=192.0.2.2;proto=http'],
    ['x-real-ip', '192.0.2.2'],
  ])('refuses a loopback request that came through a proxy (%s)', async (name, value) => {
    const r = await opsRoutes(deps(true))('/metrics', from('127.0.0.1', { [name]: value }));
    expect(r).toMatchObject({ status: 403 });
    expect((r?.body as { error: string }).error).toMatch(/came through a proxy .*scrape it from loopback directly/);
  });
  it('answers a proxied request with --metrics-public (the operator opened it)', async () => {
    expect((await opsRoutes(deps(false))('/metrics', from('127.0.0.1', { 'x-forwarded-for': '192.0.2.2' })))?.status).toBe(200);
  });
  it('answers anyone with --metrics-public', async () => {
    expect((await opsRoutes(deps(false))('/metrics', from('10.0.0.5')))?.status).toBe(200);
  });
  it('serves only its own paths, exactly', () => {
    const r = opsRoutes(deps(false));
    for (const p of ['/metrics/', '/Metrics', '/readyz/x', '/healthz.json', '/mcp']) expect(r(p, from('127.0.0.1'))).toBeNull();
  });
});

describe('/readyz says why not ready without the store driver\'s text', () => {
  it('an unreachable PostgreSQL store: the fixed reason only; the whole one is logged once per change of state', async () => {
    const changes: (string | null)[] = [];
    // Port 1 on loopback: refused at once. The driver's text names the host and port; the URL names a database and user.
    const health = createStoreHealth('postgres://secret_user@127.0.0.1:1/secret_db', (r) => changes.push(r));
    const routes = opsRoutes({ health, readModels: () => Promise.resolve(null) });
    const first = await routes('/readyz', from('192.0.2.2'));
    expect(first).toEqual({ status: 503, body: { status: 'not ready', reasons: ['the PostgreSQL store is unreachable'] } });
    expect(JSON.stringify(await routes('/readyz', from('127.0.0.1')))).not.toMatch(/127\.0\.0\.1|ECONNREFUSED|secret/);
    await health.check();
    expect(changes).toHaveLength(1);
    expect(changes[0]).toMatch(/^the PostgreSQL store is unreachable: .*ECONNREFUSED/);
    expect(health.refusal()).toMatch(/ECONNREFUSED/);
    await health.close();
  });

  it('a reason without driver text is given whole', () => {
    expect(publicReason('the PostgreSQL store is read-only (transaction_read_only = on)')).toBe('the PostgreSQL store is read-only (transaction_read_only = on)');
    expect(publicReason('the SQLite store cannot write: attempt to write a readonly database')).toBe('the SQLite store cannot write');
  });
});
