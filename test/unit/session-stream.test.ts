/**
 * Estate's own event stream for a session call (src/mcp/session-stream.ts), on a real loopback server: the head, the
 * priming event and a quick answer arrive in order and the stream ends; every event is kept in the session's replay
 * buffer under the stream's id; a reconnect while the call runs is refused while its connection is open and then
 * gets what it missed;
 * a session that ends closes its running call streams without an answer.
 */
import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { CallStream, resumeCallStream } from '#mcp/session-stream';
import { createReplayStore } from '#mcp/sse-replay-store';

const servers: Server[] = [];
afterEach(async () => {
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
});
