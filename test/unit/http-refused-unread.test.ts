/**
 * A refusal sent before its request's body was read (refusalBoundedResponse, the listener's one place for it): the answer
 * carries `Connection: close`, at most a bounded part of the body is read, and the connection goes. Before, Node read
 * the rest of a refused body to keep the connection: an unauthenticated client's endless body was swallowed at
 * hundreds of MB a second until the request timed out (probe F3: ~500 MB in 3 s on one connection).
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { readBody, refusalBoundedResponse, type RefusedDrain } from '#http/guards';
import { sendJson } from '#http/send-json';
import { rawPost, type RawPostOutcome } from '../fixtures/raw-post.ts';

const KiB = 1024;
const MiB = 1024 * KiB;
/** What a client writes at most before a test gives up waiting for the server to close: far past any bound here. */
const CAP = 16 * MiB;

const servers: { close(): void; closeAllConnections(): void }[] = [];
afterEach(() => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    s.close();
  }
});

/** A server that runs `route` behind refusalBoundedResponse, counting what it read from each connection. */
const serve = async (route: (req: IncomingMessage, res: ServerResponse) => void, o: RefusedDrain = {}) => {
  const read: number[] = [];
  const server = createServer({ ServerResponse: refusalBoundedResponse(o) }, (req, res) => route(req, res));
  // As the listener keeps idle connections (src/compose/http-listener.ts): nothing here closes them but the fix.
  server.keepAliveTimeout = 65_000;
  server.on('connection', (s: Socket) => s.once('close', () => read.push(s.bytesRead)));
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { port: (server.address() as AddressInfo).port, read };
};

/** A POST's head, then `body` at once, or an endless chunked body until the connection closes or CAP is written. */
const post = (port: number, path: string, body?: string, headers = 'Authorization: Bearer nope\r\n') => rawPost({ port, path, headers, cap: CAP, ...(body !== undefined ? { body } : {}) });

const refuse401 = (_req: IncomingMessage, res: ServerResponse) => sendJson(res, 401, { error: 'Unauthorized: a bearer token is required' });

describe('a refusal before the body is read closes the connection', () => {
  it('a 401 to an endless chunked body: Connection: close, at most the bound read, then the connection is cut', async () => {
    const { port, read } = await serve(refuse401, { drainLimit: 64 * KiB });
    const out = await post(port, '/mcp');
    expect(out.answer).toMatch(/^HTTP\/1\.1 401 /);
    expect(out.answer.toLowerCase()).toContain('connection: close');
    expect(out.answer).toContain('a bearer token is required');
    expect(out.closed).toBe(true);
    expect(out.written).toBeLessThan(CAP);
    await expect.poll(() => read.length).toBe(1);
    // The drain bound, a chunk in flight and Node's read buffer: far below what the client would have sent.
    expect(read[0]).toBeLessThan(MiB);
  });

  it('a client that reads its answer only after the cut still gets it: the connection ends, then goes', async () => {
    let cutSocket: Socket | undefined;
    const server = await serve((req, res) => {
      cutSocket = req.socket;
      refuse401(req, res);
      // A grace far longer than the test: the client's late read must not race the connection's going.
    }, { drainLimit: 64 * KiB, cutGraceMs: 60_000 });
    const out = await new Promise<{ answer: string; error?: string }>((resolve) => {
      const socket = connect(server.port, '127.0.0.1');
      let answer = '';
      let error: string | undefined;
      // Reads nothing until the server has cut the connection for the body's bound (a client short of CPU, or busy
      // writing its body), then reads what is there. Destroyed at once, the cut reset the connection (the client's
      // body unread on the server's side), and the client's pending write failed before it read: the answer was lost.
      const cut = setInterval(() => {
        if (cutSocket?.writableEnded !== true) return;
        clearInterval(cut);
        socket.resume();
      }, 5);
      socket.on('data', (c: Buffer) => {
        answer += c.toString('latin1');
        // The whole answer is in: done (the server would hold the connection for its grace).
        if (answer.includes('a bearer token is required')) socket.destroy();
      });
      socket.on('error', (e: NodeJS.ErrnoException) => (error = e.code));
      socket.on('close', () => {
        clearInterval(cut);
        resolve({ answer, ...(error ? { error } : {}) });
      });
      socket.on('connect', () => {
        socket.pause();
        socket.write(`POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: ${2 * MiB}\r\n\r\n`);
        socket.write(Buffer.alloc(2 * MiB, 'x'));
      });
    });
    expect(out.answer).toMatch(/^HTTP\/1\.1 401 /);
    expect(out.answer).toContain('a bearer token is required');
  });

  it('an answer written without writeHead, and any status from 400 up, goes the same way (404, 405)', async () => {
    for (const status of [404, 405]) {
      const { port, read } = await serve(
        (_req, res) => {
          res.statusCode = status;
          res.end('refused');
        },
        { drainLimit: 64 * KiB },
      );
      const out = await post(port, '/nope');
      expect(out.answer).toMatch(new RegExp(`^HTTP/1\\.1 ${status} `));
      expect(out.closed).toBe(true);
      await expect.poll(() => read.length).toBe(1);
      expect(read[0]).toBeLessThan(MiB);
    }
  });

  it('a 200 from a route that reads no body (/healthz) goes the same way: an endless body is not swallowed', async () => {
    // Before, only answers from 400 up were bounded: Node read this body to its end to keep the connection (until the
    // request timeout, 66 s), at loopback speed.
    const { port, read } = await serve((_req, res) => sendJson(res, 200, { status: 'ok' }), { drainLimit: 64 * KiB });
    const out = await post(port, '/healthz', undefined, '');
    expect(out.answer).toMatch(/^HTTP\/1\.1 200 /);
    expect(out.answer.toLowerCase()).toContain('connection: close');
    expect(out.closed).toBe(true);
    expect(out.written).toBeLessThan(CAP);
    await expect.poll(() => read.length).toBe(1);
    expect(read[0]).toBeLessThan(MiB);
  });

  it('a body that stops coming is given up at the time bound', { timeout: 10_000 }, async () => {
    const { port } = await serve(refuse401, { timeoutMs: 100 });
    const out = await new Promise<RawPostOutcome>((resolve) => {
      const socket = connect(port, '127.0.0.1');
      let answer = '';
      socket.on('data', (c: Buffer) => (answer += c.toString('latin1')));
      socket.on('error', () => undefined);
      socket.on('close', () => resolve({ answer, written: 0, closed: true }));
      socket.write('POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"jsonrpc"');
    });
    expect(out.answer).toMatch(/^HTTP\/1\.1 401 /);
    expect(out.closed).toBe(true);
  });

  it('a small body sent whole still gets its whole answer, and the connection is not kept', async () => {
    const { port } = await serve(refuse401);
    const out = await post(port, '/mcp', '{"jsonrpc":"2.0","id":1,"method":"tools/list"}');
    expect(out.answer).toMatch(/^HTTP\/1\.1 401 /);
    expect(out.answer.toLowerCase()).toContain('connection: close');
    expect(out.answer.endsWith('{"error":"Unauthorized: a bearer token is required"}')).toBe(true);
    expect(out.closed).toBe(true);
  });

  it('a refusal after its route read the body keeps the connection (keep-alive as before)', async () => {
    const { port } = await serve((req, res) => void readBody(req).then(() => sendJson(res, 400, { error: 'bad' })));
    const socket = connect(port, '127.0.0.1');
    const answer = await new Promise<string>((resolve) => {
      let text = '';
      socket.on('data', (c: Buffer) => {
        text += c.toString('latin1');
        if (text.endsWith('{"error":"bad"}')) resolve(text);
      });
      socket.write('POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}');
    });
    expect(answer).toMatch(/^HTTP\/1\.1 400 /);
    expect(answer.toLowerCase()).toContain('connection: keep-alive');
    expect(socket.destroyed).toBe(false);
    socket.destroy();
  });
});
