/**
 * An upstream's tools/list read leniently (SPEC §7: "a candidate that the definition rules of section 1 refuse is
 * reported with its reasons and never offered"): the page's envelope is checked, each tool is judged on its own by the
 * candidate mapping. Read strictly (the SDK's schema), one tool without an inputSchema failed the whole listing, and
 * every other tool's change went unrecorded: an upstream could hide a rug pull behind one broken tool.
 */
import { Client, InMemoryTransport, type JSONRPCMessage } from '@modelcontextprotocol/client';
import { afterEach, describe, expect, it } from 'vitest';
import { listingPageOf, type ListingPage } from '#upstream/candidate';
import { ListingReader } from '#upstream/connection';

const tools = [{ name: 'echo', description: 'Echoes.', inputSchema: { type: 'object' } }, { name: 'noschema', description: 'x' }, 42, null];

describe('a tools/list page', () => {
  it('is checked as an envelope only: tools an array, nextCursor a string or absent', () => {
    const page = listingPageOf({ tools, nextCursor: 'c2', ttlMs: 'whatever' }) as ListingPage;
    expect(page.nextCursor).toBe('c2');
    expect(page.tools.slice(0, 2)).toEqual(tools.slice(0, 2));
    // Entries that are not objects are kept (as empty objects), to be refused with their place in the listing.
    expect(page.tools.slice(2)).toEqual([{}, {}]);
    expect(listingPageOf({ tools: [] })).toEqual({ tools: [] });
    expect(listingPageOf({})).toBe('tools: expected an array, got nothing');
    expect(listingPageOf({ tools: {} })).toBe('tools: expected an array, got an object');
    expect(listingPageOf({ tools: [], nextCursor: 7 })).toBe('nextCursor: expected a string or nothing, got a number');
    expect(listingPageOf({ tools: [], nextCursor: null })).toBe('nextCursor: expected a string or nothing, got null');
    expect(listingPageOf([])).toBe('the result is an array, not an object');
  });
});

/** A hand-written server on the other end of an in-memory pair: `revision` picks the era the client negotiates. */
const connect = async (revision: '2025-11-25' | '2026-07-28', listResult: (cursor: unknown) => Record<string, unknown>) => {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  const reply = (id: unknown, result: Record<string, unknown>) => void serverSide.send({ jsonrpc: '2.0', id, result } as JSONRPCMessage);
  const modern = revision === '2026-07-28';
  serverSide.onmessage = (m) => {
    const { id, method, params } = m as { id?: unknown; method?: string; params?: { cursor?: unknown } };
    if (id === undefined) return;
    if (method === 'server/discover') {
      if (modern) return reply(id, { resultType: 'complete', supportedVersions: [revision], capabilities: { tools: {} }, ttlMs: 0, cacheScope: 'private' });
      return void serverSide.send({ jsonrpc: '2.0', id, error: { code: -32601, message: 'Method not found' } } as JSONRPCMessage);
    }
    if (method === 'initialize') return reply(id, { protocolVersion: revision, capabilities: { tools: {} }, serverInfo: { name: 'hand', version: '1.0.0' } });
    if (method === 'tools/list') return reply(id, { ...(modern ? { resultType: 'complete', ttlMs: 0, cacheScope: 'private' } : {}), ...listResult(params?.cursor) });
    reply(id, modern ? { resultType: 'complete' } : {});
  };
  await serverSide.start();
  const client = new Client({ name: 'listing-test', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
  const reader = new ListingReader(clientSide);
  clientSide.onmessage = (m) => reader.note(m);
  await client.connect(clientSide);
  opened.push(client);
  return { client, reader };
};
const opened: Client[] = [];
afterEach(async () => {
  for (const c of opened.splice(0)) await c.close();
});

describe.each(['2025-11-25', '2026-07-28'] as const)('reading a listing at %s', (revision) => {
  it('a malformed tool does not fail the page: every entry is handed on as the upstream gave it', async () => {
    const { client, reader } = await connect(revision, (cursor) => (cursor === undefined ? { tools, nextCursor: 'p2' } : { tools: [{ name: 'late', inputSchema: { type: 'object' } }] }));
    expect(client.getNegotiatedProtocolVersion()).toBe(revision);
    if (revision === '2026-07-28') {
      // What the SDK's own listing does with it: the whole page refused.
      await expect(client.listTools(undefined, { cacheMode: 'bypass' })).rejects.toThrow(/Invalid result for tools\/list/);
    }
    const first = await reader.page(client, undefined, {});
    expect(first.nextCursor).toBe('p2');
    expect(first.tools.map((t) => t.name)).toEqual(['echo', 'noschema', undefined, undefined]);
    expect((await reader.page(client, 'p2', {})).tools.map((t) => t.name)).toEqual(['late']);
  });

  it('a page whose envelope is wrong still fails, saying why', async () => {
    const { client, reader } = await connect(revision, () => ({ tools: 'none', nextCursor: 3 }));
    await expect(reader.page(client, undefined, {})).rejects.toThrow(/^Invalid result for tools\/list: tools: expected an array, got a string/);
  });
});
