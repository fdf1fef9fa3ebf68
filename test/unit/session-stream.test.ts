/**
 * Estate's own event stream for a session call (src/mcp/session-stream.ts), on a real loopback server: the head, the
 * priming event and a quick answer arrive in order and the stream ends; every event is kept in the session's replay
 * buffer under the stream's id; a reconnect while the call runs is refused while its connection is open and then
 * gets what it missed;
 * a session that ends closes its running call streams without an answer; a client that stays connected but never
 * reads is dropped once it has left MAX_UNSENT_BYTES unread, and gets the rest (the answer included) by reconnecting.
 */
import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { MAX_UNSENT_BYTES } from '#http/unsent';
import { CallStream, resumeCallStream } from '#mcp/session-stream';
import { createReplayStore } from '#mcp/sse-replay-store';

const servers: Server[] = [];
const sockets: Socket[] = [];
afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy();
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
});

/** A server whose every request is handed to `onRequest`; returns its port. */
const serve = async (onRequest: (res: ServerResponse) => void): Promise<number> => {
  const server = createServer((req, res) => {
    req.resume();
    onRequest(res);
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return (server.address() as AddressInfo).port;
};

const get = (port: number) =>
  new Promise<{ res: IncomingMessage; body: Promise<string> }>((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/' }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      resolve({ res, body: new Promise((done) => res.on('end', () => done(text)).on('close', () => done(text))) });
    });
    req.on('error', reject);
    req.end();
  });

const options = (buffer = createReplayStore(), onEnd: () => void = () => undefined) => ({ sessionId: 's-1', buffer, keepAliveMs: 60_000, priming: true, onEnd });

describe('a session call stream', () => {
  it('sends the head, the priming event, a message and the answer in order, keeps each, and ends', async () => {
    const buffer = createReplayStore();
    let ended = 0;
    const stream = new CallStream(options(buffer, () => ended++));
    const port = await serve((res) => {
      stream.open(res);
      stream.send({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 1, progress: 50 } });
      stream.finish({ jsonrpc: '2.0', id: 7, result: { content: [] } });
    });
    const { res, body } = await get(port);
    expect(res.headers['content-type']).toBe('text/event-stream');
    expect(res.headers['mcp-session-id']).toBe('s-1');
    expect(await body).toBe(
      'id: 1\ndata: \n\n' +
        'event: message\nid: 2\ndata: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":50}}\n\n' +
        'event: message\nid: 3\ndata: {"jsonrpc":"2.0","id":7,"result":{"content":[]}}\n\n',
    );
    expect(buffer.streamOf('3')).toBe(stream.streamId);
    expect(buffer.after('1').map((e) => e.id)).toEqual(['2', '3']);
    expect(ended).toBe(1);
  });

  it('a reconnect while the call runs is refused while its connection is open (409), then gets what it missed and the rest', async () => {
    const buffer = createReplayStore();
    const calls = new Map<string, CallStream>();
    const session = { id: 's-1', session: undefined as never, replay: buffer, calls };
    const stream = new CallStream(options(buffer));
    calls.set('c1', stream);
    let firstGone!: Promise<void>;
    let n = 0;
    const port = await serve((res) => {
      if (n++ === 0) {
        firstGone = new Promise((r) => res.once('close', () => r()));
        stream.open(res);
        stream.send({ jsonrpc: '2.0', id: 'q1', method: 'elicitation/create', params: { message: 'Name?' } });
      } else {
        expect(resumeCallStream(session, res, '1')).toBe(true);
        if (n === 3) stream.finish({ jsonrpc: '2.0', id: 7, result: { content: [] } });
      }
    });
    const first = await get(port);
    const refused = await get(port);
    expect(refused.res.statusCode).toBe(409);
    expect(JSON.parse(await refused.body)).toEqual({ jsonrpc: '2.0', error: { code: -32000, message: 'Conflict: Stream already has an active connection' }, id: null });
    first.res.destroy();
    await firstGone;
    const resumed = await get(port);
    expect(resumed.res.statusCode).toBe(200);
    expect(await resumed.body).toBe(
      'event: message\nid: 2\ndata: {"jsonrpc":"2.0","id":"q1","method":"elicitation/create","params":{"message":"Name?"}}\n\n' +
        'event: message\nid: 3\ndata: {"jsonrpc":"2.0","id":7,"result":{"content":[]}}\n\n',
    );
  });

  it('ends without an answer when its session ends, and takes nothing after', async () => {
    const buffer = createReplayStore();
    let ended = 0;
    const stream = new CallStream(options(buffer, () => ended++));
    const port = await serve((res) => {
      stream.open(res);
      stream.close();
      stream.finish({ jsonrpc: '2.0', id: 7, result: { content: [] } });
    });
    const { body } = await get(port);
    expect(await body).toBe('id: 1\ndata: \n\n');
    expect(buffer.after('1')).toEqual([]);
    expect(ended).toBe(1);
  });

  it('writes nothing more to a client that leaves MAX_UNSENT_BYTES unread and drops it if it reads nothing; the call goes on, a reader gets the rest, a reconnect too', async () => {
    const buffer = createReplayStore();
    const calls = new Map<string, CallStream>();
    const session = { id: 's-1', session: undefined as never, replay: buffer, calls };
    const stalled = new CallStream({ ...options(buffer), stallMs: 300 });
    const reading = new CallStream(options(createReplayStore()));
    calls.set('c1', stalled);
    const opened: ServerResponse[] = [];
    let resumed = false;
    const port = await serve((res) => {
      const which = res.req.headers['x-client'];
      if (which === 'stalled') stalled.open(res);
      else if (which === 'reading') reading.open(res);
      else resumed = resumeCallStream(session, res, res.req.headers['last-event-id'] as string);
      opened.push(res);
    });
    // A client that sends its request and never reads a byte.
    const socket = connect(port, '127.0.0.1');
    sockets.push(socket);
    socket.pause();
    socket.write(`POST / HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nX-Client: stalled\r\nContent-Length: 0\r\n\r\n`);
    const reader = await new Promise<IncomingMessage>((resolve) => request({ host: '127.0.0.1', port, path: '/', headers: { 'x-client': 'reading' } }, resolve).end());
    let text = '';
    reader.setEncoding('utf8');
    reader.on('data', (c: string) => (text += c));
    const readerDone = new Promise<void>((r) => reader.on('end', r));
    await expect.poll(() => opened.length, { timeout: 10_000 }).toBe(2);
    const stalledRes = opened.find((r) => r.req.headers['x-client'] === 'stalled') as ServerResponse;
    const readingRes = opened.find((r) => r !== stalledRes) as ServerResponse;

    // Log lines of 8 KiB (a call's bound on one line), 40 MB in all: more than loopback's socket buffers hold.
    const line = (i: number) => ({ jsonrpc: '2.0' as const, method: 'notifications/message', params: { level: 'info', data: `${i}:${'x'.repeat(8 * 1024)}` } });
    let peak = 0;
    let readerPeak = 0;
    for (let i = 0; i < 5000; i++) {
      stalled.send(line(i));
      reading.send(line(i));
      peak = Math.max(peak, stalledRes.writableLength);
      readerPeak = Math.max(readerPeak, readingRes.writableLength);
      if (i % 50 === 0) await new Promise((r) => setImmediate(r)); // let the sockets move
    }
    expect(peak).toBeLessThanOrEqual(MAX_UNSENT_BYTES + 9 * 1024); // the bound plus the one message written past it
    expect(readerPeak).toBeLessThanOrEqual(MAX_UNSENT_BYTES + 9 * 1024);
    // The client that reads is sent the rest as it reads, in order, up to the answer; it is not dropped.
    reading.finish({ jsonrpc: '2.0', id: 8, result: { content: [] } });
    await readerDone;
    const ids = [...text.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));
    expect(ids.every((id, k) => k === 0 || id > (ids[k - 1] as number))).toBe(true);
    expect(text).toContain('"data":"4999:');
    expect(text.endsWith('event: message\nid: 5002\ndata: {"jsonrpc":"2.0","id":8,"result":{"content":[]}}\n\n')).toBe(true);
    // The client that reads nothing is dropped once it has read nothing for stallMs.
    await expect.poll(() => stalledRes.destroyed, { timeout: 10_000 }).toBe(true);
    expect(stalled.connected).toBe(false);

    // Its call goes on: its messages are kept; a reconnect from the oldest one still kept gets the rest and the answer.
    // Ids run 1 (priming), 2..5001 (the lines); the buffer keeps the newest 1 MiB of them.
    let oldest = 5001;
    while (buffer.streamOf(String(oldest - 1)) === stalled.streamId) oldest--;
    expect(oldest).toBeGreaterThan(2);
    const again = new Promise<{ status?: number; body: Promise<string> }>((resolve) =>
      request({ host: '127.0.0.1', port, path: '/', headers: { 'last-event-id': String(oldest) } }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        resolve({ status: res.statusCode, body: new Promise((done) => res.on('end', () => done(body))) });
      }).end(),
    );
    await expect.poll(() => opened.length, { timeout: 10_000 }).toBe(3);
    stalled.send(line(5000));
    stalled.finish({ jsonrpc: '2.0', id: 7, result: { content: [] } });
    const { status, body } = await again;
    expect(resumed).toBe(true);
    expect(status).toBe(200);
    const rest = await body;
    expect(rest).toContain('"data":"5000:');
    expect(rest.endsWith('event: message\nid: 5003\ndata: {"jsonrpc":"2.0","id":7,"result":{"content":[]}}\n\n')).toBe(true);
  }, 60_000);

  it('a client that fell behind and reads again is sent, from the buffer, everything it had not been sent, in order, and the answer', async () => {
    const buffer = createReplayStore();
    const stream = new CallStream(options(buffer));
    let served!: ServerResponse;
    const port = await serve((res) => {
      served = res;
      stream.open(res);
    });
    // A client that stops reading at once, and reads again later.
    const client = await new Promise<IncomingMessage>((resolve) =>
      request({ host: '127.0.0.1', port, path: '/' }, (res) => {
        res.pause();
        resolve(res);
      }).end(),
    );
    const line = (i: number) => ({ jsonrpc: '2.0' as const, method: 'notifications/message', params: { level: 'info', data: `${i}:${'x'.repeat(8 * 1024)}` } });
    let n = 0;
    // Until the connection holds more than the bound unsent (the sockets' buffers full first).
    while (served.writableLength <= MAX_UNSENT_BYTES && n < 20_000) {
      stream.send(line(n++));
      if (n % 50 === 0) await new Promise((r) => setImmediate(r));
    }
    expect(served.writableLength).toBeGreaterThan(MAX_UNSENT_BYTES);
    const held = served.writableLength;
    // Behind: what comes now waits in the buffer (50 lines, ~410 KB: all kept), not in the connection.
    for (let k = 0; k < 50; k++) stream.send(line(n++));
    stream.finish({ jsonrpc: '2.0', id: 7, result: { content: [] } });
    expect(served.writableLength).toBe(held);
    expect(served.destroyed).toBe(false);

    let text = '';
    client.setEncoding('utf8');
    client.on('data', (c: string) => (text += c));
    const ended = new Promise<void>((r) => client.on('end', r));
    client.resume();
    await ended;
    const ids = [...text.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));
    // 1 is the priming event, 2..n+1 the lines, n+2 the answer: every one, once, in order.
    expect(ids).toEqual(Array.from({ length: n + 2 }, (_, k) => k + 1));
    expect(text.endsWith(`event: message\nid: ${n + 2}\ndata: {"jsonrpc":"2.0","id":7,"result":{"content":[]}}\n\n`)).toBe(true);
  }, 60_000);
});
