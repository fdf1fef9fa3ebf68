/**
 * How fast an HTTP upstream's event streams are read (src/upstream/event-pace.ts): the pace's arithmetic on a clock
 * of the test's own, and the upstream fetch (src/upstream/http-fetch.ts) against a real node:http server that sends
 * lines as fast as its socket takes them. With the clock stopped, a paced stream is read a burst of lines and then
 * (almost) no further: the server must come to rest held back by its socket, never reaching its end; with
 * the pace at its default and time moving, the same stream is read whole.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { EndpointPaces, LinePace, lineEnds } from '#upstream/event-pace';
import { createUpstreamFetch } from '#upstream/http-fetch';
import { cameToRest, flood, type Flood } from '../fixtures/upstream/route-server.ts';

const NOTE = '{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"working"}}';
/**
 * Events that hold only a comment: 48 MiB of them (33 million events) to flood with, far past what loopback's socket
 * buffers take while nobody reads; 8 MiB (`/small-flood`) to read whole.
 */
const FLOOD_BYTES = 48 * 1024 * 1024;
const SMALL_FLOOD_BYTES = 8 * 1024 * 1024;
const EMPTY_EVENTS = Buffer.from(':\n\n'.repeat(21_845)); // 64 KiB less one byte
const floods: Flood[] = [];

let server: Server;
let base = '';
beforeAll(async () => {
  server = createServer((req, res) => {
    req.resume();
    if (req.url === '/many-primings') {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      return void res.end(`${':\n\n'.repeat(100)}data: {"jsonrpc":"2.0","id":7,"result":{}}\n\n`);
    }
    if (req.url === '/flood?trickle') {
      // A call that streams a little at a time: a log line (handed over as a stream), five more 20 ms apart, its answer.
      // At the flood's endpoint (a pace is per origin and path), as another tool of the same upstream would be.
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      let sent = 0;
      const more = (): void => {
        if (sent++ < 6) return void (res.write(`data: ${NOTE}\n\n`), setTimeout(more, 20));
        res.end('data: {"jsonrpc":"2.0","id":7,"result":{}}\n\n');
      };
      return more();
    }
    // A log line (so a POST's stream is handed over as a stream), then the flood.
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(`data: ${NOTE}\n\n`);
    floods.push(flood(res, EMPTY_EVENTS, req.url === '/small-flood' ? SMALL_FLOOD_BYTES : FLOOD_BYTES));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

const post = (f: typeof fetch, path: string) =>
  f(new URL(`${base}${path}`), { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"jsonrpc":"2.0","id":7,"method":"tools/call"}' });
const get = (f: typeof fetch, path: string) => f(new URL(`${base}${path}`), { method: 'GET', headers: { accept: 'text/event-stream' } });

/** Read a body as fast as it comes; `read.bytes` says how far. */
const drain = (r: Response) => {
  const read = { bytes: 0, done: false };
  const reader = (r.body as ReadableStream<Uint8Array>).getReader();
  const all = (async () => {
    for (let c = await reader.read(); !c.done; c = await reader.read()) read.bytes += c.value.byteLength;
    read.done = true;
  })();
  return { read, all, cancel: () => reader.cancel() };
};

describe('the pace of an upstream event stream', () => {
  it('counts the lines a chunk ends, whatever ends them', () => {
    expect(lineEnds(Buffer.from('a\nb\nc'))).toBe(2);
    expect(lineEnds(Buffer.from('a\r\nb\r\n\r\n'))).toBe(3);
    expect(lineEnds(Buffer.from('a\rb\r\r'))).toBe(3);
    expect(lineEnds(Buffer.from('no line end'))).toBe(0);
  });

  it('lets a tenth of a second of lines through at once, then makes the reader wait what it took past that, and refills with time', () => {
    let now = 0;
    const pace = new LinePace(1000, () => now);
    expect(pace.burst).toBe(100);
    expect(pace.take(60)).toBe(0);
    expect(pace.take(40)).toBe(0);
    expect(pace.take(500)).toBe(500); // 500 lines past the burst: half a second
    now = 500;
    expect(pace.take(0)).toBe(0);
    expect(pace.rested).toBe(false);
    now = 600;
    expect(pace.rested).toBe(true);
    now = 5000;
    expect(pace.take(100)).toBe(0); // never more than the burst saved up, however long it rested
    expect(pace.take(1)).toBe(1);
  });

  it('is shared fairly by the streams of one upstream endpoint, and separate between endpoints', () => {
    let now = 0;
    const paces = new EndpointPaces({ linesPerSecond: 1000, now: () => now });
    const flood = paces.stream('http://a/mcp');
    expect(flood.take(100)).toBe(0); // alone: the whole rate, a burst of 100
    expect(flood.take(400)).toBe(400); // in debt for 0.4 s
    // Another stream of the same upstream is not made to wait for that debt: within its share (half the rate now, a
    // burst of 50) it reads on at once; past it, it waits for its own share to pay (5 lines at 500 a second).
    const quiet = paces.stream('http://a/mcp');
    expect(quiet.take(3)).toBe(0);
    expect(quiet.take(47)).toBe(0);
    expect(quiet.take(5)).toBe(10);
    // The flood waits what the endpoint still owes, not its own half's: 555 lines taken, 400 paid by now, and its 100.
    now = 400;
    expect(flood.take(100)).toBe(155);
    // A second flood joins: its own third would make it wait 2.9 s, the endpoint has paid for all but 1,155 ms of what
    // the three took (1,655 lines: its rate and one burst by then). Whoever takes, the endpoint's rate holds.
    expect(paces.stream('http://a/mcp').take(1000)).toBe(1155);
    // Another endpoint has a pace of its own.
    expect(paces.stream('http://b/mcp').take(100)).toBe(0);
    // Streams that paid and read nothing for a second, or ended, no longer count: the flood has the whole rate again.
    quiet.close();
    now = 3000;
    expect(flood.take(100)).toBe(0);
    expect(flood.take(10)).toBe(10);
  });

  it('forgets an endpoint only once none of its streams is open: an open one keeps sharing with the next', () => {
    let now = 0;
    const paces = new EndpointPaces({ linesPerSecond: 1000, now: () => now });
    const open = paces.stream('http://quiet/mcp');
    expect(open.take(10)).toBe(0);
    now = 5000; // paid for long ago: its endpoint's bucket is full again, and its stream is still open
    // 300 other upstreams stream and end: past 256 endpoints the map forgets those with no stream open.
    for (let i = 0; i < 300; i++) {
      const s = paces.stream(`http://u${i}/mcp`);
      s.take(1);
      s.close();
    }
    expect(paces.reading('http://u0/mcp')).toBe(0);
    // The quiet upstream's pace is still the one its open stream holds: a new stream of it shares that pace, so the two
    // floods together are read at the endpoint's rate (a second pace beside the first would let each have all of it).
    expect(open.take(1000)).toBe(900);
    expect(paces.stream('http://quiet/mcp').take(1000)).toBe(1900);
    expect(paces.reading('http://quiet/mcp')).toBe(2);
  });

  it('holds a flooding stream back with the clock stopped: the upstream comes to rest far short of its end (a POST stream)', async () => {
    const paced: number[] = [];
    const stopped = createUpstreamFetch(undefined, undefined, undefined, { paces: new EndpointPaces({ linesPerSecond: 10_000, now: () => 0 }), onPaced: (ms) => paced.push(ms) });
    const r = await post(stopped, '/flood');
    expect(r.headers.get('content-type')).toBe('text/event-stream');
    const body = drain(r);
    const f = floods.at(-1) as Flood;
    await cameToRest(f);
    expect(f.ended).toBe(false);
    expect(paced.length).toBeGreaterThan(0);
    // A burst of lines (1,000: ~1.5 KiB of these events), and the chunks read before each wait began.
    expect(body.read.bytes).toBeLessThan(2 * 1024 * 1024);
    await body.cancel();
  });

  it('reads another stream of the same upstream at once while a flood is held back: the flood owes its own debt', async () => {
    const paces = new EndpointPaces({ linesPerSecond: 10_000, now: () => 0 });
    const stopped = createUpstreamFetch(undefined, undefined, undefined, { paces });
    const flooding = drain(await post(stopped, '/flood'));
    const f = floods.at(-1) as Flood;
    await cameToRest(f);
    expect(f.ended).toBe(false);
    // With one pace for the endpoint, each of this stream's chunks would wait what the flood took (over 4 s a chunk on
    // the stopped clock: some 20 s in all); with its own share it is read whole in the ~100 ms it takes to send.
    const trickle = await post(stopped, '/flood?trickle');
    const late = new Promise<string>((resolve) => setTimeout(() => resolve('still held back after 10 s'), 10_000).unref());
    expect(await Promise.race([trickle.text(), late])).toBe(`${`data: ${NOTE}\n\n`.repeat(6)}data: {"jsonrpc":"2.0","id":7,"result":{}}\n\n`);
    expect(f.ended).toBe(false);
    // Ended, the trickle no longer takes a share (on this stopped clock it would count for ever otherwise); cancelled,
    // neither does the flood.
    const endpoint = `${base}/flood`;
    await vi.waitFor(() => expect(paces.reading(endpoint)).toBe(1));
    await flooding.cancel();
    await vi.waitFor(() => expect(paces.reading(endpoint)).toBe(0));
  });

  it('holds the standalone GET stream back the same way', async () => {
    const paces = new EndpointPaces({ linesPerSecond: 10_000, now: () => 0 });
    const stopped = createUpstreamFetch(undefined, undefined, undefined, { paces });
    const r = await get(stopped, '/flood-get');
    const body = drain(r);
    const f = floods.at(-1) as Flood;
    await cameToRest(f);
    expect(f.ended).toBe(false);
    expect(body.read.bytes).toBeLessThan(2 * 1024 * 1024);
    expect(paces.reading(`${base}/flood-get`)).toBe(1);
    await body.cancel();
    await vi.waitFor(() => expect(paces.reading(`${base}/flood-get`)).toBe(0));
  });

  it('reads the same stream whole at a pace whose clock moves: nothing is dropped, every byte comes', async () => {
    const paces = new EndpointPaces({ linesPerSecond: 100_000_000 });
    const moving = createUpstreamFetch(undefined, undefined, undefined, { paces });
    for (const read of [post, get]) {
      const r = await read(moving, '/small-flood');
      const body = drain(r);
      await body.all;
      expect(body.read.bytes).toBe(Buffer.byteLength(`data: ${NOTE}\n\n`) + Math.ceil(SMALL_FLOOD_BYTES / EMPTY_EVENTS.length) * EMPTY_EVENTS.length);
      expect(paces.reading(`${base}/small-flood`)).toBe(0); // ended: no longer reading
    }
  });

  it('hands a stream of many events without data over as a stream rather than searching them one by one', async () => {
    const r = await post(createUpstreamFetch(undefined, 60_000), '/many-primings');
    expect(r.headers.get('content-type')).toBe('text/event-stream');
    expect(await r.text()).toBe(`${':\n\n'.repeat(100)}data: {"jsonrpc":"2.0","id":7,"result":{}}\n\n`);
  });
});
