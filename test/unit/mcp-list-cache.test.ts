/**
 * tools/list pages are serialized once per view revision (src/mcp/list-cache.ts), from the second time one is asked
 * for: the same result (and its bytes) is served until the caller's view changes, the bytes always equal serializing
 * the result, the page asked for once answers the very same JSON, and a change is never hidden.
 */
import { describe, expect, it } from 'vitest';
import { makePrincipal } from '#domain/access';
import { jsonBytesOf, responseBody, success } from '#mcp/jsonrpc';
import { aDefinition } from '../fixtures/builders.ts';
import { makeHarness } from '../fixtures/handlers/harness.ts';

const open = (name: string) => aDefinition({ name, handler: `${name.split('.')[0] ?? ''}.lookup`, access: { classification: 'public' } });

describe('tools/list page cache', () => {
  it('serves one serialized page per view revision, and a new one once the view changes', async () => {
    const h = await makeHarness([open('payments.lookup'), open('payments.refund')], { 'payments.lookup': () => ({ content: [] }) }, { pageSize: 1 });
    const who = makePrincipal({});
    // Asked for once: built, answered and not kept (no bytes made); asked again: built once more and kept.
    const once = await h.core.listTools(who, {}, '2025-11-25');
    expect(jsonBytesOf(once.session)).toBeUndefined();
    const first = await h.core.listTools(who, {}, '2025-11-25');
    const again = await h.core.listTools(who, {}, '2025-11-25');
    expect(again.session).toBe(first.session);
    expect(first.session).not.toBe(once.session);
    expect(responseBody(success(7, once.session))).toBe(JSON.stringify(success(7, first.session)));
    expect(jsonBytesOf(first.session)?.toString('utf8')).toBe(JSON.stringify(first.session));
    expect(Buffer.concat(responseBody(success(7, first.session)) as Buffer[]).toString('utf8')).toBe(JSON.stringify(success(7, first.session)));
    // Another revision's Tool shape is another page; the stateless form carries its own fields, the same JSON asked
    // for once as kept.
    const statelessOnce = (await h.core.listTools(who, {}, '2026-07-28')).stateless(60_000);
    expect(jsonBytesOf(statelessOnce)).toBeUndefined();
    const stateless = (await h.core.listTools(who, {}, '2026-07-28')).stateless(60_000);
    expect(stateless).toMatchObject({ ttlMs: 60_000, cacheScope: 'private', resultType: 'complete' });
    expect(jsonBytesOf(stateless)?.toString('utf8')).toBe(JSON.stringify(stateless));
    expect(JSON.stringify(statelessOnce)).toBe(JSON.stringify(stateless));

    const cursor = first.session.nextCursor;
    expect(typeof cursor).toBe('string');
    await h.publish({ ...open('payments.lookup'), version: '1.1.0', description: 'Now with legs.' });
    const changed = await h.core.listTools(who, {}, '2025-11-25');
    expect(changed.session).not.toBe(first.session);
    // A new revision's page is asked for once again before it is kept.
    expect(jsonBytesOf(changed.session)).toBeUndefined();
    expect(JSON.stringify(changed.session)).toContain('Now with legs.');
    // A cursor of the old revision is refused, as before the cache.
    await expect(h.core.listTools(who, { cursor }, '2025-11-25')).rejects.toThrow(/cursor/i);
  });
  it('holds a cached page as its bytes, not its Tool objects: each read of its tools is parsed from them', async () => {
    const h = await makeHarness([open('payments.lookup')], { 'payments.lookup': () => ({ content: [] }) });
    await h.core.listTools(makePrincipal({}), {}, '2025-11-25');
    const page = (await h.core.listTools(makePrincipal({}), {}, '2025-11-25')).session;
    const first = page.tools as unknown[];
    // Nothing keeps the page's 500 Tools (and their schemas) alive while it is cached: a new array at every read.
    expect(page.tools).not.toBe(first);
    expect(page.tools).toEqual(first);
    expect(JSON.stringify(page)).toBe(jsonBytesOf(page)?.toString('utf8'));
  });

  it('answers a cached page as its UTF-8 bytes: the very JSON of the response, non-ASCII text and all', async () => {
    const described = { ...open('payments.lookup'), description: 'Zahlungen prüfen → 支払い 🧾' };
    const h = await makeHarness([described], { 'payments.lookup': () => ({ content: [] }) });
    await h.core.listTools(makePrincipal({}), {}, '2025-11-25');
    const page = (await h.core.listTools(makePrincipal({}), {}, '2025-11-25')).session;
    const body = responseBody(success('req-ü', page));
    expect(Array.isArray(body)).toBe(true);
    const bytes = Buffer.concat(body as Buffer[]);
    expect(bytes.equals(Buffer.from(JSON.stringify(success('req-ü', page))))).toBe(true);
    expect(JSON.parse(bytes.toString('utf8')).result.tools[0].description).toBe(described.description);
    // Any other result is serialized as before.
    expect(responseBody(success(1, { tools: [] }))).toBe(JSON.stringify(success(1, { tools: [] })));
  });
});
