/**
 * `estate/client`'s tools cache against a broken or hostile server (a hand-written one on the other end of an in-memory
 * pair): a list is bounded in tools, pages and time, a caller can stop waiting for it, a list that names a tool twice
 * is refused, and what versionOf()/call() pin always agrees with what list() last said.
 */
import { Client, InMemoryTransport, type JSONRPCMessage } from '@modelcontextprotocol/client';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { DuplicateToolNameError, ToolsListBoundError, ToolsListError, createToolsCache, type ToolsCacheOptions } from '#lib/client';
import { rejection } from '../fixtures/rejection.ts';

type Revision = '2025-11-25' | '2026-07-28';
type Tool = { name: string; inputSchema: Record<string, unknown>; _meta: Record<string, unknown> };
/** What the server does with one tools/list: a page, a JSON-RPC error, or nothing at all (never answers). */
type Answer = { tools: Tool[]; nextCursor?: string } | { error: string } | 'never';

const tool = (name: string, version: string, input: Record<string, unknown> = { type: 'object' }): Tool => ({
  name,
  inputSchema: input,
  _meta: { 'io.estate/version': version },
});
const tools = (prefix: string, n: number): Tool[] => Array.from({ length: n }, (_, i) => tool(`${prefix}.t${i}`, '1.0.0'));

interface Server {
  client: Client;
  /** tools/list requests received, in order: the cursor each asked for. */
  lists: Array<string | undefined>;
  /** tools/call requests received: their params. */
  calls: Array<Record<string, unknown>>;
  /** Resolves when the server has received its `n`th tools/list (1-based). */
  listed(n: number): Promise<void>;
  /** Resolves when a notifications/cancelled has arrived for a request. */
  cancelled(): Promise<void>;
  wasCancelled(): boolean;
  /** Answers the oldest tools/list left unanswered ('never'). */
  answerHeld(page: { tools: Tool[] }): void;
}

const opened: Client[] = [];
afterEach(async () => {
  for (const c of opened.splice(0)) await c.close();
});

/** A server whose `n`th tools/list (0-based) is answered with `answer(n, cursor)`. */
const serve = async (revision: Revision, answer: (n: number, cursor: string | undefined) => Answer): Promise<Server> => {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  const modern = revision === '2026-07-28';
  const complete = modern ? { resultType: 'complete' } : {};
  const listed = modern ? { ...complete, ttlMs: 60_000, cacheScope: 'private' } : {};
  const reply = (id: unknown, result: Record<string, unknown>) => void serverSide.send({ jsonrpc: '2.0', id, result } as JSONRPCMessage);
  const lists: Array<string | undefined> = [];
  const calls: Array<Record<string, unknown>> = [];
  const waiters: Array<() => void> = [];
  const unanswered: unknown[] = [];
  let cancelled = false;
  const wake = () => {
    for (const w of waiters.splice(0)) w();
  };
  const until = (done: () => boolean): Promise<void> =>
    new Promise((resolve) => {
      const check = () => (done() ? resolve() : waiters.push(check));
      check();
    });
  serverSide.onmessage = (m) => {
    const { id, method, params } = m as { id?: unknown; method?: string; params?: Record<string, unknown> };
    if (method === 'notifications/cancelled') cancelled = true;
    if (id === undefined) return wake();
    if (method === 'server/discover') {
      if (modern) return reply(id, { resultType: 'complete', supportedVersions: [revision], capabilities: { tools: {} }, ttlMs: 0, cacheScope: 'private' });
      return void serverSide.send({ jsonrpc: '2.0', id, error: { code: -32601, message: 'Method not found' } } as JSONRPCMessage);
    }
    if (method === 'initialize') return reply(id, { protocolVersion: revision, capabilities: { tools: {} }, serverInfo: { name: 'hostile', version: '1.0.0' } });
    if (method === 'tools/list') {
      const cursor = params?.cursor as string | undefined;
      const a = answer(lists.length, cursor);
      lists.push(cursor);
      wake();
      if (a === 'never') return void unanswered.push(id);
      if ('error' in a) return void serverSide.send({ jsonrpc: '2.0', id, error: { code: -32603, message: a.error } } as JSONRPCMessage);
      return reply(id, { ...listed, ...a });
    }
    if (method === 'tools/call') {
      calls.push(params ?? {});
      return reply(id, { ...complete, content: [{ type: 'text', text: 'called' }] });
    }
    reply(id, complete);
  };
  await serverSide.start();
  const client = new Client({ name: 'bounds-test', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
  await client.connect(clientSide);
  opened.push(client);
  expect(client.getNegotiatedProtocolVersion()).toBe(revision);
  return {
    client,
    lists,
    calls,
    listed: (n) => until(() => lists.length >= n),
    cancelled: () => until(() => cancelled),
    wasCancelled: () => cancelled,
    answerHeld: (page) => reply(unanswered.shift(), { ...listed, ...page }),
  };
};

/** The cache under test: no listen stream (the hand-written server has none), and the given bounds. */
const cacheOf = (server: Server, options: ToolsCacheOptions = {}) => createToolsCache(server.client, { listen: false, ...options });

describe.each(['2025-11-25', '2026-07-28'] as const)('the tools cache bounds a list at %s', (revision) => {
  it('a list past maxTools is refused, naming the bound and the figure; no page after the one that passed it is asked for', async () => {
    const server = await serve(revision, (n) => ({ tools: tools(`p${n}`, 3), nextCursor: `c${n + 1}` }));
    const cache = cacheOf(server, { maxTools: 5 });
    const error = await rejection(cache.list());
    expect(error).toBeInstanceOf(ToolsListBoundError);
    expect(error).toBeInstanceOf(ToolsListError);
    expect(error).toMatchObject({ bound: 'maxTools', limit: 5, figure: 6, read: { tools: 6, pages: 2 } });
    expect((error as Error).message).toBe('tools/list refused: more than maxTools (5) tools: 6 tools read in 2 pages, no further page asked for');
    expect(server.lists).toEqual([undefined, 'c1']);
    // Nothing of it is held.
    expect(cache.versionOf('p0.t0')).toBeUndefined();
    expect(cache.stats()).toMatchObject({ listErrors: 1, staleServed: 0 });
  });

  it('a list of exactly maxTools tools is held', async () => {
    const server = await serve(revision, (n) => (n === 0 ? { tools: tools('a', 3), nextCursor: 'c1' } : { tools: tools('b', 3) }));
    const cache = cacheOf(server, { maxTools: 6 });
    expect(await cache.list()).toHaveLength(6);
    expect(cache.versionOf('b.t2')).toBe('1.0.0');
  });

  it('a list past maxPages is refused before the next page is asked for', async () => {
    const server = await serve(revision, (n) => ({ tools: [], nextCursor: `c${n + 1}` }));
    const error = await rejection(cacheOf(server, { maxPages: 3 }).list());
    expect(error).toMatchObject({ bound: 'maxPages', limit: 3, figure: 4, read: { tools: 0, pages: 3 } });
    expect(server.lists).toHaveLength(3);
  });

  it('a list not complete within listTimeoutMs is refused, the request cancelled: one bound for all the pages', async () => {
    // Page 1 at once, page 2 never.
    const server = await serve(revision, (n) => (n === 0 ? { tools: tools('a', 2), nextCursor: 'c1' } : 'never'));
    const cache = cacheOf(server, { listTimeoutMs: 200 });
    const error = await rejection(cache.list());
    expect(error).toBeInstanceOf(ToolsListBoundError);
    expect(error).toMatchObject({ bound: 'listTimeoutMs', limit: 200, read: { tools: 2, pages: 1 } });
    expect((error as Error).message).toMatch(/^tools\/list refused: not complete within listTimeoutMs \(200 ms\): 2 tools read in 1 page in \d+ ms/);
    await server.cancelled();
    expect(cache.versionOf('a.t0')).toBeUndefined();
  });

  it('list({signal}): the caller stops waiting with its reason, the request is cancelled, the next list() asks again', async () => {
    const server = await serve(revision, (n) => (n === 0 ? 'never' : { tools: tools('a', 1) }));
    const cache = cacheOf(server);
    const stop = new AbortController();
    const waiting = cache.list({ signal: stop.signal });
    await server.listed(1);
    stop.abort(new Error('the agent moved on'));
    await expect(waiting).rejects.toThrow('the agent moved on');
    await server.cancelled();
    expect(cache.stats().listErrors).toBe(0);
    expect((await cache.list()).map((t) => t.name)).toEqual(['a.t0']);
    expect(server.lists).toHaveLength(2);
    // An aborted signal is refused at once, even on a hit.
    await expect(cache.list({ signal: AbortSignal.abort(new Error('already')) })).rejects.toThrow('already');
  });

  it('list({signal}) on a fetch shared with another caller: only the one that aborts stops, the fetch goes on', async () => {
    const server = await serve(revision, () => 'never');
    const cache = cacheOf(server);
    const stop = new AbortController();
    const first = cache.list({ signal: stop.signal });
    const second = cache.list();
    await server.listed(1);
    stop.abort(new Error('first gives up'));
    await expect(first).rejects.toThrow('first gives up');
    server.answerHeld({ tools: tools('a', 1) });
    expect((await second).map((t) => t.name)).toEqual(['a.t0']);
    expect(server.wasCancelled()).toBe(false);
    expect(server.lists).toHaveLength(1);
    expect(cache.versionOf('a.t0')).toBe('1.0.0');
  });

  it('call({signal}) while the list is fetched: the call stops waiting, nothing is called', async () => {
    const server = await serve(revision, () => 'never');
    const cache = cacheOf(server);
    const stop = new AbortController();
    const calling = cache.call('a.t0', {}, { signal: stop.signal });
    await server.listed(1);
    stop.abort(new Error('run cancelled'));
    await expect(calling).rejects.toThrow('run cancelled');
    await server.cancelled();
    expect(server.calls).toEqual([]);
    expect(cache.stats().calls).toBe(0);
  });

  it.each([
    ['on one page', [[tool('t.same', '1.0.0', { type: 'object', properties: { a: {} }, required: ['a'] }), tool('t.same', '2.0.0', { type: 'object', properties: { b: {} } })]]],
    ['across pages', [[tool('t.same', '1.0.0')], [tool('other', '1.0.0'), tool('t.same', '2.0.0')]]],
  ])('a list naming a tool twice (%s) is refused: nothing held, nothing pinned, nothing called', async (_where, pages) => {
    const pageAt = (i: number): Answer => ({ tools: pages[i]!, ...(i + 1 < pages.length ? { nextCursor: `c${i + 1}` } : {}) });
    const server = await serve(revision, (_n, cursor) => pageAt(cursor === undefined ? 0 : Number(cursor.slice(1))));
    const cache = cacheOf(server);
    const error = await rejection(cache.list());
    expect(error).toBeInstanceOf(DuplicateToolNameError);
    expect(error).toMatchObject({ tool: 't.same', versions: ['1.0.0', '2.0.0'] });
    expect((error as Error).message).toBe("tools/list refused: the tool 't.same' is listed twice (1.0.0 and 2.0.0); a server lists each name once");
    expect(cache.versionOf('t.same')).toBeUndefined();
    await expect(cache.call('t.same', { a: 1 })).rejects.toBeInstanceOf(DuplicateToolNameError);
    expect(server.calls).toEqual([]);
  });
});

describe.each(['2025-11-25', '2026-07-28'] as const)('a refresh that fails at %s', (revision) => {
  /** A good list first, then whatever `later` answers. */
  const failing = (later: (n: number) => Answer) => serve(revision, (n) => (n === 0 ? { tools: [tool('pay.quote', '1.0.0')] } : later(n)));

  it('by default: list() throws and nothing is held, so versionOf() and call() pin nothing either', async () => {
    const server = await failing(() => ({ tools: tools('flood', 4) }));
    const cache = cacheOf(server, { maxTools: 3 });
    await cache.list();
    expect(cache.versionOf('pay.quote')).toBe('1.0.0');
    cache.invalidate();
    await expect(cache.list()).rejects.toBeInstanceOf(ToolsListBoundError);
    expect(cache.versionOf('pay.quote')).toBeUndefined();
    // call() fetches the list first, as when nothing was ever held, and fails as list() does.
    await expect(cache.call('pay.quote', {})).rejects.toBeInstanceOf(ToolsListBoundError);
    expect(server.calls).toEqual([]);
    expect(cache.stats()).toMatchObject({ listErrors: 2, staleServed: 0 });
  });

  it('staleIfError: the last good list is served, versionOf() and call() pin it, and the next list() asks again', async () => {
    const server = await failing((n) => (n === 1 ? { error: 'replica down' } : { tools: [tool('pay.quote', '1.1.0')] }));
    const cache = cacheOf(server, { staleIfError: true });
    await cache.list();
    cache.invalidate();
    expect((await cache.list()).map((t) => t._meta?.['io.estate/version'])).toEqual(['1.0.0']);
    expect(cache.versionOf('pay.quote')).toBe('1.0.0');
    await cache.call('pay.quote', {});
    expect(server.calls[0]?._meta).toMatchObject({ 'io.estate/version': '1.0.0' });
    expect(cache.stats()).toMatchObject({ listErrors: 1, staleServed: 1 });
    // Still invalid: the server is asked again, and its list is held once it answers.
    expect((await cache.list()).map((t) => t._meta?.['io.estate/version'])).toEqual(['1.1.0']);
    expect(cache.versionOf('pay.quote')).toBe('1.1.0');
    expect(server.lists).toHaveLength(3);
  });

  it('staleIfError with nothing held yet: the error is thrown', async () => {
    const server = await serve(revision, () => ({ error: 'replica down' }));
    await expect(cacheOf(server, { staleIfError: true }).list()).rejects.toThrow('replica down');
  });
});

describe('the pages the cache walks itself', () => {
  it('at 2026-07-28, a tool with an invalid x-mcp-header is excluded from every page, the first too, as the SDK does', async () => {
    const bad = (name: string) => tool(name, '1.0.0', { type: 'object', properties: { a: { type: 'object', 'x-mcp-header': 'A' } } });
    const server = await serve('2026-07-28', (_n, cursor) => (cursor === undefined ? { tools: [bad('p1.bad'), tool('p1.ok', '1.0.0')], nextCursor: 'c1' } : { tools: [bad('p2.bad'), tool('p2.ok', '1.0.0')] }));
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => undefined);
    try {
      expect((await cacheOf(server).list()).map((t) => t.name)).toEqual(['p1.ok', 'p2.ok']);
      expect(warn.mock.calls.map((c) => String(c[0]).match(/excluding tool '([^']+)'/)?.[1])).toEqual(['p1.bad', 'p2.bad']);
    } finally {
      warn.mockRestore();
    }
  });

  it('a page that repeats the one before it, cursor and tools, ends the walk (as the SDK\'s walk does)', async () => {
    const server = await serve('2025-11-25', (_n, cursor) => ({ tools: cursor === undefined ? [tool('a', '1.0.0')] : [tool('b', '1.0.0')], nextCursor: 'same' }));
    expect((await cacheOf(server).list()).map((t) => t.name)).toEqual(['a', 'b']);
    expect(server.lists).toEqual([undefined, 'same', 'same']);
  });
});

describe('createToolsCache bounds options', () => {
  it.each([
    [{ maxTools: 0 }, /maxTools must be an integer >= 1/],
    [{ maxTools: 1.5 }, /maxTools must be an integer >= 1/],
    [{ maxPages: -1 }, /maxPages must be an integer >= 1/],
    [{ listTimeoutMs: 0 }, /listTimeoutMs must be a number > 0/],
    [{ listTimeoutMs: Number.NaN }, /listTimeoutMs must be a number > 0/],
    [{ listTimeoutMs: Number.POSITIVE_INFINITY }, /listTimeoutMs must be a number > 0/],
  ])('refuses %j before touching the client', (options, message) => {
    expect(() => createToolsCache({} as never, options)).toThrow(message);
  });
});
