/**
 * The connection flood against `estate serve --http`: one client that opens connections and holds them (until the
 * process has no file descriptors left, found by probing: 20,000 idle sockets from one process, after which the server
 * accepted nobody) must not shut everyone else out. Small limits through the environment; the loopback addresses
 * 127.0.0.x stand for different clients. Fails on the code before the bound (every connection is served).
 */
import { request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTempStore, startHttpServer, type HttpServer, type TempStore } from './helpers.ts';

const LIMITS = { ESTATE_MAX_CONNECTIONS: '12', ESTATE_MAX_CONNECTIONS_PER_PEER: '6' };
const META = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };

describe('a connection flood against estate serve --http', { timeout: 60_000 }, () => {
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
    // The served connection may close after the first of them is counted: then the sixth is refused; retry it once.
    if (third.at(-1) === 503) third[5] = (await hold('127.0.0.3')).status;
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
  });
});
