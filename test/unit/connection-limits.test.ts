import { createServer, request, type Server } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { Log } from '#app/log';
import { defaultConnectionLimits, limitConnections, openFileLimit, resolveConnectionLimits } from '#http/connection-limits';

const LIMITS = `Limit                     Soft Limit           Hard Limit           Units
Max processes             95034                95034                processes
Max open files            20000                20000                files
Max locked memory         8388608              8388608              bytes
`;

describe('openFileLimit', () => {
  it('reads the soft limit on open files', () => {
    expect(openFileLimit(() => LIMITS)).toBe(20_000);
    expect(openFileLimit(() => LIMITS.replace('20000                20000', 'unlimited            unlimited'))).toBe(Number.POSITIVE_INFINITY);
  });
  it('is undefined where there is no such file or line', () => {
    expect(
      openFileLimit(() => {
        throw new Error('ENOENT');
      }),
    ).toBeUndefined();
    expect(openFileLimit(() => 'Max processes 1 1 processes\n')).toBeUndefined();
  });
});

describe('defaultConnectionLimits', () => {
  it('leaves a quarter of the open-file limit (at least 256) for the rest of the process; one address gets half', () => {
    expect(defaultConnectionLimits(20_000)).toEqual({ max: 15_000, perPeer: 7_500 });
    expect(defaultConnectionLimits(1_024)).toEqual({ max: 768, perPeer: 384 });
    expect(defaultConnectionLimits(256)).toEqual({ max: 64, perPeer: 32 });
    expect(defaultConnectionLimits(1_048_576)).toEqual({ max: 20_000, perPeer: 10_000 });
    expect(defaultConnectionLimits(Number.POSITIVE_INFINITY)).toEqual({ max: 20_000, perPeer: 10_000 });
    expect(defaultConnectionLimits(undefined)).toEqual({ max: 10_000, perPeer: 5_000 });
  });
  it('takes what is set; an address never gets more than the total', () => {
    expect(resolveConnectionLimits({}, 20_000)).toMatchObject({ max: 15_000, perPeer: 7_500 });
    expect(resolveConnectionLimits({ max: 100 }, 20_000)).toMatchObject({ max: 100, perPeer: 50 });
    expect(resolveConnectionLimits({ perPeer: 10 }, 20_000)).toMatchObject({ max: 15_000, perPeer: 10 });
    expect(resolveConnectionLimits({ max: 100, perPeer: 500 }, 20_000)).toMatchObject({ max: 100, perPeer: 100 });
  });
  it('gives one address the same share of the body bytes as of the connections, never less than one whole body', () => {
    const MiB = 1024 * 1024;
    expect(resolveConnectionLimits({}, 20_000).bodies).toEqual({ max: 64 * MiB, perPeer: 32 * MiB });
    expect(resolveConnectionLimits({ max: 100, perPeer: 100 }, 20_000).bodies).toEqual({ max: 64 * MiB, perPeer: 64 * MiB });
    expect(resolveConnectionLimits({ max: 1000, perPeer: 1, bodyBytes: 8 * MiB }, 20_000).bodies).toEqual({ max: 8 * MiB, perPeer: MiB });
    expect(resolveConnectionLimits({ bodyBytes: 1 }, 20_000).bodies.max).toBe(MiB);
  });
});

describe('limitConnections on a real listener', () => {
  let server: Server | undefined;
  const sockets: Socket[] = [];
  afterEach(async () => {
    for (const s of sockets.splice(0)) s.destroy();
    server?.closeAllConnections();
    await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
    server = undefined;
  });

  const warnings: Record<string, unknown>[] = [];
  const log = { warn: (o: Record<string, unknown>) => warnings.push(o), info: () => undefined, error: () => undefined, debug: () => undefined } as unknown as Log;

  const start = async (max: number, perPeer: number) => {
    let served = 0;
    server = createServer((_req, res) => {
      served++;
      res.end('ok');
    });
    const counts = limitConnections(server, { max, perPeer }, log);
    await new Promise<void>((r) => server!.listen(0, '127.0.0.1', () => r()));
    return { port: (server.address() as AddressInfo).port, counts, served: () => served };
  };

  /** A connection that sends half a request and holds it; resolves once the server has counted it. */
  const hold = async (port: number, from: string, counts: () => { open: number }): Promise<Socket> => {
    const before = counts().open;
    const s = connect({ port, host: '127.0.0.1', localAddress: from });
    sockets.push(s);
    s.on('error', () => undefined);
    await new Promise<void>((r) => s.once('connect', () => r()));
    s.write('POST / HTTP/1.1\r\nHost: 127.0.0.1\r\n');
    while (counts().open === before) await new Promise((r) => setImmediate(r));
    return s;
  };

  /** A whole request on a connection of its own, from `from`: the status and body. */
  const get = (port: number, from: string): Promise<{ status: number; body: string }> =>
    new Promise((resolve, reject) => {
      const req = request({ port, host: '127.0.0.1', localAddress: from, path: '/', agent: false }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      });
      req.on('error', reject);
      req.end();
    });

  it('an address past its bound gets a 503 naming it, its request never reaches the server; others are served', async () => {
    const { port, counts, served } = await start(10, 2);
    await hold(port, '127.0.0.1', counts);
    await hold(port, '127.0.0.1', counts);
    const refused = await get(port, '127.0.0.1');
    expect(refused.status).toBe(503);
    expect(JSON.parse(refused.body)).toMatchObject({ error: { code: 'too-many-connections' } });
    expect(refused.body).toContain('ESTATE_MAX_CONNECTIONS_PER_PEER');
    expect(served()).toBe(0);
    expect(await get(port, '127.0.0.2')).toEqual({ status: 200, body: 'ok' });
    expect(counts().refused).toEqual({ total: 0, peer: 1 });
    expect(warnings.at(-1)).toMatchObject({ reason: 'peer', peer: '127.0.0.1', perPeer: 2 });
  });

  it('past the total every address is refused until a connection closes', async () => {
    const { port, counts } = await start(3, 2);
    const first = await hold(port, '127.0.0.1', counts);
    await hold(port, '127.0.0.2', counts);
    await hold(port, '127.0.0.3', counts);
    expect(counts().open).toBe(3);
    const refused = await get(port, '127.0.0.4');
    expect(refused.status).toBe(503);
    expect(refused.body).toContain('ESTATE_MAX_CONNECTIONS)');
    first.destroy();
    while (counts().open === 3) await new Promise((r) => setImmediate(r));
    expect(await get(port, '127.0.0.4')).toEqual({ status: 200, body: 'ok' });
    expect(counts().refused).toEqual({ total: 1, peer: 0 });
  });
});
