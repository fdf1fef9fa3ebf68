/**
 * tools/list and tools/call per SPEC §3, driven through a stateful session over the memory store.
 */
import { describe, expect, it } from 'vitest';
import { makePrincipal } from '#domain/access';
import type { HandlerMap } from '#handlers/types';
import { aDefinition } from '../fixtures/builders.ts';
import { errorOf, makeHarness, resultOf, textOf } from '../fixtures/handlers/harness.ts';

const confidential = makePrincipal({ tenant: 'acme', scopes: ['payments.read'], clearance: 'confidential' });
const lookupDef = (o: Parameters<typeof aDefinition>[0] = {}) =>
  aDefinition({ access: { requiredScopes: ['payments.read'], tenants: ['acme'], classification: 'confidential' }, ...o });

const lookup: HandlerMap = {
  'payments.lookup': (args) => ({ content: [{ type: 'text', text: `looked up ${String(args.reference)} legs=${String(args.include_legs)}` }] }),
};

const toolNames = (r: Record<string, unknown>) => (r.tools as { name: string }[]).map((t) => t.name);

describe('tools/list', () => {
  it('pages the view with a cursor; a cursor from an older view is expired', async () => {
    // One function bound as each namespace's own handler (a handler must be in its tool's namespace).
    const inNs = (name: string) => aDefinition({ name, handler: `${name.split('.')[0] as string}.h`, access: { classification: 'public' } });
    const defs = ['a.one', 'b.two', 'c.three', 'd.four', 'e.five'].map(inNs);
    const h = await makeHarness(defs, Object.fromEntries(['a', 'b', 'c', 'd', 'e', 'f'].map((ns) => [`${ns}.h`, () => ({ content: [] })])), { pageSize: 2 });
    const s = h.session();
    await s.initialize();
    const p1 = resultOf(await s.request('tools/list'));
    expect(toolNames(p1)).toEqual(['a.one', 'b.two']);
    const p2 = resultOf(await s.request('tools/list', { cursor: p1.nextCursor }));
    expect(toolNames(p2)).toEqual(['c.three', 'd.four']);
    const p3 = resultOf(await s.request('tools/list', { cursor: p2.nextCursor }));
    expect(toolNames(p3)).toEqual(['e.five']);
    expect(p3).not.toHaveProperty('nextCursor');
    await h.publish(inNs('f.six'));
    expect(errorOf(await s.request('tools/list', { cursor: p2.nextCursor }))).toEqual({ code: -32602, message: 'cursor expired' });
    expect(errorOf(await s.request('tools/list', { cursor: 'not-a-cursor' }))).toMatchObject({ code: -32602 });
  });

  it('sends only the fields the negotiated revision defines, never an access field', async () => {
    const def = lookupDef({ outputSchema: { type: 'object', properties: { status: { type: 'string' } } } });
    const h = await makeHarness([def], lookup);
    const fieldsFor = async (rev: string) => {
      const s = h.session(confidential);
      await s.initialize(rev);
      const tool = (resultOf(await s.request('tools/list')).tools as Record<string, unknown>[])[0] as Record<string, unknown>;
      return tool;
    };
    const newest = await fieldsFor('2025-11-25');
    expect(Object.keys(newest).sort()).toEqual(['_meta', 'annotations', 'description', 'inputSchema', 'name', 'outputSchema', 'title']);
    expect(newest._meta).toEqual({ 'io.estate/version': '1.0.0' });
    expect(newest.annotations).toEqual({ readOnlyHint: true, idempotentHint: true });
    expect(Object.keys(await fieldsFor('2025-03-26')).sort()).toEqual(['_meta', 'annotations', 'description', 'inputSchema', 'name']);
    expect(Object.keys(await fieldsFor('2024-11-05')).sort()).toEqual(['_meta', 'description', 'inputSchema', 'name']);
    expect(JSON.stringify(newest)).not.toMatch(/requiredScopes|tenants|classification|sideEffect|handler/);
  });

  it('includeDeprecated adds deprecated versions with their notice', async () => {
    const h = await makeHarness([lookupDef()], lookup);
    await h.deprecate('payments.lookup', '1.0.0', 'use 2.x');
    const s = h.session(confidential);
    await s.initialize();
    expect(resultOf(await s.request('tools/list')).tools).toEqual([]);
    const withDep = resultOf(await s.request('tools/list', { _meta: { 'io.estate/includeDeprecated': true } }));
    expect((withDep.tools as Record<string, unknown>[])[0]?._meta).toEqual({
      'io.estate/version': '1.0.0',
      'io.estate/deprecated': { reason: 'use 2.x', at: expect.any(String) },
    });
  });
});

describe('tools/call', () => {
  it('unknown, unentitled and pinned-missing tools give the same error, with no data', async () => {
    const h = await makeHarness([lookupDef()], lookup);
    const outsider = h.session(makePrincipal({ tenant: 'globex', scopes: ['payments.read'], clearance: 'confidential' }));
    await outsider.initialize();
    const unentitled = errorOf(await outsider.request('tools/call', { name: 'payments.lookup', arguments: { reference: 'PMT-771' } }));
    const insider = h.session(confidential);
    await insider.initialize();
    const pinnedMissing = errorOf(await insider.request('tools/call', { name: 'payments.lookup', arguments: {}, _meta: { 'io.estate/version': '9.9.9' } }));
    await h.retire('payments.lookup', '1.0.0');
    const retired = errorOf(await insider.request('tools/call', { name: 'payments.lookup', arguments: {}, _meta: { 'io.estate/version': '1.0.0' } }));
    expect(unentitled).toEqual({ code: -32602, message: 'Unknown tool: payments.lookup' });
    expect(pinnedMissing).toEqual(unentitled);
    expect(retired).toEqual(unentitled);
    const nothing = errorOf(await insider.request('tools/call', { name: 'no.such', arguments: {} }));
    expect(nothing).toEqual({ code: -32602, message: 'Unknown tool: no.such' });
  });

  it('the traced example: repair drops urgent, two sorted errors remain, nothing runs, nothing is recorded', async () => {
    let ran = 0;
    const h = await makeHarness([lookupDef()], { 'payments.lookup': () => (ran++, { content: [] }) });
    const s = h.session(confidential, 'run-traced');
    await s.initialize();
    const r = resultOf(await s.request('tools/call', { name: 'payments.lookup', arguments: { reference: 'PMT771', include_legs: 'yes', urgent: true } }));
    expect(r.isError).toBe(true);
    expect(textOf(r)).toBe("$.include_legs: expected type boolean, got string\n$.reference: does not match pattern '^PMT-\\d{3,}$'");
    // What repair did before the errors that remain is said too: the model learns that urgent was dropped.
    expect(r._meta).toEqual({ 'io.estate/version': '1.0.0', 'io.estate/runId': 'run-traced', 'io.estate/repairs': [{ path: '$.urgent', action: 'dropped' }] });
    expect(ran).toBe(0);
    expect(await h.calls('run-traced')).toEqual([]);
  });

  it('repair coerces for none/idempotent tools and records what it changed', async () => {
    const h = await makeHarness([lookupDef()], lookup);
    const s = h.session(confidential, 'run-repair');
    await s.initialize();
    const r = resultOf(await s.request('tools/call', { name: 'payments.lookup', arguments: { reference: 'PMT-771', include_legs: 'true', urgent: true } }));
    expect(r.isError).toBeUndefined();
    expect(textOf(r)).toBe('looked up PMT-771 legs=true');
    const [rec] = await h.calls('run-repair');
    expect(rec).toMatchObject({ tool: 'payments.lookup', version: '1.0.0', outcome: 'ok', repaired: true, attempts: 1, tenant: 'acme', protocolVersion: '2025-11-25' });
    expect(rec?.repairs).toHaveLength(2);
    expect(rec?.repairs).toEqual(expect.arrayContaining([{ path: '$.urgent', action: 'dropped' }, { path: '$.include_legs', action: 'coerced' }]));
  });

  it('non_idempotent tools are never repaired: every error comes back and nothing runs', async () => {
    let ran = 0;
    const def = lookupDef({ name: 'payments.transfer', handler: 'payments.transfer', sideEffect: 'non_idempotent' });
    const h = await makeHarness([def], { 'payments.transfer': () => (ran++, { content: [] }) });
    const s = h.session(confidential, 'run-ni');
    await s.initialize();
    const r = resultOf(await s.request('tools/call', { name: 'payments.transfer', arguments: { reference: 'PMT-771', include_legs: 'true', urgent: true } }));
    expect(r.isError).toBe(true);
    expect(textOf(r)).toBe('$.include_legs: expected type boolean, got string\n$.urgent: additional property is not allowed');
    expect(ran).toBe(0);
    expect(await h.calls('run-ni')).toEqual([]);
  });

  it('a throwing handler is an isError result; RETRYABLE tools are retried at most twice, others never', async () => {
    let calls = 0;
    const boom: HandlerMap = { 'payments.lookup': () => { calls++; throw new Error('core banking timeout'); } };
    const h = await makeHarness([lookupDef(), lookupDef({ name: 'payments.pay', handler: 'payments.lookup', sideEffect: 'non_idempotent' })], boom);
    const s = h.session(confidential, 'run-boom');
    await s.initialize();
    const r = resultOf(await s.request('tools/call', { name: 'payments.lookup', arguments: { reference: 'PMT-771' } }));
    expect(r.isError).toBe(true);
    expect(textOf(r)).toContain('core banking timeout');
    expect(calls).toBe(3);
    calls = 0;
    resultOf(await s.request('tools/call', { name: 'payments.pay', arguments: { reference: 'PMT-771' } }));
    expect(calls).toBe(1);
    expect((await h.calls('run-boom')).map((c) => [c.tool, c.outcome, c.attempts])).toEqual([
      ['payments.lookup', 'tool_error', 3],
      ['payments.pay', 'tool_error', 1],
    ]);
  });

  it('a handler past its timeoutMs is an isError result recorded as timeout, its signal aborted', async () => {
    let aborted = 0;
    const slow: HandlerMap = {
      slow: (_a, ctx) => new Promise((resolve) => ctx.signal.addEventListener('abort', () => (aborted++, resolve({ content: [] })))),
    };
    const h = await makeHarness([lookupDef({ name: 'slow.tool', handler: 'slow', sideEffect: 'non_idempotent', timeoutMs: 50 })], slow);
    const s = h.session(confidential, 'run-slow');
    await s.initialize();
    const r = resultOf(await s.request('tools/call', { name: 'slow.tool', arguments: { reference: 'PMT-771' } }));
    expect(r.isError).toBe(true);
    expect(textOf(r)).toBe('Tool timed out after 50 ms');
    expect(aborted).toBe(1);
    expect((await h.calls('run-slow'))[0]).toMatchObject({ outcome: 'timeout', attempts: 1 });
  });

  it('notifications/cancelled aborts the handler; the call is recorded as cancelled', async () => {
    let started: () => void = () => undefined;
    const running = new Promise<void>((r) => (started = r));
    const h = await makeHarness([lookupDef()], {
      'payments.lookup': (_a, ctx) => new Promise((_resolve, reject) => { started(); ctx.signal.addEventListener('abort', () => reject(new Error('aborted'))); }),
    });
    const s = h.session(confidential, 'run-cancel');
    await s.initialize();
    const pending = s.send({ jsonrpc: '2.0', id: 'c1', method: 'tools/call', params: { name: 'payments.lookup', arguments: { reference: 'PMT-771' } } });
    await running;
    expect(await s.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'c1' } })).toBeNull();
    const r = resultOf(await pending);
    expect(r.isError).toBe(true);
    expect((await h.calls('run-cancel'))[0]).toMatchObject({ outcome: 'cancelled', attempts: 1 });
  });

  it('outputSchema is enforced on structuredContent: a violation is isError and recorded output_invalid', async () => {
    const def = lookupDef({ outputSchema: { type: 'object', properties: { status: { type: 'string' } }, required: ['status'] } });
    const h = await makeHarness([def], { 'payments.lookup': () => ({ content: [{ type: 'text', text: 'x' }], structuredContent: { status: 42 } }) });
    const s = h.session(confidential, 'run-out');
    await s.initialize();
    const r = resultOf(await s.request('tools/call', { name: 'payments.lookup', arguments: { reference: 'PMT-771' } }));
    expect(r.isError).toBe(true);
    expect(textOf(r)).toContain('$.status: expected type string, got integer');
    expect((await h.calls('run-out'))[0]).toMatchObject({ outcome: 'output_invalid' });
  });

  it('run id: params._meta io.estate/runId wins over the session id; deprecated versions carry their notice', async () => {
    const h = await makeHarness([lookupDef()], lookup);
    await h.deprecate('payments.lookup', '1.0.0', 'use 2.x');
    const s = h.session(confidential, 'sess');
    await s.initialize();
    const r = resultOf(await s.request('tools/call', { name: 'payments.lookup', arguments: { reference: 'PMT-771', include_legs: false }, _meta: { 'io.estate/version': '1.0.0', 'io.estate/runId': 'my-run' } }));
    expect(r._meta).toEqual({ 'io.estate/version': '1.0.0', 'io.estate/runId': 'my-run', 'io.estate/deprecated': { reason: 'use 2.x', at: expect.any(String) } });
    expect(await h.calls('my-run')).toHaveLength(1);
    expect(await h.calls('sess')).toHaveLength(0);
  });

  it('an unpinned call uses the version the session last listed; retired meanwhile → Unknown tool until it lists again', async () => {
    const h = await makeHarness([lookupDef()], lookup);
    const s = h.session(confidential);
    await s.initialize();
    resultOf(await s.request('tools/list'));
    await h.publish(lookupDef({ version: '1.1.0', description: 'newer', inputSchema: { ...lookupDef().inputSchema, properties: { ...(lookupDef().inputSchema.properties as object), note: { type: 'string' } } } }));
    const call = () => s.request('tools/call', { name: 'payments.lookup', arguments: { reference: 'PMT-771' } });
    expect((resultOf(await call())._meta as Record<string, unknown>)['io.estate/version']).toBe('1.0.0');
    const fresh = h.session(confidential);
    await fresh.initialize();
    expect((resultOf(await fresh.request('tools/call', { name: 'payments.lookup', arguments: { reference: 'PMT-771' } }))._meta as Record<string, unknown>)['io.estate/version']).toBe('1.1.0');
    await h.retire('payments.lookup', '1.0.0');
    expect(errorOf(await call())).toEqual({ code: -32602, message: 'Unknown tool: payments.lookup' });
    resultOf(await s.request('tools/list'));
    expect((resultOf(await call())._meta as Record<string, unknown>)['io.estate/version']).toBe('1.1.0');
  });

  it('a version whose handler is not bound here is neither listed nor callable', async () => {
    const h = await makeHarness([lookupDef({ handler: 'elsewhere' })], lookup);
    const s = h.session(confidential);
    await s.initialize();
    expect(resultOf(await s.request('tools/list')).tools).toEqual([]);
    expect(errorOf(await s.request('tools/call', { name: 'payments.lookup', arguments: { reference: 'PMT-771' } }))).toEqual({ code: -32602, message: 'Unknown tool: payments.lookup' });
  });
});
