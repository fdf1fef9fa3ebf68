/**
 * `boundedFetch` (estate/client) against a real local node:http server: the global fetch, bounded. A body read whole
 * is cut past maxMessageBytes (or refused on its Content-Length before a byte is read), one under it passes byte for
 * byte; an event stream is bounded per event, not in all, and passes byte for byte (whatever its line ends); one event
 * past the bound cuts the stream, which fails, or (a POST's stream) ends with a JSON-RPC error for its request. Where a
 * response is cut, the server sees its connection close long before it has written what it meant to. A GET event
 * stream cut by the bound is opened again only after a wait that doubles with each cut in a row (on a test clock).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { systemTimer, type Timer } from '#app/ports';
import { boundedFetchWith } from '#lib/bounded-fetch';
import { boundedFetch, DEFAULT_MAX_MESSAGE_BYTES, DEFAULT_MAX_REOPEN_DELAY_MS, MessageTooLargeError } from '#lib/client';
import { rejection } from '../fixtures/rejection.ts';

const KiB = 1024;
const MiB = 1024 * KiB;
const LIMIT = 64 * KiB;
/** What a hostile response means to send: far past anything read here. */
const PLANNED = 256 * MiB;
/** What a cut response may have had written at most: the bound, and what the sockets' buffers take on loopback. */
const SAFE = 32 * MiB;

const servers: Server[] = [];
afterEach(() => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    s.close();
  }
});

/** How a response went: bytes written, and whether its connection closed before it ended. */
interface Written {
  bytes: number;
  /** Resolves when the response closed: `cut` if its connection went before it ended. */
  closed: Promise<{ cut: boolean; bytes: number }>;
}

/**
 * Writes `head`, then `unit` again and again (as fast as the socket takes them, never faster) until `planned` bytes,
 * then `tail`; stops when the connection goes.
 */
const pour = (res: ServerResponse, head: Buffer | string, unit: Buffer | string, planned: number, tail: Buffer | string = ''): Written => {
  const w: Written = { bytes: 0, closed: Promise.resolve({ cut: false, bytes: 0 }) };
  w.closed = new Promise((resolve) => res.on('close', () => resolve({ cut: !res.writableFinished, bytes: w.bytes })));
  const size = (b: Buffer | string) => (typeof b === 'string' ? Buffer.byteLength(b) : b.length);
  w.bytes += size(head);
  res.write(head);
  const more = (): void => {
    while (w.bytes < planned && !res.destroyed) {
      w.bytes += size(unit);
      if (!res.write(unit)) return void res.once('drain', more);
    }
    if (!res.destroyed) res.end(tail);
  };
  more();
  return w;
};

/** A server whose one route answers every request; what it wrote, per request, in `responses`. */
const serve = async (route: (req: IncomingMessage, res: ServerResponse, body: string) => Written | void) => {
  const responses: Written[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const w = route(req, res, Buffer.concat(chunks).toString('utf8'));
      if (w) responses.push(w);
    });
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`, responses };
};

/** Every byte of a response's body, or what it failed with (and the bytes before). */
const drain = async (r: Response): Promise<{ bytes: Buffer; error?: unknown }> => {
  const chunks: Uint8Array[] = [];
  const reader = r.body!.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return { bytes: Buffer.concat(chunks) };
      chunks.push(value);
    }
  } catch (error) {
    return { bytes: Buffer.concat(chunks), error };
  }
};

/** Bytes that are not all alike (a compressing layer, or a slip by one, would show). */
const noise = (n: number): Buffer => Buffer.from(Array.from({ length: n }, (_, i) => 0x21 + ((i * 7919) % 90)));

describe('boundedFetch: a body read whole', () => {
  it('a JSON body past maxMessageBytes is cut: the body fails with a MessageTooLargeError naming the bound and the URL, and the connection goes', async () => {
    const { url, responses } = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      return pour(res, '{"jsonrpc":"2.0","id":1,"result":{"tools":[', '{"name":"t","inputSchema":{"type":"object"}},'.repeat(100), PLANNED, ']}}');
    });
    const r = await boundedFetch({ maxMessageBytes: LIMIT })(`${url}?token=secret`, { method: 'POST', body: '{}' });
    expect(r.status).toBe(200);
    const error = await rejection(r.json());
    expect(error).toBeInstanceOf(MessageTooLargeError);
    expect(error).toMatchObject({ limit: LIMIT, where: 'body', url: `POST ${url}` });
    expect((error as MessageTooLargeError).size).toBeGreaterThan(LIMIT);
    expect((error as Error).message).toMatch(
      new RegExp(`^response refused: a body of more than maxMessageBytes \\(65536\\) bytes \\(POST ${url.replace(/[.]/g, '\\.')}\\): cut after \\d+ bytes, the connection closed$`),
    );
    expect((error as Error).message).not.toContain('secret');
    const sent = await responses[0]!.closed;
    expect(sent.cut).toBe(true);
    expect(sent.bytes).toBeLessThan(SAFE);
  });

  it('a body of exactly maxMessageBytes, and one under it, pass byte for byte', async () => {
    const bodies = [noise(LIMIT), noise(LIMIT - 1), Buffer.alloc(0)];
    let n = 0;
    const { url } = await serve((_req, res) => {
      const body = bodies[n++]!;
      // The first with its Content-Length, the others chunked.
      res.writeHead(200, { 'content-type': 'application/json', ...(n === 1 ? { 'content-length': String(body.length) } : {}) });
      res.end(body);
    });
    const fetch = boundedFetch({ maxMessageBytes: LIMIT });
    for (const body of bodies) {
      const r = await fetch(url, { method: 'POST', body: '{}' });
      expect(Buffer.from(await r.arrayBuffer()).equals(body)).toBe(true);
    }
  });

  it('a Content-Length past maxMessageBytes is refused before a byte of the body is read: fetch itself fails, the connection goes', async () => {
    // The head only: the body is never sent, so a fetch that waited for it would never end.
    const { url, responses } = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(LIMIT + 1) });
      res.flushHeaders();
      return { bytes: 0, closed: new Promise((resolve) => res.on('close', () => resolve({ cut: !res.writableFinished, bytes: 0 }))) };
    });
    const error = await rejection(boundedFetch({ maxMessageBytes: LIMIT })(url, { method: 'POST', body: '{}' }));
    expect(error).toBeInstanceOf(MessageTooLargeError);
    expect(error).toMatchObject({ limit: LIMIT, size: LIMIT + 1, where: 'content-length' });
    expect((error as Error).message).toBe(`response refused: Content-Length ${LIMIT + 1} is more than maxMessageBytes (${LIMIT}) bytes (POST ${url}); nothing of it read, the connection closed`);
    expect(await responses[0]!.closed).toMatchObject({ cut: true });
  });

  it('an encoded body is bounded by its decoded bytes: a small gzip body that decodes past the bound is cut', async () => {
    const bomb = gzipSync(Buffer.alloc(64 * MiB));
    expect(bomb.length).toBeLessThan(LIMIT);
    const { url } = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip', 'content-length': String(bomb.length) });
      res.end(bomb);
    });
    const error = await rejection(boundedFetch({ maxMessageBytes: LIMIT })(url).then((r) => r.arrayBuffer()));
    expect(error).toMatchObject({ name: 'MessageTooLargeError', where: 'body', url: `GET ${url}` });
  });

  it('an error page is bounded too', async () => {
    const { url, responses } = await serve((_req, res) => {
      res.writeHead(500, { 'content-type': 'text/html' });
      return pour(res, '<html>', 'x'.repeat(16 * KiB), PLANNED);
    });
    const r = await boundedFetch({ maxMessageBytes: LIMIT })(url, { method: 'POST', body: '{}' });
    expect(r.status).toBe(500);
    expect(await rejection(r.text())).toBeInstanceOf(MessageTooLargeError);
    expect((await responses[0]!.closed).bytes).toBeLessThan(SAFE);
  });

  it('refuses a bound that is not a positive integer; the default is 16 MiB', () => {
    expect(DEFAULT_MAX_MESSAGE_BYTES).toBe(16 * MiB);
    for (const bad of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() => boundedFetch({ maxMessageBytes: bad })).toThrow(`maxMessageBytes must be an integer >= 1, got ${String(bad)}`);
    }
  });
});

describe('boundedFetch: an event stream, per event', () => {
  const sse = { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' };

  it('events each under the bound pass byte for byte, however many (far past the bound in all), whatever their line ends', async () => {
    // Events of just under the bound, with every line end SSE allows, comments and ids, and one of exactly the bound.
    const event = (i: number): string => {
      const ends = ['\n', '\r\n', '\r'] as const;
      const eol = ends[i % 3]!;
      const head = `id: ${i}${eol}: a comment${eol}data: `;
      const fill = (n: number) => 'x'.repeat(n);
      // The event: head, data, the line's end, the empty line's end (all of it, a CRLF's LF too, counted in the event).
      const size = i === 6 ? LIMIT : LIMIT - 1 - (i % 5) * 100;
      return `${head}${fill(size - head.length - 2 * eol.length)}${eol}${eol}`;
    };
    const events = Array.from({ length: 200 }, (_, i) => event(i));
    expect(events[6]!.length).toBe(LIMIT);
    const all = Buffer.from(events.join(''));
    expect(all.length).toBeGreaterThan(150 * LIMIT);
    const { url } = await serve((_req, res) => {
      res.writeHead(200, sse);
      // At once: the socket splits it where it will, across events, line ends and CRLFs.
      res.end(all);
    });
    const r = await boundedFetch({ maxMessageBytes: LIMIT })(url);
    const got = await drain(r);
    expect(got.error).toBeUndefined();
    expect(got.bytes.equals(all)).toBe(true);
  });

  it('a stream written in small pieces, events split anywhere, passes byte for byte', async () => {
    const all = Buffer.from(Array.from({ length: 300 }, (_, i) => `event: message\r\ndata: {"n":${i}}\r\n\r\n: keepalive\n\n`).join(''));
    const { url } = await serve((_req, res) => {
      res.writeHead(200, sse);
      let at = 0;
      const next = (): void => {
        if (at >= all.length) return void res.end();
        const n = 1 + (at % 13);
        res.write(all.subarray(at, at + n));
        at += n;
        setImmediate(next);
      };
      next();
    });
    const got = await drain(await boundedFetch({ maxMessageBytes: 64 })(url));
    expect(got.error).toBeUndefined();
    expect(got.bytes.equals(all)).toBe(true);
  });

  it('an event is passed on as soon as it ends, its empty line\'s CRLF whole, the stream still open', async () => {
    // The SDK's parser waits for the byte after a CR that ends what it was given (it may be a CRLF's first half): an
    // event passed on up to the CR of its empty line, its LF held with the next event, was not dispatched until then.
    const event = 'id: 1\r\ndata: {"jsonrpc":"2.0","method":"notifications/tools/list_changed"}\r\n\r\n';
    const { url } = await serve((_req, res) => {
      res.writeHead(200, sse);
      res.write(event); // and nothing more: the stream stays open
    });
    const reader = (await boundedFetch({ maxMessageBytes: LIMIT })(url)).body!.getReader();
    let got = '';
    // No deadline of its own: an event held back leaves the read waiting, and the test fails at its timeout.
    while (got.length < event.length) {
      const { done, value } = await reader.read();
      if (done) break;
      got += Buffer.from(value).toString('utf8');
    }
    expect(got).toBe(event);
    await reader.cancel();
  });

  it('one event past the bound cuts the GET stream: the events before it pass, then the stream fails, the connection goes', async () => {
    const before = 'id: 1\ndata: {"jsonrpc":"2.0","method":"notifications/tools/list_changed"}\n\n';
    const { url, responses } = await serve((_req, res) => {
      res.writeHead(200, sse);
      return pour(res, `${before}data: {"jsonrpc":"2.0","method":"x","params":{"p":"`, 'y'.repeat(16 * KiB), PLANNED, '"}}\n\n');
    });
    const got = await drain(await boundedFetch({ maxMessageBytes: LIMIT })(url));
    expect(got.bytes.toString('utf8')).toBe(before);
    expect(got.error).toBeInstanceOf(MessageTooLargeError);
    expect(got.error).toMatchObject({ limit: LIMIT, where: 'event', url: `GET ${url}` });
    expect((got.error as Error).message).toMatch(
      new RegExp(`^response refused: an event of more than maxMessageBytes \\(65536\\) bytes on the event stream of GET ${url.replace(/[.]/g, '\\.')}: cut after \\d+ bytes of it, the connection closed$`),
    );
    const sent = await responses[0]!.closed;
    expect(sent.cut).toBe(true);
    expect(sent.bytes).toBeLessThan(SAFE);
  });

  it("one event past the bound cuts a POST's stream, which ends with a JSON-RPC error for its request", async () => {
    const before = 'id: p1\ndata: \n\n';
    const { url, responses } = await serve((_req, res) => {
      res.writeHead(200, sse);
      return pour(res, `${before}data: {"jsonrpc":"2.0","id":7,"result":{"tools":[`, '{"name":"t","inputSchema":{"type":"object"}},'.repeat(100), PLANNED, ']}}\n\n');
    });
    const r = await boundedFetch({ maxMessageBytes: LIMIT })(url, { method: 'POST', body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/list' }) });
    const got = await drain(r);
    expect(got.error).toBeUndefined();
    const text = got.bytes.toString('utf8');
    expect(text.startsWith(before)).toBe(true);
    const last = text.slice(before.length);
    expect(last).toMatch(/^data: \{.*\}\n\n$/);
    const answer = JSON.parse(last.slice('data: '.length)) as { id: number; error: { code: number; message: string; data: unknown } };
    expect(answer).toMatchObject({ jsonrpc: '2.0', id: 7, error: { code: -32603 } });
    expect(answer.error.message).toMatch(/^response refused: an event of more than maxMessageBytes \(65536\) bytes on the event stream of POST /);
    // The error the SDK makes of it (a ProtocolError with the same data) is known for what it is ...
    const made = MessageTooLargeError.from({ code: answer.error.code, message: answer.error.message, data: answer.error.data });
    expect(made).toMatchObject({ limit: LIMIT, where: 'event', url: `POST ${url}` });
    // ... and a server's look-alike is not.
    const data = structuredClone(answer.error.data) as Record<string, Record<string, unknown>>;
    data['io.estate/messageTooLarge']!.origin = 'a guess';
    expect(MessageTooLargeError.from({ data })).toBeUndefined();
    const sent = await responses[0]!.closed;
    expect(sent.cut).toBe(true);
    expect(sent.bytes).toBeLessThan(SAFE);
  });

  it('an event stream is not judged by its Content-Length (the bound is per event)', async () => {
    const all = Buffer.from('data: {"a":1}\n\n'.repeat(2 * LIMIT / 16));
    const { url } = await serve((_req, res) => {
      res.writeHead(200, { ...sse, 'content-length': String(all.length) });
      res.end(all);
    });
    const got = await drain(await boundedFetch({ maxMessageBytes: LIMIT })(url));
    expect(got.error).toBeUndefined();
    expect(got.bytes.equals(all)).toBe(true);
  });
});

describe('boundedFetch: a GET event stream cut by the bound is opened again after a doubling wait', () => {
  const sse = { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' };
  const small = 'data: {"jsonrpc":"2.0","method":"notifications/tools/list_changed"}\n\n';

  /** A clock whose waits pass at once, each advancing its time by what was asked (and noted in `waits`). */
  const testClock = () => {
    const c = {
      t: 0,
      waits: [] as number[],
      now: () => c.t,
      sleep: (ms: number, signal?: AbortSignal) => {
        // A Timer's wait ends at once, without failing, on an aborted signal.
        if (signal?.aborted) return Promise.resolve();
        c.waits.push(ms);
        c.t += ms;
        return Promise.resolve();
      },
    };
    return c satisfies Timer;
  };

  /**
   * A server whose GET stream does, each time it is opened, what `gets` says (the last again once they run out):
   * `cut` one event past the bound; `small-then-cut` a small event first; `hold` a small event, and the stream left
   * open; `late-cut` a small event, and 50 ms later one past the bound. A POST gets a small JSON body. `seen` notes each request: its method, path and time on `now`.
   */
  const streams = async (gets: Array<'cut' | 'small-then-cut' | 'hold' | 'late-cut'>, now: () => number = Date.now) => {
    const seen: Array<{ method: string; path: string; at: number }> = [];
    let n = 0;
    const server = await serve((req, res) => {
      seen.push({ method: req.method!, path: req.url!, at: now() });
      if (req.method !== 'GET') {
        res.writeHead(200, { 'content-type': 'application/json' });
        return void res.end('{"jsonrpc":"2.0","id":1,"result":{}}');
      }
      const what = gets[Math.min(n++, gets.length - 1)]!;
      res.writeHead(200, sse);
      if (what === 'hold') return void res.write(small);
      if (what === 'late-cut') {
        res.write(small);
        return void setTimeout(() => void pour(res, 'data: {"p":"', 'y'.repeat(16 * KiB), PLANNED), 50);
      }
      return pour(res, `${what === 'small-then-cut' ? small : ''}data: {"p":"`, 'y'.repeat(16 * KiB), PLANNED, '"}\n\n');
    });
    return { ...server, seen, gets: () => seen.filter((s) => s.method === 'GET') };
  };

  /** Opens the GET stream and reads it to its cut. */
  const openCut = async (fetch: ReturnType<typeof boundedFetch>, url: string) => {
    const got = await drain(await fetch(url));
    expect(got.error).toBeInstanceOf(MessageTooLargeError);
  };

  it('after n cuts in a row the next GET waits 1 s · 2^(n-1), up to maxReopenDelayMs (default 5 min)', async () => {
    expect(DEFAULT_MAX_REOPEN_DELAY_MS).toBe(5 * 60 * 1000);
    const clock = testClock();
    const server = await streams(['cut'], clock.now);
    const fetch = boundedFetchWith({ maxMessageBytes: LIMIT }, clock);
    for (let i = 0; i < 11; i++) await openCut(fetch, server.url);
    const at = server.gets().map((g) => g.at);
    const gaps = at.slice(1).map((t, i) => t - at[i]!);
    expect(gaps).toEqual([1, 2, 4, 8, 16, 32, 64, 128, 256, 300].map((s) => s * 1000));
    expect(clock.waits).toEqual(gaps);
    // A smaller cap.
    const capped = testClock();
    const other = await streams(['cut'], capped.now);
    const fetch2 = boundedFetchWith({ maxMessageBytes: LIMIT, maxReopenDelayMs: 3000 }, capped);
    for (let i = 0; i < 5; i++) await openCut(fetch2, other.url);
    expect(capped.waits).toEqual([1000, 2000, 3000, 3000]);
  });

  it('a small event before the huge one on each stream does not reset the count: the waits still double', async () => {
    const clock = testClock();
    const server = await streams(['small-then-cut'], clock.now);
    const fetch = boundedFetchWith({ maxMessageBytes: LIMIT }, clock);
    for (let i = 0; i < 4; i++) {
      const got = await drain(await fetch(server.url));
      expect(got.bytes.toString('utf8')).toBe(small);
      expect(got.error).toBeInstanceOf(MessageTooLargeError);
    }
    expect(clock.waits).toEqual([1000, 2000, 4000]);
  });

  it('while a GET waits, a POST to the same URL and a GET to another path go out at once; the GET only when its wait ends', async () => {
    let release = (): void => undefined;
    const asked: number[] = [];
    const clock: Timer = {
      now: () => 0,
      sleep: (ms) => {
        asked.push(ms);
        return new Promise((resolve) => (release = resolve));
      },
    };
    const server = await streams(['cut', 'hold'], clock.now);
    const fetch = boundedFetchWith({ maxMessageBytes: LIMIT }, clock);
    await openCut(fetch, server.url);
    let sent = false;
    const waiting = fetch(server.url).then((r) => ((sent = true), r));
    await vi.waitFor(() => expect(asked).toEqual([1000]), { timeout: 30_000, interval: 5 });
    const post = await fetch(server.url, { method: 'POST', body: '{"jsonrpc":"2.0","id":1,"method":"ping"}' });
    expect(await post.json()).toMatchObject({ id: 1 });
    const elsewhere = await fetch(`${server.url}/other`);
    await elsewhere.body!.cancel();
    expect(asked).toEqual([1000]);
    expect(sent).toBe(false);
    expect(server.seen.map((s) => `${s.method} ${s.path}`)).toEqual(['GET /mcp', 'POST /mcp', 'GET /mcp/other']);
    release();
    const r = await waiting;
    expect(r.status).toBe(200);
    await r.body!.cancel();
    expect(server.seen.map((s) => `${s.method} ${s.path}`)).toEqual(['GET /mcp', 'POST /mcp', 'GET /mcp/other', 'GET /mcp']);
  });

  it('a signal that aborts during the wait ends it at once, nothing sent (and one aborted before, too)', async () => {
    const server = await streams(['cut']);
    // The real Timer's sleep, made an hour long: only the abort can end the wait before the test's timeout.
    let sleeping = 0;
    const hour: Timer = {
      now: systemTimer.now,
      sleep: (_ms, signal) => {
        sleeping++;
        return systemTimer.sleep(3_600_000, signal);
      },
    };
    let sent = 0;
    const fetch = boundedFetchWith({ maxMessageBytes: LIMIT, fetch: (u, i) => (sent++, globalThis.fetch(u, i)) }, hour);
    await openCut(fetch, server.url);
    const controller = new AbortController();
    const pending = rejection(fetch(server.url, { signal: controller.signal }));
    // Aborted once the wait has begun (not after a guessed delay).
    await vi.waitFor(() => expect(sleeping).toBe(1), { timeout: 30_000, interval: 5 });
    controller.abort(new Error('transport closed'));
    const error = await pending;
    expect((error as Error).message).toBe('transport closed');
    expect(await rejection(fetch(server.url, { signal: AbortSignal.abort(new Error('closed before')) }))).toMatchObject({ message: 'closed before' });
    // Neither reached the fetch it bounds: nothing was sent (counted where a request would start, not waited for).
    expect(sent).toBe(1);
    expect(server.gets()).toHaveLength(1);
  });

  it('a GET stream that stays open maxReopenDelayMs without a cut starts the waits again at 1 s; one that ends sooner does not', async () => {
    const clock = testClock();
    const server = await streams(['cut', 'cut', 'cut', 'hold', 'cut', 'hold', 'cut', 'cut'], clock.now);
    const fetch = boundedFetchWith({ maxMessageBytes: LIMIT, maxReopenDelayMs: 60_000 }, clock);
    for (let i = 0; i < 3; i++) await openCut(fetch, server.url);
    expect(clock.waits).toEqual([1000, 2000]);
    // Held open 1 min, then closed by the client: the count starts again.
    const held = (await fetch(server.url)).body!.getReader();
    expect(clock.waits).toEqual([1000, 2000, 4000]);
    expect(Buffer.from((await held.read()).value!).toString('utf8')).toBe(small);
    clock.t += 60_000;
    await held.cancel();
    await openCut(fetch, server.url);
    expect(clock.waits).toEqual([1000, 2000, 4000]);
    // Held open a few seconds only: the count goes on from where it was.
    const brief = (await fetch(server.url)).body!.getReader();
    await brief.read();
    clock.t += 5000;
    await brief.cancel();
    await openCut(fetch, server.url);
    await openCut(fetch, server.url);
    expect(clock.waits).toEqual([1000, 2000, 4000, 1000, 1000, 2000]);
  });

  it('a GET stream cut after staying open maxReopenDelayMs counts as the first cut again', async () => {
    const clock = testClock();
    const server = await streams(['cut', 'cut', 'late-cut', 'cut'], clock.now);
    const fetch = boundedFetchWith({ maxMessageBytes: LIMIT, maxReopenDelayMs: 60_000 }, clock);
    await openCut(fetch, server.url);
    await openCut(fetch, server.url);
    const reader = (await fetch(server.url)).body!.getReader();
    expect(Buffer.from((await reader.read()).value!).toString('utf8')).toBe(small);
    clock.t += 60_000;
    expect(await rejection(reader.read())).toBeInstanceOf(MessageTooLargeError);
    await openCut(fetch, server.url);
    expect(clock.waits).toEqual([1000, 2000, 1000]);
  });

  it('refuses a maxReopenDelayMs that is not an integer >= 0; 0 paces nothing', async () => {
    for (const bad of [-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() => boundedFetch({ maxReopenDelayMs: bad })).toThrow(`maxReopenDelayMs must be an integer >= 0, got ${String(bad)}`);
    }
    const clock = testClock();
    const server = await streams(['cut'], clock.now);
    const fetch = boundedFetchWith({ maxMessageBytes: LIMIT, maxReopenDelayMs: 0 }, clock);
    for (let i = 0; i < 3; i++) await openCut(fetch, server.url);
    expect(clock.waits).toEqual([]);
  });
});
