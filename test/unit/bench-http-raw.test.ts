/**
 * The MCP bench's load generator (bench/http-raw.ts): a figure is only as good as the client that produced it, so its
 * parser and its connection pool are held to what node:http's server actually sends.
 */
import { createServer, type Server } from 'node:http';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { parseResponse, RawHttpClient } from '../../bench/http-raw.ts';

const bytes = (s: string): Buffer => Buffer.from(s, 'utf8');

/** Every proper prefix of a response is incomplete. */
const expectEveryPrefixAsksForMore = (whole: Buffer): void => {
  for (let cut = 0; cut < whole.length; cut++) expect(parseResponse(whole.subarray(0, cut))).toBeNull();
};

describe('parseResponse', () => {
  it('waits for the whole head and the whole Content-Length body', () => {
    // 14 bytes in 12 characters: the length counts bytes.
    const full = 'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 14\r\n\r\n{"ok":"héé"}';
    expectEveryPrefixAsksForMore(bytes(full));
    expect(parseResponse(bytes(full))).toEqual({ status: 200, headers: { 'content-type': 'application/json', 'content-length': '14' }, text: '{"ok":"héé"}' });
  });

  it('joins a chunked body, however the chunks were split on the wire', () => {
    const wire = 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nMcp-Session-Id: s1\r\n\r\n5\r\nevent\r\nB\r\n: data: {}\n\r\n0\r\n\r\n';
    expectEveryPrefixAsksForMore(bytes(wire));
    const reply = parseResponse(bytes(wire));
    if (reply === null) throw new Error('the whole response reads as incomplete');
    expect(reply.text).toBe('event: data: {}\n');
    expect(reply.headers['mcp-session-id']).toBe('s1');
  });

  it('refuses what it cannot read instead of guessing', () => {
    expect(() => parseResponse(bytes('HTTP/2 200\r\n\r\n'))).toThrow(/status line/);
    expect(() => parseResponse(bytes('HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n'))).toThrow(/content-length/);
    expect(() => parseResponse(bytes('HTTP/1.1 200 OK\r\n\r\nbody to the end'))).toThrow(/neither/);
    expect(() => parseResponse(Buffer.alloc(70 * 1024, 'a'))).toThrow(/head over/);
  });
});

describe('RawHttpClient against node:http', () => {
  let server: Server | undefined;
  afterEach(() => new Promise<void>((done) => (server ? server.close(() => done()) : done())));

  const listen = async (handler: Parameters<typeof createServer>[1], keepAliveTimeout = 5000): Promise<RawHttpClient> => {
    server = createServer(handler);
    server.keepAliveTimeout = keepAliveTimeout;
    await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
    return new RawHttpClient('127.0.0.1', (server.address() as AddressInfo).port);
  };

  it('posts the body with its headers, reads JSON and streamed answers, and reuses its connections', async () => {
    const sockets = new Set<unknown>();
    const client = await listen((req, res) => {
      sockets.add(req.socket);
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        if (req.headers['x-stream'] === '1') {
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          res.write('data: one\n\n');
          setTimeout(() => res.end(`data: ${body}\n\n`), 5);
        } else {
          res.setHeader('content-type', 'application/json');
          res.end(JSON.stringify({ got: body, name: req.headers['mcp-name'] }));
        }
      });
    });
    const replies = await Promise.all(Array.from({ length: 8 }, (_, i) => client.post('/mcp', { 'mcp-name': `t${i}` }, `b${i}`)));
    expect(replies.map((r) => JSON.parse(r.text))).toEqual(Array.from({ length: 8 }, (_, i) => ({ got: `b${i}`, name: `t${i}` })));
    const streamed = await client.post('/mcp', { 'x-stream': '1' }, 'last');
    expect(streamed.text).toBe('data: one\n\ndata: last\n\n');
    for (let i = 0; i < 20; i++) await client.post('/mcp', {}, 'again');
    expect(sockets.size).toBe(8);
    client.close();
  });

  it('opens a new connection when the server has closed an idle one', async () => {
    let closed: Promise<void> | undefined;
    const sockets = new Set<unknown>();
    const client = await listen((req, res) => {
      sockets.add(req.socket);
      closed ??= new Promise<void>((r) => req.socket.once('close', () => r()));
      res.end('{}');
    }, 50);
    expect((await client.post('/', {}, '1')).status).toBe(200);
    // The server's keep-alive timeout closes the idle connection; no fixed sleep, whatever the machine's load.
    await closed;
    expect((await client.post('/', {}, '2')).text).toBe('{}');
    expect(sockets.size).toBe(2);
    client.close();
  });

  it('reads a body that arrives in many pieces whole, with or without a length', async () => {
    const big = JSON.stringify({ page: 'x'.repeat(3 * 1024 * 1024) });
    const client = await listen((req, res) => {
      if (req.headers['x-chunked'] === '1') {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        for (let at = 0; at < big.length; at += 100_000) res.write(big.slice(at, at + 100_000));
        res.end();
      } else {
        res.setHeader('content-type', 'application/json');
        res.end(big);
      }
    });
    expect((await client.post('/', {}, '')).text).toBe(big);
    expect((await client.post('/', { 'x-chunked': '1' }, '')).text).toBe(big);
    client.close();
  });

  it('waits for a chunked body\'s real end: a piece that only looks like the last chunk, a last chunk cut in two', async () => {
    const raw = createNetServer((socket) => {
      socket.once('data', () => {
        // A data chunk whose bytes end as the last chunk does ("x0\r\n" framed: ...0\r\n\r\n), then the real last chunk in two pieces.
        const pieces = ['HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n4\r\nx0\r\n\r\n', '0\r\n', '\r\n'];
        const next = (): void => {
          const piece = pieces.shift();
          if (piece === undefined) return;
          socket.write(piece);
          setTimeout(next, 20);
        };
        next();
      });
    });
    await new Promise<void>((r) => raw.listen(0, '127.0.0.1', r));
    const client = new RawHttpClient('127.0.0.1', (raw.address() as AddressInfo).port);
    try {
      expect((await client.post('/', {}, '')).text).toBe('x0\r\n');
    } finally {
      client.close();
      await new Promise<void>((r) => raw.close(() => r()));
    }
  });
});
