/** Host and Origin checks (DNS rebinding) and the JSON content type, before any MCP code sees a request. */
import { createServer } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { budgetedRequests, createBodyBudget, hostAllowed, hostnameOf, isJsonContentType, LOOPBACK_NAMES, originAllowed, readBody, refuseBusy, refuseTooLarge } from '#http/guards';

describe('HTTP guards', () => {
  it('compares Host by name, port-agnostic, IPv6 in brackets', () => {
    expect(hostnameOf('127.0.0.1:8080')).toBe('127.0.0.1');
    expect(hostnameOf('[::1]:8080')).toBe('[::1]');
    expect(hostnameOf('LocalHost')).toBe('localhost');
    expect(hostAllowed('localhost:1234', LOOPBACK_NAMES)).toBe(true);
    expect(hostAllowed('[::1]', LOOPBACK_NAMES)).toBe(true);
    expect(hostAllowed('evil.example', LOOPBACK_NAMES)).toBe(false);
    expect(hostAllowed('localhost.evil.example', LOOPBACK_NAMES)).toBe(false);
    expect(hostAllowed(undefined, LOOPBACK_NAMES)).toBe(false);
  });

  it('lets a request without Origin through; a present Origin must parse and be listed', () => {
    expect(originAllowed(undefined, LOOPBACK_NAMES)).toBe(true);
    expect(originAllowed('http://localhost:3000', LOOPBACK_NAMES)).toBe(true);
    expect(originAllowed('http://[::1]:3000', LOOPBACK_NAMES)).toBe(true);
    expect(originAllowed('https://evil.example', LOOPBACK_NAMES)).toBe(false);
    expect(originAllowed('null', LOOPBACK_NAMES)).toBe(false);
  });

  it('accepts application/json with parameters only', () => {
    expect(isJsonContentType('application/json')).toBe(true);
    expect(isJsonContentType('Application/JSON; charset=utf-8')).toBe(true);
    expect(isJsonContentType('text/plain')).toBe(false);
    expect(isJsonContentType('application/json-seq')).toBe(false);
    expect(isJsonContentType(undefined)).toBe(false);
  });
});

describe('refuseTooLarge: a 413 the client can read, drained up to a bound', () => {
  /** A server whose every POST is refused with a 413 once readBody says it is over `limit`. */
  const serve = async (limit: number, drainLimit: number) => {
    const server = createServer((req, res) => {
      void readBody(req, limit).then((b) => (b.ok ? res.end('ok') : refuseTooLarge(req, res, { error: 'too large' }, {}, { drainLimit })));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    return { server, port: (server.address() as AddressInfo).port };
  };

  /** Writes `total` bytes (declared) in 1 KiB pieces; resolves with what came back and how the connection ended. */
  const post = (port: number, total: number) =>
    new Promise<{ answer: string; sent: number; how: string }>((resolve) => {
      const socket = connect(port, '127.0.0.1');
      let answer = '';
      let sent = 0;
      let how = 'open';
      socket.on('data', (c: Buffer) => (answer += c.toString('latin1')));
      socket.on('error', (e: NodeJS.ErrnoException) => (how = `error ${e.code ?? e.message}`));
      socket.on('end', () => {
        if (how === 'open') how = 'end';
        socket.end();
      });
      socket.on('close', () => resolve({ answer, sent, how }));
      socket.on('connect', () => {
        void (async () => {
          socket.write(`POST / HTTP/1.1\r\nhost: x\r\nconnection: close\r\ncontent-length: ${total}\r\n\r\n`);
          while (sent < total && !socket.destroyed) {
            const piece = Buffer.alloc(Math.min(1024, total - sent), 0x20);
            await new Promise<void>((ok) => socket.write(piece, () => ok()));
            if (!socket.destroyed) sent += piece.length;
            // Let the server's reads keep pace, so a cut is seen before the whole body is in the socket buffers.
            await new Promise((r) => setImmediate(r));
          }
        })();
      });
    });

  it('answers 413 at once, reads the rest of the body, then closes cleanly', async () => {
    const { server, port } = await serve(4096, 1024 * 1024);
    try {
      const r = await post(port, 256 * 1024);
      expect(r.answer).toMatch(/^HTTP\/1\.1 413 [^]*connection: close[^]*\r\n\r\n\{"error":"too large"\}$/i);
      expect(r.sent).toBe(256 * 1024);
      expect(r.how).toBe('end');
    } finally {
      server.close();
    }
  });

  it('past the drain bound the connection is cut hard, the client stops sending', async () => {
    const { server, port } = await serve(4096, 16 * 1024);
    try {
      const r = await post(port, 64 * 1024 * 1024);
      expect(r.answer).toMatch(/^HTTP\/1\.1 413 /);
      expect(r.sent).toBeLessThan(64 * 1024 * 1024);
    } finally {
      server.close();
    }
  });

  it('the bound is exclusive: one byte over is refused, exactly the limit is read', async () => {
    const { server, port } = await serve(10, 1024);
    try {
      const r = await post(port, 11);
      expect(r.answer).toMatch(/^HTTP\/1\.1 413 /);
      const ok = await post(port, 10);
      expect(ok.answer).toMatch(/^HTTP\/1\.1 200 [^]*ok$/);
    } finally {
      server.close();
    }
  });
});

describe('the body budget: bytes of bodies being read at once, in total and per address', () => {
  it('takes up to the total and the peer share, gives back, and counts refusals', () => {
    const b = createBodyBudget({ max: 100, perPeer: 60 });
    expect(b.take('a', 60)).toBe(true);
    expect(b.take('a', 1)).toBe(false);
    expect(b.take('b', 40)).toBe(true);
    expect(b.take('c', 1)).toBe(false);
    expect(b.held()).toBe(100);
    b.give('a', 60);
    expect(b.take('c', 50)).toBe(true);
    expect(b.refused()).toBe(2);
    expect(b.refusal).toContain('ESTATE_MAX_BODY_BUFFER_BYTES');
  });

  it('a listener whose requests carry it: a body past the peer share is answered 503, the next address is read, what a finished or abandoned body held is given back', async () => {
    const budget = createBodyBudget({ max: 256 * 1024, perPeer: 128 * 1024 });
    let read = 0;
    const server = createServer({ IncomingMessage: budgetedRequests(budget) }, (req, res) => {
      void readBody(req).then((b) => {
        if (b.ok) {
          read++;
          return res.end(`read ${b.text.length}`);
        }
        return 'busy' in b ? refuseBusy(req, res, { error: b.busy }) : refuseTooLarge(req, res, { error: 'too large' });
      }, () => undefined); // a client that goes away mid-body: readBody rejects (aborted)
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    const sockets: ReturnType<typeof connect>[] = [];
    /** Sends `sent` of a declared `declared`-byte body from `from` and holds the connection: what came back so far. */
    const partial = async (from: string, sent: number, declared: number) => {
      const s = connect({ port, host: '127.0.0.1', localAddress: from });
      sockets.push(s);
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
    try {
      const hog = await partial('127.0.0.1', 100 * 1024, 1024 * 1024);
      await until(() => budget.held() === 100 * 1024);
      const second = await partial('127.0.0.1', 64 * 1024, 1024 * 1024);
      await until(() => second.answer().includes('\r\n\r\n'));
      expect(second.answer()).toMatch(/^HTTP\/1\.1 503 [^]*retry-after: 1[^]*ESTATE_MAX_BODY_BUFFER_BYTES/i);
      expect(budget.held()).toBe(100 * 1024);
      const other = await partial('127.0.0.2', 100 * 1024, 100 * 1024);
      await until(() => other.answer().includes('read 102400'));
      expect(budget.held()).toBe(100 * 1024);
      hog.socket.destroy();
      await until(() => budget.held() === 0);
      const again = await partial('127.0.0.1', 120 * 1024, 120 * 1024);
      await until(() => again.answer().includes('read 122880'));
      expect(read).toBe(2);
      expect(budget.refused()).toBe(1);
    } finally {
      for (const s of sockets) s.destroy();
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    }
  });
});
