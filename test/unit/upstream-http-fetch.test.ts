/**
 * The fetch an HTTP upstream's SDK transport is given (src/upstream/http-fetch.ts), against a real node:http server
 * answering as an MCP server may: an event stream holding only the response becomes its JSON body; anything else is
 * handed over exactly as sent (every byte, in order, as a stream), failures stay failures, and nothing is unbounded.
 */
import { spawn } from 'node:child_process';
import { Agent as HttpAgent, type IncomingMessage, type ServerResponse } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import { describe, expect, it } from 'vitest';
import { MAX_UPSTREAM_BODY_BYTES } from '#upstream/answer-budget';
import { createUpstreamFetch, EventSize } from '#upstream/http-fetch';
import { cameToRest, flood, useRouteServer, type Flood } from '../fixtures/upstream/route-server.ts';

const RESPONSE = '{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"Echo: x"}]}}';
const NOTE = '{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"working"}}';

/** The ends of an event (its last line's end, then its empty line) in mixes the SSE spec allows. */
const MIXED_ENDS = ['\n\r\n', '\n\r', '\r\n\r'] as const;
/** Where RESPONSE may be cut into two texts that, joined by a line end, are JSON again. */
const AT_RESULT = RESPONSE.indexOf('"result"');

type Handler = (req: IncomingMessage, res: ServerResponse) => void;
const routes: Record<string, Handler> = {
  '/priming-then-response': (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'mcp-session-id': 's-1' });
    res.write('id: ev-1\ndata: \n\n');
    res.end(`event: message\nid: ev-2\ndata: ${RESPONSE}\n\n`);
  },
  '/response-in-two-events': (_req, res) => {
    // Two events, ended by the mixed line ends the SSE spec allows: each alone is not JSON; the SDK reads two events.
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.end(`data: ${RESPONSE.slice(0, AT_RESULT)}\n\r\ndata: ${RESPONSE.slice(AT_RESULT)}\n\n`);
  },
  '/priming-then-response-mixed-ends': (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write('id: ev-1\r\ndata: \r\n\r');
    res.end(`event: message\nid: ev-2\ndata: ${RESPONSE}\n\r\n`);
  },
  '/response-ending-in-cr': (_req, res) => {
    // A CR as the stream's last byte may be half a CRLF: the SDK's parser (no flush at the end) dispatches nothing.
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.end(`data: ${RESPONSE}\n\r`);
  },
  '/note-then-response': (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(`data: ${NOTE}\n\n`);
    setTimeout(() => res.end(`data: ${RESPONSE}\n\n`), 30);
  },
  '/response-then-open': (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(`data: ${RESPONSE}\n\n`);
    setTimeout(() => res.end(`data: ${NOTE}\n\n`), 200);
  },
  '/json': (req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json', 'x-echo-header': String(req.headers['x-test'] ?? '') });
      res.end(JSON.stringify({ jsonrpc: '2.0', id: 1, result: { echoed: JSON.parse(body) as unknown } }));
    });
  },
  '/not-found': (_req, res) => {
    res.writeHead(404, { 'content-type': 'text/plain' });
    res.end('Session not found');
  },
  '/accepted': (_req, res) => {
    res.writeHead(202);
    res.end();
  },
  '/broken-stream': (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write('id: ev-1\ndata: \n\n');
    setTimeout(() => res.socket?.destroy(), 20);
  },
  '/slow': () => undefined, // never answers
  '/firehose': (_req, res) => {
    // Events as fast as the socket takes them (a log line before the response: handed over as a stream).
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const event = Buffer.from(`data: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'x'.repeat(64 * 1024) } })}\n\n`);
    firehose = flood(res, event, 48 * 1024 * 1024);
  },
  '/many-events': (_req, res) => {
    // 48 MiB of events of 64 KiB each, as fast as the socket takes them.
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const event = Buffer.from(`data: ${'x'.repeat(64 * 1024 - 8)}\n\n`);
    let sent = 0;
    const more = (): void => {
      for (; sent < 48 * 1024 * 1024; sent += event.length) if (!res.write(event)) return void (sent += event.length, res.once('drain', more));
      res.end();
    };
    more();
  },
  '/many-mixed-events': (_req, res) => {
    // 72 MiB (past the bound in all) of events of 16 KiB each, each ended by an empty line whose line ends are mixed.
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const event = Buffer.from(MIXED_ENDS.map((end) => `data: ${'x'.repeat(16 * 1024 - 6 - end.length)}${end}`).join(''));
    let sent = 0;
    const more = (): void => {
      for (; sent < 72 * 1024 * 1024; sent += event.length) if (!res.write(event)) return void (sent += event.length, res.once('drain', more));
      res.end();
    };
    more();
  },
  '/endless-event': (_req, res) => {
    // One event that never ends, far past what is read before deciding: handed over as a stream, not held.
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const chunk = Buffer.alloc(256 * 1024, 'a'.charCodeAt(0));
    let sent = 0;
    res.write('data: ');
    const more = (): void => {
      while (sent <= MAX_UPSTREAM_BODY_BYTES) {
        sent += chunk.length;
        if (!res.write(chunk)) return void res.once('drain', more);
      }
      res.end('\n\n');
    };
    more();
  },
  '/huge': (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    const chunk = Buffer.alloc(1024 * 1024, 32);
    let sent = 0;
    const more = (): void => {
      while (sent <= MAX_UPSTREAM_BODY_BYTES) {
        sent += chunk.length;
        if (!res.write(chunk)) return void res.once('drain', more);
      }
      res.end();
    };
    more();
  },
};

/** What /firehose managed to send, and whether the socket ever pushed back. */
let firehose: Flood = { sent: 0, blocked: false, ended: false };
const upstream = useRouteServer((req, res) => (routes[req.url ?? ''] ?? ((_q, r) => r.writeHead(500).end()))(req, res));
const { post, upstreamFetch } = upstream;

describe('the upstream fetch', () => {
  it('hands an event stream that holds only its response (after a priming event) over as that JSON, headers kept', async () => {
    // The stream's end must be seen before the linger runs out; a stalled test process must not turn this into a stream.
    const patient = createUpstreamFetch(globalThis.fetch, 60_000);
    const r = await patient(new URL(`${upstream.base()}/priming-then-response`), { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"jsonrpc":"2.0","id":7,"method":"tools/call"}' });
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toBe('application/json');
    expect(r.headers.get('mcp-session-id')).toBe('s-1');
    expect(await r.text()).toBe(RESPONSE);
  });

  it('reads events ended by any line ends the SSE spec allows: two events that join into JSON are not one response', async () => {
    const patient = createUpstreamFetch(globalThis.fetch, 60_000);
    const init = { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"jsonrpc":"2.0","id":7,"method":"tools/call"}' };
    const split = await patient(new URL(`${upstream.base()}/response-in-two-events`), init);
    expect(split.headers.get('content-type')).toBe('text/event-stream');
    expect(await split.text()).toBe(`data: ${RESPONSE.slice(0, AT_RESULT)}\n\r\ndata: ${RESPONSE.slice(AT_RESULT)}\n\n`);
    const mixed = await patient(new URL(`${upstream.base()}/priming-then-response-mixed-ends`), init);
    expect(mixed.headers.get('content-type')).toBe('application/json');
    expect(await mixed.text()).toBe(RESPONSE);
    // Not taken for a response where the SDK would read none: handed over as it came.
    const lastCr = await patient(new URL(`${upstream.base()}/response-ending-in-cr`), init);
    expect(lastCr.headers.get('content-type')).toBe('text/event-stream');
    expect(await lastCr.text()).toBe(`data: ${RESPONSE}\n\r`);
  });

  it('hands a stream that carries anything before its response over as the stream, every byte in order', async () => {
    const r = await post('/note-then-response');
    expect(r.headers.get('content-type')).toBe('text/event-stream');
    expect(await r.text()).toBe(`data: ${NOTE}\n\ndata: ${RESPONSE}\n\n`);
  });

  it('hands a stream that stays open after its response over as the stream, so what follows is not lost', async () => {
    const r = await post('/response-then-open');
    expect(r.headers.get('content-type')).toBe('text/event-stream');
    expect(await r.text()).toBe(`data: ${RESPONSE}\n\ndata: ${NOTE}\n\n`);
  });

  it('passes JSON answers, the body it sends and the headers it is given, unchanged', async () => {
    const r = await post('/json', { headers: { 'content-type': 'application/json', 'x-test': 'yes' }, body: '{"a":[1,"é"]}' });
    expect(r.headers.get('x-echo-header')).toBe('yes');
    expect(await r.json()).toEqual({ jsonrpc: '2.0', id: 1, result: { echoed: { a: [1, 'é'] } } });
  });

  it('keeps error statuses and their text, and 202 with no body', async () => {
    const missing = await post('/not-found');
    expect([missing.status, missing.ok, await missing.text()]).toEqual([404, false, 'Session not found']);
    const accepted = await post('/accepted');
    expect([accepted.status, await accepted.text()]).toEqual([202, '']);
  });

  it('hands a stream that breaks before its response over as far as it came, then as failed', async () => {
    const r = await post('/broken-stream');
    const reader = (r.body as ReadableStream<Uint8Array>).getReader();
    let text = '';
    await expect(
      (async () => {
        for (;;) {
          const { value, done } = await reader.read();
          if (done) return;
          text += new TextDecoder().decode(value);
        }
      })(),
    ).rejects.toThrow();
    expect(text).toBe('id: ev-1\ndata: \n\n');
  });

  it('hands an event stream that does not end an event within the first MiB over as a stream, and fails an event past the bound', async () => {
    const r = await post('/endless-event');
    expect(r.headers.get('content-type')).toBe('text/event-stream');
    let bytes = 0;
    await expect(
      (async () => {
        for await (const c of r.body as unknown as AsyncIterable<Uint8Array>) bytes += c.length;
      })(),
    ).rejects.toThrow(/upstream event larger than/);
    expect(bytes).toBeGreaterThan(1024 * 1024);
    expect(bytes).toBeLessThanOrEqual(MAX_UPSTREAM_BODY_BYTES);
  });

  it('reads a stream only as fast as its reader takes it (backpressure), so an upstream cannot fill memory', async () => {
    const r = await post('/firehose');
    expect(r.headers.get('content-type')).toBe('text/event-stream');
    // The reader takes a few chunks, then nothing more: the server must come to rest held back by the socket, long before
    // it has sent everything (read on regardless, the whole 48 MiB would pile up in memory and the server would end).
    const reader = (r.body as ReadableStream<Uint8Array>).getReader();
    for (let i = 0; i < 20; i++) await reader.read();
    await cameToRest(firehose);
    expect(firehose.ended).toBe(false);
    expect(firehose.sent).toBeLessThan(16 * 1024 * 1024);
    await reader.cancel();
  });

  it('gives up on an answer larger than the bound, and on abort', async () => {
    await expect(post('/huge')).rejects.toThrow(/larger than/);
    const controller = new AbortController();
    const pending = post('/slow', { signal: controller.signal });
    controller.abort();
    await expect(pending).rejects.toMatchObject({ name: 'AbortError' });
  });

  it('bounds each event of a stream the fallback fetched (the standalone GET stream): an endless event fails it, many small ones pass', async () => {
    const get = (path: string) => upstreamFetch(new URL(`${upstream.base()}${path}`), { method: 'GET', headers: { accept: 'text/event-stream' } });
    await expect((await get('/endless-event')).arrayBuffer()).rejects.toThrow(/upstream event larger than 67108864 bytes/);
    const many = await (await get('/many-events')).arrayBuffer(); // 48 MiB in events of 64 KiB
    expect(many.byteLength).toBeGreaterThanOrEqual(48 * 1024 * 1024);
    // Events ended by mixed line ends are events too: they do not add up into one past the bound.
    const mixed = await (await get('/many-mixed-events')).arrayBuffer();
    expect(mixed.byteLength).toBeGreaterThan(MAX_UPSTREAM_BODY_BYTES);
  });

  it('finds where an event ends across chunks, a separator split between two of them included', () => {
    const size = new EventSize();
    expect(size.push(Buffer.from('data: abc'))).toBe(9);
    expect(size.push(Buffer.from('def\r\n\r'))).toBe(9 + 6);
    expect(size.push(Buffer.from('\ndata: x'))).toBe(7); // \r\n\r | \n: the event ended one byte into this chunk
    expect(size.push(Buffer.from('\n'))).toBe(8);
    expect(size.push(Buffer.from('\n'))).toBe(0); // \n | \n, chunks of one byte
    expect(size.push(Buffer.from('data: y\n\ndata: zz'))).toBe(8);
  });

  it('ends an event at an empty line whatever its line ends: small events past the bound in all pass, one large event does not', () => {
    // An event ended each way the spec allows (LF, CRLF, CR, mixed), a chunk of many of them: each ends the event.
    for (const end of [...MIXED_ENDS, '\r\n\n', '\n\n', '\r\r', '\r\n\r\n', '\r\r\n']) {
      const size = new EventSize();
      size.push(Buffer.from(`data: x${end}data: y${end}`));
      expect(size.push(Buffer.from('data: z')), JSON.stringify(end)).toBe(7);
      // A byte at a time: an end split between chunks is one.
      const bytes = new EventSize();
      let last = 0;
      for (const b of Buffer.from(`data: x${end}data: y${end}data: z`)) last = bytes.push(Buffer.from([b]));
      expect(last, JSON.stringify(end)).toBe(7);
    }
    const chunk = Buffer.from(Array.from({ length: 1024 }, (_, i) => `id: ${i}\ndata: ${'x'.repeat(40)}${MIXED_ENDS[i % 3]}`).join(''));
    const small = new EventSize();
    let most = 0;
    for (let read = 0; read <= MAX_UPSTREAM_BODY_BYTES; read += chunk.length) most = Math.max(most, small.push(chunk));
    expect(most).toBe(0);
    // Lines ended every way, no empty line among them: one event, refused past the bound.
    const lines = Buffer.from('data: a\r\ndata: b\ndata: c\rdata: d\n:\rdata: e\r'.repeat(4096));
    const large = new EventSize();
    let size = 0;
    while (size <= MAX_UPSTREAM_BODY_BYTES) {
      const before = size;
      size = large.push(lines);
      expect(size).toBe(before + lines.length);
    }
  });

  it('leaves GET (the standalone stream) and anything that is not a string POST to the fallback', async () => {
    const seen: string[] = [];
    const withFallback = createUpstreamFetch(async (input, init) => (seen.push(`${init?.method ?? 'GET'} ${String(input)}`), new Response('fallback')));
    expect(await (await withFallback(`${upstream.base()}/json`, { method: 'GET' })).text()).toBe('fallback');
    expect(await (await withFallback(`${upstream.base()}/json`, { method: 'DELETE' })).text()).toBe('fallback');
    expect(seen).toEqual([`GET ${upstream.base()}/json`, `DELETE ${upstream.base()}/json`]);
  });
});

/**
 * An upstream in its own process (this one is made busy while it acts): it counts the requests it reads, answers each
 * with 202, and with `drop` set closes a connection that has been idle 50 ms since its last answer, as a keep-alive
 * timeout does (never one with a request on it). With `reset` set it closes a connection as soon as a request arrives
 * on it, without answering; with `reset-reused`, as soon as a second request arrives on it (after reading it).
 */
const UPSTREAM = `
const { createServer } = require('node:http');
const [drop, reset, resetReused] = ['drop', 'reset', 'reset-reused'].map((m) => process.argv[1] === m);
let seen = 0;
const server = createServer((req, res) => {
  seen++;
  if (reset) return req.socket.destroy();
  if (resetReused && req.socket.served) return req.resume().on('end', () => req.socket.destroy());
  req.socket.served = true;
  const socket = req.socket;
  socket.busy = true;
  req.resume();
  req.on('end', () => {
    res.writeHead(202, { 'x-seen': String(seen) }).end();
    socket.busy = false;
    if (drop) setTimeout(() => { if (!socket.busy) socket.destroy(); }, 50);
  });
});
server.keepAliveTimeout = 60000;
server.listen(0, '127.0.0.1', () => process.stdout.write(String(server.address().port) + '\\n'));
process.stdin.on('data', () => process.stdout.write('seen ' + seen + '\\n'));
`;

const startUpstream = async (mode: 'drop' | 'reset' | 'reset-reused' | 'plain') => {
  const child = spawn(process.execPath, ['-e', UPSTREAM, mode], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines: string[] = [];
  const waiting: ((l: string) => void)[] = [];
  let buffered = '';
  child.stdout.on('data', (c: Buffer) => {
    buffered += c.toString();
    for (let i = buffered.indexOf('\n'); i >= 0; i = buffered.indexOf('\n')) {
      const line = buffered.slice(0, i);
      buffered = buffered.slice(i + 1);
      const w = waiting.shift();
      if (w) w(line);
      else lines.push(line);
    }
  });
  const nextLine = (): Promise<string> => new Promise((resolve) => (lines.length > 0 ? resolve(lines.shift() as string) : waiting.push(resolve)));
  const url = new URL(`http://127.0.0.1:${await nextLine()}/mcp`);
  return {
    url,
    /** How many requests the upstream has read. */
    seen: async () => (child.stdin.write('?\n'), Number((await nextLine()).split(' ')[1])),
    stop: () => child.kill(),
  };
};

const TOOLS_CALL = '{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"transfer","arguments":{}}}';

const busyFor = (ms: number): void => {
  const until = Date.now() + ms;
  while (Date.now() < until);
};

describe('the upstream fetch on kept-alive connections', () => {
  const send = (url: URL) => upstreamFetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"jsonrpc":"2.0","id":"q-1","result":{}}' });

  it('sends a request again, once, when the kept-alive connection it took had been closed by the upstream meanwhile', async () => {
    const upstream = await startUpstream('drop');
    try {
      expect((await send(upstream.url)).status).toBe(202);
      // The upstream closes that connection while this process is too busy to notice: the next request takes it from
      // the pool in the same turn, as a relay busy with a large stream did (an answer to an upstream's question lost).
      busyFor(400);
      const again = await send(upstream.url);
      expect(again.status).toBe(202);
      // Read once, on the fresh connection: the one it was first written to had been closed before anything was read.
      expect(again.headers.get('x-seen')).toBe('2');
      expect(await upstream.seen()).toBe(2);
    } finally {
      upstream.stop();
    }
  });

  it('a request handed a pooled connection that is already half shut goes out on another, a tools/call too (it was never written)', async () => {
    const upstream = await startUpstream('plain');
    const pool = { http: new HttpAgent({ keepAlive: true }), https: new HttpsAgent({ keepAlive: true }) };
    const own = createUpstreamFetch(globalThis.fetch, 25, pool);
    const sendOwn = () => own(upstream.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: TOOLS_CALL });
    try {
      expect((await sendOwn()).status).toBe(202);
      const [pooled] = Object.values(pool.http.freeSockets).flat();
      expect(pooled).toBeDefined();
      // This end shut (as after an upstream's close was read), the socket not yet destroyed: still in the pool.
      pooled?.end();
      expect(pooled?.readyState).not.toBe('open');
      const again = await sendOwn();
      expect(again.status).toBe(202);
      expect(again.headers.get('x-seen')).toBe('2');
    } finally {
      upstream.stop();
      pool.http.destroy();
    }
  });

  it('does not send a tools/call again once written, even on a reused connection: the upstream may have read it (SPEC: a non_idempotent call is never re-sent)', async () => {
    const upstream = await startUpstream('reset-reused');
    try {
      const call = () => upstreamFetch(upstream.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: TOOLS_CALL });
      expect((await call()).status).toBe(202);
      // The second request goes out on the kept-alive connection; the upstream reads it and resets the connection.
      await expect(call()).rejects.toMatchObject({ code: 'ECONNRESET' });
      expect(await upstream.seen()).toBe(2);
      // A reply in the same place is sent again: it cannot act twice (an upstream drops a reply it has had).
      expect((await send(upstream.url)).status).toBe(202);
      const reply = await send(upstream.url);
      expect(reply.status).toBe(202);
      expect(await upstream.seen()).toBe(5);
    } finally {
      upstream.stop();
    }
  });

  it('does not send again what failed on a new connection: the upstream may have read it', async () => {
    const upstream = await startUpstream('reset');
    try {
      await expect(send(upstream.url)).rejects.toMatchObject({ code: 'ECONNRESET' });
      expect(await upstream.seen()).toBe(1);
    } finally {
      upstream.stop();
    }
  });
});
