/** /metrics under authorization answers loopback callers only unless --metrics-public (SPEC §9). */
import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { createMetrics } from '#ops/metrics';
import { opsRoutes } from '#ops/http-routes';
import { createStoreHealth } from '#ops/store-health';

const from = (remoteAddress: string | undefined) => ({ socket: { remoteAddress } }) as unknown as IncomingMessage;
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
  it('answers anyone with --metrics-public', async () => {
    expect((await opsRoutes(deps(false))('/metrics', from('10.0.0.5')))?.status).toBe(200);
  });
  it('serves only its own paths, exactly', () => {
    const r = opsRoutes(deps(false));
    for (const p of ['/metrics/', '/Metrics', '/readyz/x', '/healthz.json', '/mcp']) expect(r(p, from('127.0.0.1'))).toBeNull();
  });
});
