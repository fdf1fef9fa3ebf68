/**
 * `estate/client`'s tools cache over the SDK's Streamable HTTP transport, bounded in bytes by `boundedFetch`, against a
 * hostile MCP server (a hand-written one on a real local port, 2025-11-25 without sessions) that answers tools/list
 * with a page of a quarter of a GB, sent as fast as the client reads it. The cache refuses it with a
 * ToolsListBoundError (`maxMessageBytes`), holds nothing of it (or serves the last good list, `staleIfError`), and the
 * server's connection is closed long before it has written its page: as a JSON body, and as an event of an event
 * stream (whose request would otherwise wait for its deadline, the SDK leaving a request whose stream failed pending).
 * A standalone GET stream cut the same way on every opening is opened again after waits that double, not at the pace
 * the server's `retry:` field asks.
 */
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { boundedFetch, createToolsCache, MessageTooLargeError, ToolsListBoundError, ToolsListError, type ToolsCache } from '#lib/client';
import { rejection } from '../fixtures/rejection.ts';

const MiB = 1024 * 1024;
const LIMIT = MiB;
/** The hostile page: far past the bound, and past what a test may read. */
const PLANNED = 256 * MiB;
/** What a cut page may have had written at most: the bound, and what the sockets' buffers take on loopback. */
const SAFE = 32 * MiB;
const REVISION = '2025-11-25';

/** How the server answers the `n`th tools/list: a small page, or the hostile one as JSON or as one event. */
type Answer = 'small' | 'huge-json' | 'huge-event';

interface Poured {
  bytes: number;
  /** Resolves when the page's response closed: `cut` if its connection went before the page ended. */
  closed: Promise<{ cut: boolean; bytes: number }>;
}

const tool = (name: string) => ({ name, inputSchema: { type: 'object' }, _meta: { 'io.estate/version': '1.0.0' } });

/** Writes `head`, `unit` as fast as the socket takes it until PLANNED bytes, then `tail`; stops when the connection goes. */
const pour = (res: ServerResponse, head: string, unit: string, tail: string): Poured => {
  const p: Poured = { bytes: 0, closed: Promise.resolve({ cut: false, bytes: 0 }) };
  p.closed = new Promise((resolve) => res.on('close', () => resolve({ cut: !res.writableFinished, bytes: p.bytes })));
  p.bytes += head.length;
  res.write(head);
  const more = (): void => {
    while (p.bytes < PLANNED && !res.destroyed) {
      p.bytes += unit.length;
      if (!res.write(unit)) return void res.once('drain', more);
    }
    if (!res.destroyed) res.end(tail);
  };
  more();
  return p;
};

const servers: Server[] = [];
const clients: Client[] = [];
const caches: ToolsCache[] = [];
afterEach(async () => {
  for (const c of caches.splice(0)) await c.close();
  for (const c of clients.splice(0)) await c.close().catch(() => undefined);
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    s.close();
  }
});

/** The hostile server; `pages` holds what it poured for each hostile page. */
const hostile = async (answers: Answer[]) => {
  const pages: Poured[] = [];
  let lists = 0;
  const json = (res: ServerResponse, message: unknown) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(message));
  };
  const route = (req: IncomingMessage, res: ServerResponse, body: string) => {
    if (req.method !== 'POST') {
      res.writeHead(405, { allow: 'POST' }).end();
      return;
    }
    const { id, method } = JSON.parse(body) as { id?: number; method: string };
    if (id === undefined) return void res.writeHead(202).end();
    if (method === 'initialize') {
      return json(res, { jsonrpc: '2.0', id, result: { protocolVersion: REVISION, capabilities: { tools: {} }, serverInfo: { name: 'hostile', version: '1.0.0' } } });
    }
    if (method !== 'tools/list') return json(res, { jsonrpc: '2.0', id, error: { code: -32601, message: 'Method not found' } });
    const answer = answers[lists++] ?? 'small';
    if (answer === 'small') return json(res, { jsonrpc: '2.0', id, result: { tools: [tool('good.one'), tool('good.two')] } });
    const unit = JSON.stringify(tool('hostile.t')).repeat(64).replace(/\}\{"name/g, '},{"name') + ',';
    if (answer === 'huge-json') {
      res.writeHead(200, { 'content-type': 'application/json' });
      pages.push(pour(res, `{"jsonrpc":"2.0","id":${id},"result":{"tools":[`, unit, `${JSON.stringify(tool('hostile.last'))}]}}`));
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    // A priming event first (the SDK would resume a stream after it), then the page as one event.
    pages.push(pour(res, `id: e1\ndata: \n\ndata: {"jsonrpc":"2.0","id":${id},"result":{"tools":[`, unit, `${JSON.stringify(tool('hostile.last'))}]}}\n\n`));
  };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => route(req, res, Buffer.concat(chunks).toString('utf8')));
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`, pages };
};

/** A client of the hostile server through boundedFetch, and a cache around it. */
const connect = async (url: string, staleIfError = false) => {
  const client = new Client({ name: 'bytes-test', version: '1.0.0' }, { versionNegotiation: { mode: 'legacy' } });
  clients.push(client);
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { fetch: boundedFetch({ maxMessageBytes: LIMIT }) }));
  expect(client.getNegotiatedProtocolVersion()).toBe(REVISION);
  // No deadline short enough to be what refuses the page: only the bound in bytes may.
  const cache = createToolsCache(client, { listen: false, listTimeoutMs: 600_000, staleIfError });
  caches.push(cache);
  return cache;
};

describe('the tools cache refuses a page past maxMessageBytes (boundedFetch)', () => {
  it.each([
    ['a JSON body', 'huge-json', 'body'],
    ['one event of an event stream', 'huge-event', 'event'],
  ] as const)('a page of a quarter of a GB as %s: refused with a clear ToolsListBoundError, nothing held, the connection cut early', async (_, answer, where) => {
    const server = await hostile([answer]);
    const cache = await connect(server.url);
    const error = await rejection(cache.list());
    expect(error).toBeInstanceOf(ToolsListBoundError);
    expect(error).toBeInstanceOf(ToolsListError);
    expect(error).toMatchObject({ bound: 'maxMessageBytes', limit: LIMIT, read: { tools: 0, pages: 0 } });
    expect((error as ToolsListBoundError).figure).toBeGreaterThan(LIMIT);
    expect((error as Error).message).toMatch(
      new RegExp(`^tools/list refused: a page of more than maxMessageBytes \\(${LIMIT}\\) bytes from POST ${server.url.replace(/[.]/g, '\\.')} \\(cut after \\d+ bytes\\): 0 tools read in 0 pages before it, the rest not read$`),
    );
    const cause = (error as Error).cause;
    expect(cause).toBeInstanceOf(MessageTooLargeError);
    expect(cause).toMatchObject({ limit: LIMIT, where, url: `POST ${server.url}` });
    // Nothing of it is held.
    expect(cache.versionOf('hostile.t')).toBeUndefined();
    expect(cache.stats()).toMatchObject({ listErrors: 1, staleServed: 0 });
    // The server's write was cut short: its connection went long before the page was sent.
    const sent = await server.pages[0]!.closed;
    expect(sent.cut).toBe(true);
    expect(sent.bytes).toBeLessThan(SAFE);
  });

  it('with staleIfError, the last good list is served instead, and a list within the bound is held again after', async () => {
    const server = await hostile(['small', 'huge-json', 'huge-event', 'small']);
    const cache = await connect(server.url, true);
    const good = await cache.list();
    expect(good.map((t) => t.name)).toEqual(['good.one', 'good.two']);
    for (const n of [1, 2]) {
      cache.invalidate();
      expect(await cache.list()).toBe(good);
      expect(cache.versionOf('good.one')).toBe('1.0.0');
      expect(cache.versionOf('hostile.t')).toBeUndefined();
      expect(cache.stats()).toMatchObject({ listErrors: n, staleServed: n });
    }
    for (const page of server.pages) expect(await page.closed).toMatchObject({ cut: true });
    cache.invalidate();
    expect((await cache.list()).map((t) => t.name)).toEqual(['good.one', 'good.two']);
    expect(cache.stats()).toMatchObject({ listErrors: 2, staleServed: 2 });
  });
});

describe('a GET stream cut on every opening is opened again at a doubling pace (boundedFetch)', () => {
  it("the SDK's reconnections, asked for at once by `retry: 0`, go out 1 s, then 2 s apart", async () => {
    const gets: number[] = [];
    const server = createServer((req, res) => {
      if (req.method === 'GET') {
        gets.push(Date.now());
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        // Reconnect at once, says the server; then an event past the bound.
        pour(res, 'retry: 0\n\ndata: {"jsonrpc":"2.0","method":"x","params":{"p":"', 'y'.repeat(16 * 1024), '"}}\n\n');
        return;
      }
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const { id } = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id?: number };
        if (id === undefined) return void res.writeHead(202).end();
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ jsonrpc: '2.0', id, result: { protocolVersion: REVISION, capabilities: {}, serverInfo: { name: 'hostile', version: '1.0.0' } } }));
      });
    });
    servers.push(server);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
    const client = new Client({ name: 'bytes-test', version: '1.0.0' }, { versionNegotiation: { mode: 'legacy' } });
    clients.push(client);
    const errors: unknown[] = [];
    client.onerror = (e) => errors.push(e);
    await client.connect(new StreamableHTTPClientTransport(new URL(url), { fetch: boundedFetch({ maxMessageBytes: LIMIT }) }));
    // The SDK reports each cut to onerror (as text: `SSE stream disconnected: MessageTooLargeError: ...`).
    const cuts = () => errors.filter((e) => /SSE stream disconnected: .*an event of more than maxMessageBytes/.test(String(e))).length;
    // Until the third stream was cut (waited for, not slept: a loaded machine only makes it later).
    await vi.waitFor(() => expect(cuts()).toBeGreaterThanOrEqual(3), { timeout: 30_000, interval: 20 });
    // Unpaced, the SDK opens it again as soon as it is cut: some hundreds of GETs by now, a MiB read for each. Paced,
    // the fourth waits 4 s after the third's cut.
    expect(gets).toHaveLength(3);
    expect(gets[1]! - gets[0]!).toBeGreaterThanOrEqual(950);
    expect(gets[2]! - gets[1]!).toBeGreaterThanOrEqual(1950);
    // Closing the client ends the wait under way: no GET after it.
    await client.close();
    await new Promise((r) => setTimeout(r, 100));
    expect(gets).toHaveLength(3);
  });
});
