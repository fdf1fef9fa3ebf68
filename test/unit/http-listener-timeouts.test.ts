/**
 * How long a request may take to arrive (the listener's requestTimeout, lowered here): a body that never ends is cut
 * like headers that never end, while an answer (an event stream) lasts as long as it needs. Before, Node's default
 * (300 s) held a connection whose body never came ~308 s (probe F5), against 66 s documented for headers.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { connect } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { silentLog } from '#app/log';
import { startHttpListener, type RunningHttpListener } from '#compose/http-listener';
import { resolveConnectionLimits } from '#http/connection-limits';
import { readBody } from '#http/guards';
import type { StreamableHttp } from '#mcp/streamable-http';

let running: RunningHttpListener | undefined;
afterEach(async () => {
  await running?.close();
  running = undefined;
});

/** A listener whose /mcp opens an event stream on GET and reads the body on POST, with the request bound lowered. */
const start = async () => {
  const streams: ServerResponse[] = [];
  const mcp = {
    handle: async (req: IncomingMessage, res: ServerResponse) => {
      if (req.method === 'GET') {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(': open\n\n');
        streams.push(res);
        return;
      }
      await readBody(req);
      res.end('read');
    },
    sessions: {},
    close: () => undefined,
  } as unknown as StreamableHttp;
  running = await startHttpListener({
    mcp,
    host: '127.0.0.1',
    port: 0,
    allowedHosts: ['127.0.0.1'],
    allowedOrigins: [],
    log: silentLog,
    connections: resolveConnectionLimits({ max: 100 }),
    requestTimeoutMs: 300,
    requestCheckEveryMs: 50,
  });
  return { port: Number(new URL(running.url).port), streams };
};

/** Sends `head` (and whatever part of a body it carries) and nothing more; resolves with what came back once closed. */
const sendAndWait = (port: number, head: string): Promise<string> =>
  new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    let text = '';
    socket.on('data', (c: Buffer) => (text += c.toString('latin1')));
    socket.on('error', () => undefined);
    socket.on('close', () => resolve(text));
    socket.write(head);
  });

describe('the listener bounds how long a request may take to arrive, not how long its answer lasts', () => {
  it.each([
    ['a declared body that never comes', 'Content-Length: 1000\r\n\r\n{"jsonrpc":'],
    ['a chunked body that never ends', 'Transfer-Encoding: chunked\r\n\r\n5\r\n{"jso\r\n'],
  ])('%s: 408 and the connection closed', async (_what, rest) => {
    const { port } = await start();
    const text = await sendAndWait(port, `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n${rest}`);
    expect(text).toMatch(/^HTTP\/1\.1 408 /);
  });

  it('an event stream (GET) outlives the bound: it still carries events after a slow body on another connection was cut', async () => {
    const { port, streams } = await start();
    const stream = connect(port, '127.0.0.1');
    let seen = '';
    const opened = new Promise<void>((resolve) =>
      stream.on('data', (c: Buffer) => {
        seen += c.toString('latin1');
        if (seen.includes(': open')) resolve();
      }),
    );
    stream.write('GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n');
    await opened;
    // Begun after the stream, cut by the bound: by then the stream is older than the bound too.
    const cut = await sendAndWait(port, 'POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 10\r\n\r\n{');
    expect(cut).toMatch(/^HTTP\/1\.1 408 /);
    const later = new Promise<void>((resolve) =>
      stream.on('data', () => {
        if (seen.includes('data: still here')) resolve();
      }),
    );
    streams[0]?.write('data: still here\n\n');
    await later;
    expect(stream.destroyed).toBe(false);
    stream.destroy();
  });
});
