import { createServer, request } from 'node:http';
import { EventEmitter } from 'node:events';
import { connect, createServer as createNetServer, type AddressInfo, type Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { silentLog, type Log } from '#app/log';
import { defaultConnectionLimits, limitConnections, openFileLimit, peerKey, resolveConnectionLimits } from '#http/connection-limits';
import { readBody, refuseBusy } from '#http/guards';
import { useListenerTeardown } from '../fixtures/listener-teardown.ts';
import { describeFromManyAddresses } from '../fixtures/loopback-addresses.ts';

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

describeFromManyAddresses('limitConnections on a real listener', {}, () => {
  const held = useListenerTeardown();

  const warnings: Record<string, unknown>[] = [];
  const log = { warn: (o: Record<string, unknown>) => warnings.push(o), info: () => undefined, error: () => undefined, debug: () => undefined } as unknown as Log;

  const start = async (max: number, perPeer: number, bodies = { max: 256 * 1024, perPeer: 128 * 1024 }) => {
    let served = 0;
    const server = (held.server = createServer((req, res) => {
      served++;
      if (req.method !== 'POST') return void res.end('ok');
      // A client that goes away mid-body: readBody rejects (aborted).
      readBody(req).then((b) => (b.ok ? res.end(`read ${b.text.length}`) : refuseBusy(req, res, { error: 'busy' in b ? b.busy : 'too large' })), () => undefined);
    }));
    const counts = limitConnections(server, { max, perPeer, bodies }, log);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    return { port: (server.address() as AddressInfo).port, counts, served: () => served };
  };

  /** A connection that sends half a request and holds it; resolves once the server has counted it. */
  const hold = async (port: number, from: string, counts: () => { open: number }): Promise<Socket> => {
    const before = counts().open;
    const s = connect({ port, host: '127.0.0.1', localAddress: from });
    held.sockets.push(s);
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

  /** Sends `sent` bytes of a declared `declared`-byte body from `from` and holds the connection: what came back so far. */
  const partial = async (port: number, from: string, sent: number, declared: number) => {
    const s = connect({ port, host: '127.0.0.1', localAddress: from });
    held.sockets.push(s);
    let answer = '';
    s.on('data', (c: Buffer) => (answer += c.toString('latin1')));
    s.on('error', () => undefined);
    await new Promise<void>((ok) => s.once('connect', () => ok()));
    s.write(`POST / HTTP/1.1\r\nhost: x\r\ncontent-length: ${declared}\r\n\r\n`);
    s.write(Buffer.alloc(sent, 0x20));
    return { socket: s, answer: () => answer };
  };
  const until = async (what: () => boolean) => {
    while (!what()) await new Promise((r) => setImmediate(r));
  };

  it('bodies: one address holds its share at most (503 naming the bound), another is read; an abandoned body gives its bytes back', async () => {
    const { port, counts } = await start(10, 10);
    const hog = await partial(port, '127.0.0.1', 100 * 1024, 1024 * 1024);
    await until(() => counts().bodyBytes === 100 * 1024);
    const second = await partial(port, '127.0.0.1', 64 * 1024, 1024 * 1024);
    await until(() => second.answer().includes('\r\n\r\n'));
    expect(second.answer()).toMatch(/^HTTP\/1\.1 503 [^]*retry-after: 1[^]*ESTATE_MAX_BODY_BUFFER_BYTES/i);
    expect(counts()).toMatchObject({ bodyBytes: 100 * 1024, bodiesRefused: 1 });
    const other = await partial(port, '127.0.0.2', 100 * 1024, 100 * 1024);
    await until(() => other.answer().includes('read 102400'));
    expect(counts().bodyBytes).toBe(100 * 1024);
    hog.socket.destroy();
    await until(() => counts().bodyBytes === 0);
    const again = await partial(port, '127.0.0.1', 120 * 1024, 120 * 1024);
    await until(() => again.answer().includes('read 122880'));
    expect(warnings.find((w) => w.peer === '127.0.0.1' && 'max' in w && w.max === 256 * 1024)).toMatchObject({ perPeer: 128 * 1024, refused: 1 });
  });

  it('bodies: past the total, every address waits', async () => {
    const { port, counts } = await start(10, 10, { max: 150 * 1024, perPeer: 100 * 1024 });
    await partial(port, '127.0.0.1', 100 * 1024, 1024 * 1024);
    await until(() => counts().bodyBytes === 100 * 1024);
    const next = await partial(port, '127.0.0.2', 60 * 1024, 1024 * 1024);
    await until(() => next.answer().includes('\r\n\r\n'));
    expect(next.answer()).toMatch(/^HTTP\/1\.1 503 /);
    const small = await partial(port, '127.0.0.3', 10 * 1024, 10 * 1024);
    await until(() => small.answer().includes('read 10240'));
  });
});

describe('peerKey: whose share a connection counts against', () => {
  it('an IPv4 address as it is, an IPv4-mapped one as its IPv4 address', () => {
    expect(peerKey('192.0.2.7')).toBe('192.0.2.7');
    expect(peerKey('::ffff:192.0.2.7')).toBe('192.0.2.7');
    expect(peerKey('::FFFF:127.0.0.1')).toBe('127.0.0.1');
  });
  it('an IPv6 address by its /64, however it is written', () => {
    const key = '2001:db8:1:2::/64';
    for (const a of ['2001:db8:1:2::1', '2001:0db8:0001:0002:ffff:ffff:ffff:ffff', '2001:DB8:1:2:0:0:0:9', '2001:db8:1:2::192.0.2.1']) expect(peerKey(a)).toBe(key);
    expect(peerKey('2001:db8:1:3::1')).toBe('2001:db8:1:3::/64');
    expect(peerKey('fe80::1%eth0')).toBe('fe80:0:0:0::/64');
    expect(peerKey('::1')).toBe('0:0:0:0::/64');
    expect(peerKey(undefined)).toBe('');
  });
});

describe('one IPv6 /64 is one peer', () => {
  /** A stand-in for an accepted socket: what limitConnections touches of it. */
  const fakeSocket = (remoteAddress: string) => {
    const s = Object.assign(new EventEmitter(), { remoteAddress, answer: '', resume: () => s, end: (text: string) => void (s.answer = text), destroy: () => void s.emit('close') });
    return s;
  };

  it('two addresses of one /64 share the per-address bound (and so its body budget); another /64 has its own', () => {
    const server = createNetServer();
    const admitted: string[] = [];
    server.on('connection', (s: { remoteAddress: string }) => void admitted.push(s.remoteAddress));
    limitConnections(server, resolveConnectionLimits({ max: 10, perPeer: 2 }), silentLog);
    const a = fakeSocket('2001:db8:1:2::a');
    const b = fakeSocket('2001:db8:1:2::b');
    const c = fakeSocket('2001:db8:1:2:ffff::1');
    const other = fakeSocket('2001:db8:1:3::1');
    for (const s of [a, b, c, other]) server.emit('connection', s);
    expect(admitted).toEqual(['2001:db8:1:2::a', '2001:db8:1:2::b', '2001:db8:1:3::1']);
    expect(c.answer).toContain('ESTATE_MAX_CONNECTIONS_PER_PEER');
    // A connection of the /64 closing gives its place back.
    a.emit('close');
    const d = fakeSocket('2001:db8:1:2::d');
    server.emit('connection', d);
    expect(admitted).toContain('2001:db8:1:2::d');
  });
});
