/**
 * The connection flood against `estate serve --http`: one client that opens connections and holds them (until the
 * process has no file descriptors left, found by probing: 20,000 idle sockets from one process, after which the server
 * accepted nobody) must not shut everyone else out. Small limits through the environment; the loopback addresses
 * 127.0.0.x stand for different clients. Fails on the code before the bound (every connection is served).
 */
import { request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeFromManyAddresses } from '../fixtures/loopback-addresses.ts';
import { makeTempStore, startHttpServer, type HttpServer, type TempStore } from './helpers.ts';

const MiB = 1024 * 1024;
const LIMITS = { ESTATE_MAX_CONNECTIONS: '12', ESTATE_MAX_CONNECTIONS_PER_PEER: '6', ESTATE_MAX_BODY_BUFFER_BYTES: String(2 * MiB) };
const META = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };

describeFromManyAddresses('a connection flood against estate serve --http', { timeout: 60_000 }, () => {
  let tmp: TempStore;
  let srv: HttpServer;
  let port: number;
  const held: Socket[] = [];

  beforeAll(async () => {
    tmp = makeTempStore('estate-flood-');
    srv = await startHttpServer(['--demo', '--store', tmp.store], { env: LIMITS });
    port = Number(new URL(srv.url).port);
  });
  afterAll(async () => {
    for (const s of held) s.destroy();
    await srv?.stop();
    tmp?.cleanup();
  });

  /** A keep-alive connection from `from` that asks /healthz and then stays open: the status it got. */
  const hold = (from: string): Promise<{ status: number; text: string }> =>
    new Promise((resolve, reject) => {
      const s = connect({ port, host: '127.0.0.1', localAddress: from });
      held.push(s);
      let text = '';
      s.setEncoding('utf8');
      s.on('error', reject);
      s.on('data', (chunk: string) => {
        text += chunk;
        const status = /^HTTP\/1\.1 (\d{3})/.exec(text)?.[1];
        if (status !== undefined && text.includes('\r\n\r\n')) resolve({ status: Number(status), text });
      });
      s.on('end', () => resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0), text }));
      s.write(`GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`);
    });

  /** One request on a connection of its own from `from`. */
  const send = (from: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<{ status: number; text: string }> =>
    new Promise((resolve, reject) => {
      const payload = body === undefined ? undefined : JSON.stringify(body);
      const req = request(
        { port, host: '127.0.0.1', localAddress: from, method, path, agent: false, headers: { ...(payload ? { 'content-type': 'application/json', accept: 'application/json, text/event-stream' } : {}), ...headers } },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => (text += c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
        },
      );
      req.on('error', reject);
      req.end(payload);
    });

  const list = (from: string) =>
    send(from, 'POST', '/mcp', { jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: META } }, { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/list' });

  it('one address past its bound gets 503 naming it; other addresses are served; past the total, everyone waits', async () => {
    for (let i = 0; i < 6; i++) expect((await hold('127.0.0.1')).status).toBe(200);
    const hog = await hold('127.0.0.1');
    expect(hog.status).toBe(503);
    expect(hog.text).toContain('ESTATE_MAX_CONNECTIONS_PER_PEER');
    expect(hog.text).toContain('too-many-connections');

    // Another client is not held back by the hog.
    const other = await list('127.0.0.2');
    expect(other.status).toBe(200);
    expect(other.text).toContain('fx.rates');

    // Six more held from a third address reach the total (12): the connection just served has closed by the time
    // the last of them is counted (each hold waits for its answer).
    const third: number[] = [];
    for (let i = 0; i < 6; i++) third.push((await hold('127.0.0.3')).status);
    // The served connection may not be closed on the server's side yet: then the sixth is refused (a refused one is
    // not counted); ask again until it has.
    for (let i = 0; third[5] === 503 && i < 100; i++) third[5] = (await hold('127.0.0.3')).status;
    expect(third).toEqual([200, 200, 200, 200, 200, 200]);
    const full = await send('127.0.0.4', 'GET', '/healthz');
    expect(full.status).toBe(503);
    expect(full.text).toContain('ESTATE_MAX_CONNECTIONS)');

    // The hog lets go: others are served again.
    for (const s of held.splice(0, 7)) s.destroy();
    let again = await list('127.0.0.4');
    for (let i = 0; again.status === 503 && i < 50; i++) again = await list('127.0.0.4');
    expect(again.status).toBe(200);

    const metrics = await send('127.0.0.2', 'GET', '/metrics');
    expect(metrics.text).toMatch(/estate_http_connections_refused_total\{reason="peer"\} 1\b/);
    expect(metrics.text).toMatch(/estate_http_connections_refused_total\{reason="total"\} [1-9]/);
    expect(metrics.text).toMatch(/^estate_http_connections \d+/m);
    const warned = srv.logs.seen.filter((l) => l.msg === 'connections refused: one address holds its maximum');
    expect(warned[0]).toMatchObject({ level: 40, reason: 'peer', peer: '127.0.0.1', perPeer: 6 });
    for (const s of held.splice(0)) s.destroy();
  });

  /** Polls `read` (each poll a request) until `done` says so, for at most 10 s; the last value. */
  const poll = async <T>(read: () => Promise<T>, done: (v: T) => boolean): Promise<T> => {
    const until = Date.now() + 10_000;
    let v = await read();
    while (!done(v) && Date.now() < until) v = await read();
    return v;
  };
  const bodyBytes = async () => Number(/^estate_http_body_bytes_reading (\d+)/m.exec((await send('127.0.0.6', 'GET', '/metrics')).text)?.[1] ?? -1);

  it('bodies sent almost whole and held: one address holds its share of the body budget at most; others are read', async () => {
    // Half of the budget from one address (2 MiB in all, six of twelve connections: 1 MiB), 900 KiB of it held.
    const hog = connect({ port, host: '127.0.0.1', localAddress: '127.0.0.5' });
    held.push(hog);
    hog.on('error', () => undefined);
    await new Promise<void>((ok) => hog.once('connect', () => ok()));
    const head = (length: number) =>
      `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\n` +
      `mcp-protocol-version: 2026-07-28\r\nmcp-method: tools/list\r\ncontent-length: ${length}\r\n\r\n`;
    hog.write(head(MiB) + ' '.repeat(900 * 1024));
    expect(await poll(bodyBytes, (n) => n >= 900 * 1024)).toBe(900 * 1024);

    // A second body from the same address is refused before it is held; its answer names the bound.
    const second = await new Promise<string>((resolve) => {
      const s = connect({ port, host: '127.0.0.1', localAddress: '127.0.0.5' });
      held.push(s);
      let answer = '';
      s.on('error', () => undefined);
      s.on('data', (c: Buffer) => {
        answer += c.toString('latin1');
        if (/\r\n\r\n[^]*\}/.test(answer)) resolve(answer);
      });
      s.on('connect', () => s.write(head(MiB) + ' '.repeat(200 * 1024)));
    });
    expect(second).toMatch(/^HTTP\/1\.1 503 [^]*retry-after: 1[^]*ESTATE_MAX_BODY_BUFFER_BYTES/i);

    // Another address is read and served meanwhile.
    const other = await list('127.0.0.6');
    expect(other.status).toBe(200);
    expect(other.text).toContain('fx.rates');

    // The hog goes away: what it held is given back, and its address is read again.
    hog.destroy();
    expect(await poll(bodyBytes, (n) => n === 0)).toBe(0);
    expect((await list('127.0.0.5')).status).toBe(200);
    const metrics = await send('127.0.0.6', 'GET', '/metrics');
    expect(metrics.text).toMatch(/^estate_http_bodies_refused_total 1$/m);
    const warned = srv.logs.seen.find((l) => l.msg === 'request bodies refused: reading them would pass the body budget');
    expect(warned).toMatchObject({ level: 40, peer: '127.0.0.5', max: 2 * MiB, perPeer: MiB, refused: 1 });
  });
});
