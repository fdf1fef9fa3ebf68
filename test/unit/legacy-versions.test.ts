/**
 * Versions written to the store before a rule existed (an old event stream, appended directly): one whose handler
 * is outside its tool's namespace is never served (issue 9, High 2), and one whose schemas no longer compile refuses
 * its calls with the reason instead of failing every caller with an internal error.
 */
import { describe, expect, it } from 'vitest';
import { makePrincipal } from '#domain/access';
import { toolStream } from '#domain/events';
import { createSchemaCompiler } from '#domain/schema-compiler';
import type { ToolDefinition } from '#domain/types';
import type { HandlerMap } from '#handlers/types';
import { createSchemaWarmup } from '#mcp/schema-warmup';
import { isOfferedBy } from '#mcp/server-core';
import { CatalogueReader } from '#app/catalogue-reader';
import { createMemoryEventStore } from '#store/memory-event-store';
import { aDefinition, publishedEvent } from '../fixtures/builders.ts';
import { errorOf, makeHarness, resultOf, textOf } from '../fixtures/handlers/harness.ts';

const open = { classification: 'public' as const };
const balance = aDefinition({ name: 'accounts.balance', handler: 'accounts.balance', inputSchema: { type: 'object' }, access: { classification: 'confidential', requiredScopes: ['accounts.read'] } });
// Published when only the publishing scope was checked: a public tool bound to another team's handler.
const mirror = aDefinition({ name: 'payments.mirror', handler: 'accounts.balance', inputSchema: { type: 'object' }, access: open });
const broken = aDefinition({ name: 'fx.old', handler: 'fx.old', inputSchema: { type: 'object', properties: { a: { type: 'string', pattern: '(?=a)b' } } }, access: open });

const handlers: HandlerMap = {
  'accounts.balance': () => ({ content: [{ type: 'text', text: 'balance 1,000,000' }] }),
  'fx.old': () => ({ content: [{ type: 'text', text: 'ran' }] }),
};

/** An old event stream: the events as they were appended then, with no definition check in between. */
const oldStore = async (defs: ToolDefinition[]) => {
  const store = createMemoryEventStore();
  for (const d of defs) await store.append(toolStream(d.name), [publishedEvent(d)], { expectedRevision: 'no_stream' });
  return store;
};

describe('versions published before a rule existed', () => {
  it('a handler outside the tool\'s namespace: not listed, and every way of calling it is Unknown tool', async () => {
    const h = await makeHarness([], handlers, { store: await oldStore([balance, mirror]) });
    const s = h.session(makePrincipal({}));
    await s.initialize();
    const names = (resultOf(await s.request('tools/list')).tools as { name: string }[]).map((t) => t.name);
    expect(names).not.toContain('payments.mirror');
    const unknown = errorOf(await s.request('tools/call', { name: 'nothing.here', arguments: {} }));
    expect(errorOf(await s.request('tools/call', { name: 'payments.mirror', arguments: {} }))).toEqual({ ...unknown, message: 'Unknown tool: payments.mirror' });
    expect(errorOf(await s.request('tools/call', { name: 'payments.mirror', arguments: {}, _meta: { 'io.estate/version': '1.0.0' } }))).toEqual({ ...unknown, message: 'Unknown tool: payments.mirror' });
    // The namespace's own tool is served as before to whoever may see it.
    const owner = h.session(makePrincipal({ scopes: ['accounts.read'], clearance: 'confidential' }));
    await owner.initialize();
    expect(textOf(resultOf(await owner.request('tools/call', { name: 'accounts.balance', arguments: {} })))).toBe('balance 1,000,000');
  });

  it('the serving process says once, in its log, which versions it does not serve and why', async () => {
    const store = await oldStore([balance, mirror]);
    const reader = new CatalogueReader(store, { isOffered: isOfferedBy(handlers) });
    await reader.catchUp();
    const warned: Record<string, unknown>[] = [];
    const log = { warn: (fields: Record<string, unknown>) => void warned.push(fields) } as unknown as Parameters<typeof createSchemaWarmup>[0]['log'];
    const warm = createSchemaWarmup({ compiler: createSchemaCompiler(), reader, isOffered: isOfferedBy(handlers), log });
    await store.append(toolStream(mirror.name), [publishedEvent({ ...mirror, version: '1.0.1' })], { expectedRevision: 0 });
    await reader.catchUp();
    warm.close();
    expect(warned).toEqual([
      { tool: 'payments.mirror', version: '1.0.0', reason: "handler: 'accounts.balance' is not in the tool's namespace 'payments' (a handler's first name segment, or <ns> of upstream:<ns>/<tool>, must be 'payments')" },
      { tool: 'payments.mirror', version: '1.0.1', reason: expect.stringContaining("is not in the tool's namespace 'payments'") },
    ]);
  });

  it('schemas that no longer compile: the call is refused with the reason, the handler never runs, no internal error', async () => {
    const h = await makeHarness([], handlers, { store: await oldStore([broken]) });
    const s = h.session(makePrincipal({}));
    await s.initialize();
    const r = await s.request('tools/call', { name: 'fx.old', arguments: { a: 'b' } });
    expect(r).not.toHaveProperty('error');
    const result = resultOf(r);
    expect(result.isError).toBe(true);
    expect(textOf(result)).toMatch(/^\$: fx\.old@1\.0\.0 cannot be served: its schemas do not compile here \(inputSchema: pattern '\(\?=a\)b' .*\); publish a corrected version$/);
  });
});
