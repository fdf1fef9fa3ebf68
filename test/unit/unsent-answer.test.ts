/**
 * A whole answer its client does not take (src/http/unsent.ts, `dropWhenNotTaken`): a client that reads nothing of a
 * 32 MiB answer is dropped, its connection closed, once a check finds none of it taken; one that reads slowly gets it
 * whole. Real sockets on loopback; the stall is shortened to 1 s so the test waits for outcomes, not for 30 s.
 */
import { createServer, type Server, type ServerResponse } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { dropWhenNotTaken } from '#http/unsent';

const BODY = Buffer.alloc(32 * 1024 * 1024, 0x61);
/**
 * The check's period here. The slow reader reads for one turn of the loop every 50 ms, some twenty times between two
 * checks (its answer takes several checks to read: the progress check is exercised), so only a stall of the whole
 * event loop longer than this (not a busy CI machine's scheduling) could find it idle.
 */
const STALL_MS = 1000;
let server: Server | undefined;
let client: Socket | undefined;
afterEach(async () => {
  client?.destroy();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
});

/** A server answering BODY to every request, handing each response (and whether it was all sent) to `seen`. */
const serve = async (seen: (res: ServerResponse, sent: { whole: boolean }) => void): Promise<number> => {
  server = createServer((_req, res) => {
    const sent = { whole: false };
    // Every byte handed to the kernel ('finish' and writableFinished say so after a destroy as well).
    res.once('finish', () => (sent.whole = !res.destroyed));
    res.writeHead(200, { 'content-length': String(BODY.length) });
    res.end(BODY);
    dropWhenNotTaken(res, STALL_MS);
    seen(res, sent);
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
};

describe('dropWhenNotTaken', () => {
  it('drops the connection of a client that reads none of its answer', async () => {
    let response: ServerResponse | undefined;
    let sent: { whole: boolean } | undefined;
    const port = await serve((res, s) => ((response = res), (sent = s)));
    client = connect(port, '127.0.0.1');
    client.pause();
    client.write('GET / HTTP/1.1\r\nhost: x\r\n\r\n');
    await expect.poll(() => response?.destroyed, { timeout: 10_000 }).toBe(true);
    expect(sent?.whole).toBe(false);
    // Reading now, the client finds its connection closed part-way through the answer.
    let received = 0;
    const closed = new Promise<void>((resolve) => client?.once('close', () => resolve()));
    client.on('data', (c: Buffer) => (received += c.length));
    client.on('error', () => undefined);
    client.resume();
    await closed;
    expect(received).toBeLessThan(BODY.length);
  });

  it('lets a client that reads slowly take its whole answer', { timeout: 90_000 }, async () => {
    let sent: { whole: boolean } | undefined;
    const port = await serve((_res, s) => (sent = s));
    client = connect(port, '127.0.0.1');
    client.pause();
    let received = 0;
    client.on('data', (c: Buffer) => (received += c.length));
    client.write('GET / HTTP/1.1\r\nhost: x\r\n\r\n');
    // A little at a time: reading for one turn of the loop every 50 ms, some twenty times between two checks.
    const slow = setInterval(() => {
      client?.resume();
      setImmediate(() => client?.pause());
    }, 50);
    try {
      await expect.poll(() => received, { timeout: 60_000, interval: 100 }).toBeGreaterThan(BODY.length);
    } finally {
      clearInterval(slow);
    }
    expect(sent?.whole).toBe(true);
  });
});
