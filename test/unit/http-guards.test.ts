/** Host and Origin checks (DNS rebinding) and the JSON content type, before any MCP code sees a request. */
import { createServer } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { hostAllowed, hostnameOf, isJsonContentType, LOOPBACK_NAMES, originAllowed, readBody, refuseTooLarge } from '#http/guards';

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
