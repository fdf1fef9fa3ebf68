/**
 * The console's change stream (`GET /console/events`) against a viewer that never reads: it must not make this
 * process hold every update for it. Driven by a fake reader (only `onUpdate` and `position` are used) so updates can
 * be made as fast and as large as a bulk publish makes them; the viewers are real sockets on a real server.
 */
import { createServer, request, type ServerResponse } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import type { CatalogueReader, CatalogueUpdate } from '#app/catalogue-reader';
import { createLiveStreams } from '#console/live';
import { MAX_UNSENT_BYTES } from '#http/unsent';
import { useListenerTeardown } from '../fixtures/listener-teardown.ts';

const held = useListenerTeardown();

describe('console change stream', () => {
  it('drops a viewer that leaves more than MAX_UNSENT_BYTES unread; a viewer that reads keeps its stream', async () => {
    let emit!: (u: CatalogueUpdate) => void;
    const reader = { position: '1', onUpdate: (l: (u: CatalogueUpdate) => void) => ((emit = l), () => undefined) } as unknown as CatalogueReader;
    const live = createLiveStreams(reader, 8);
    const opened: ServerResponse[] = [];
    const server = (held.server = createServer((req, res) => {
      opened.push(res);
      live.open(req, res);
    }));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const { port } = server.address() as AddressInfo;

    // A viewer that sends its request and never reads a byte.
    const stalled = connect(port, '127.0.0.1');
    held.sockets.push(stalled);
    stalled.pause();
    stalled.write(`GET /console/events HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nX-Viewer: stalled\r\n\r\n`);
    // A viewer that reads.
    let received = 0;
    const reading = new Promise<void>((resolve) => {
      request(`http://127.0.0.1:${port}/console/events`, (res) => {
        res.on('data', (c: Buffer) => (received += c.length));
        resolve();
      }).end();
    });
    await reading;
    await expect.poll(() => opened.length, { timeout: 10_000 }).toBe(2);
    const stalledRes = opened.find((r) => r.req.headers['x-viewer'] === 'stalled') as ServerResponse;
    expect(stalledRes).toBeDefined();
    const readerRes = opened.find((r) => r !== stalledRes) as ServerResponse;

    // 50 tool names of 128 characters an update: ~6.6 KB each, 40 MB in all (more than loopback's socket buffers hold).
    const tools = Array.from({ length: 50 }, (_, i) => `t${i}.${'x'.repeat(124)}`);
    let peak = 0;
    for (let i = 0; i < 6000; i++) {
      emit({ tools, position: String(i + 2) } as CatalogueUpdate);
      peak = Math.max(peak, stalledRes.writableLength);
      if (i % 100 === 0) {
        // Let the sockets move, and the reading viewer read what it was sent before more comes: ~660 KB per 100
        // updates, and on a busy machine one turn of the loop did not always carry that much over loopback, so its
        // unsent bytes crept past the bound too (CI, once). The stalled viewer reads nothing, whatever the pace.
        await new Promise((r) => setImmediate(r));
        await expect.poll(() => readerRes.destroyed || readerRes.writableLength < MAX_UNSENT_BYTES / 2, { timeout: 10_000, interval: 1 }).toBe(true);
      }
    }
    expect(stalledRes.destroyed).toBe(true);
    expect(peak).toBeLessThanOrEqual(MAX_UNSENT_BYTES + 8 * 1024); // the bound plus the one update written past it
    expect(readerRes.destroyed).toBe(false);
    await expect.poll(() => received, { timeout: 10_000 }).toBeGreaterThan(10 * 1024 * 1024);
    live.close();
  }, 60_000);

  it('bounds the streams one viewer holds, so one viewer cannot take them all from the others', async () => {
    const reader = { position: '1', onUpdate: () => () => undefined } as unknown as CatalogueReader;
    const live = createLiveStreams(reader, 32);
    const server = (held.server = createServer((req, res) => live.open(req, res, undefined, String(req.headers['x-viewer']))));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const { port } = server.address() as AddressInfo;
    const open = (viewer: string): Promise<number> =>
      new Promise((resolve) => {
        const req = request(`http://127.0.0.1:${port}/console/events`, { headers: { 'x-viewer': viewer } }, (res) => resolve(res.statusCode ?? 0));
        req.on('error', () => resolve(0));
        req.end();
      });
    // 32 streams in all, 4 a viewer (streamsPerViewer): the intern's fifth is refused; the admin still gets one.
    const interns = await Promise.all(Array.from({ length: 5 }, () => open('intern')));
    expect(interns.filter((s) => s === 200)).toHaveLength(4);
    expect(interns.filter((s) => s === 429)).toHaveLength(1);
    expect(await open('admin')).toBe(200);
    live.close();
  });
});
