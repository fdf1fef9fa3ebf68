/**
 * Rules of SPEC §2-§3 that had no test of their own: a pinned version the caller may not see is as unknown as a
 * missing one (2025 sessions and 2026-07-28 stateless alike); what repair changed is on the result; a revision without
 * structuredContent does not get it; the call record names the client; the Tool fields of 2025-06-18 and 2026-07-28;
 * a RETRYABLE handler that times out is retried with backoff, a non_idempotent one never.
 */
import { describe, expect, it } from 'vitest';
import { makePrincipal } from '#domain/access';
import { ExecutorFailure } from '#handlers/executor-failure';
import type { HandlerMap } from '#handlers/types';
import type { JsonRpcCall } from '#mcp/jsonrpc';
import { runHandler } from '#mcp/run-handler';
import { handleStateless } from '#mcp/stateless';
import { aDefinition } from '../fixtures/builders.ts';
import { errorOf, makeHarness, resultOf, textOf, type Harness } from '../fixtures/handlers/harness.ts';

const META = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };
let nextId = 1;
/** A 2026-07-28 stateless request, answered by the same core as the sessions. */
const stateless = async (h: Harness, principal: ReturnType<typeof makePrincipal>, method: string, params: Record<string, unknown> = {}) => {
  const message = { jsonrpc: '2.0', id: nextId++, method, params: { ...params, _meta: { ...META, ...((params._meta as object | undefined) ?? {}) } } } as JsonRpcCall;
  const out = await handleStateless(h.core, message, { principal });
  if (out.kind !== 'response') throw new Error(`expected a response, got ${out.kind}`);
  return out.response;
};

const acme = makePrincipal({ tenant: 'acme', scopes: ['payments.read'], clearance: 'confidential' });
/** Sees 1.0.0 (internal, no scope) but not 2.0.0 (confidential, needs payments.read). */
const limited = makePrincipal({ tenant: 'acme', scopes: [], clearance: 'internal' });
const lookup: HandlerMap = { 'payments.lookup': (args) => ({ content: [{ type: 'text', text: `looked up ${String(args.reference)}` }] }) };

describe('a pinned version the caller may not see', () => {
  const setup = async () => {
    const h = await makeHarness([aDefinition({ access: { tenants: ['acme'], classification: 'internal' } })], lookup);
    await h.publish(aDefinition({ version: '2.0.0', access: { tenants: ['acme'], classification: 'confidential', requiredScopes: ['payments.read'] } }));
    return h;
  };
  const pin = (version: string, name = 'payments.lookup') => ({ name, arguments: { reference: 'PMT-771' }, _meta: { 'io.estate/version': version } });
  const NOT_FOUND = { code: -32602, message: 'Unknown tool: payments.lookup' };

  it('on a 2025 session: the same Unknown tool (-32602, no data) as a version or a tool that does not exist', async () => {
    const h = await setup();
    for (const rev of ['2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05']) {
      const s = h.session(limited);
      await s.initialize(rev);
      const invisible = errorOf(await s.request('tools/call', pin('2.0.0')));
      expect(invisible, rev).toEqual(NOT_FOUND);
      expect(invisible, rev).not.toHaveProperty('data');
      expect(errorOf(await s.request('tools/call', pin('9.9.9'))), rev).toEqual(invisible);
      expect(errorOf(await s.request('tools/call', pin('2.0.0', 'no.such'))), rev).toEqual({ code: -32602, message: 'Unknown tool: no.such' });
      // The version it may see runs; so does 2.0.0 for a caller entitled to it.
      expect(resultOf(await s.request('tools/call', pin('1.0.0')))._meta).toMatchObject({ 'io.estate/version': '1.0.0' });
      const insider = h.session(acme);
      await insider.initialize(rev);
      expect(resultOf(await insider.request('tools/call', pin('2.0.0')))._meta).toMatchObject({ 'io.estate/version': '2.0.0' });
    }
  });

  it('on 2026-07-28 stateless: the same', async () => {
    const h = await setup();
    const invisible = await stateless(h, limited, 'tools/call', pin('2.0.0'));
    expect(invisible).toEqual({ jsonrpc: '2.0', id: expect.any(Number) as number, error: NOT_FOUND });
    expect(errorOf(await stateless(h, limited, 'tools/call', pin('9.9.9')))).toEqual(NOT_FOUND);
    expect(errorOf(await stateless(h, limited, 'tools/call', { ...pin('2.0.0'), name: 'no.such' }))).toEqual({ code: -32602, message: 'Unknown tool: no.such' });
    expect(resultOf(await stateless(h, limited, 'tools/call', pin('1.0.0')))._meta).toMatchObject({ 'io.estate/version': '1.0.0' });
    expect(resultOf(await stateless(h, acme, 'tools/call', pin('2.0.0')))._meta).toMatchObject({ 'io.estate/version': '2.0.0' });
  });
});

describe('_meta["io.estate/repairs"] on a repaired call', () => {
  const call = { name: 'payments.lookup', arguments: { reference: 'PMT-771', include_legs: 'true', urgent: true } };
  const expected = [
    { path: '$.include_legs', action: 'coerced' },
    { path: '$.urgent', action: 'dropped' },
  ];
  const sorted = (rs: unknown) => [...(rs as { path: string }[])].sort((a, b) => a.path.localeCompare(b.path));

  it('lists what repair changed, on a 2025 session and on 2026-07-28; absent when nothing was repaired', async () => {
    const h = await makeHarness([aDefinition({ access: { tenants: ['acme'] } })], lookup);
    const s = h.session(acme, 'run-repairs');
    await s.initialize('2025-11-25');
    const r = resultOf(await s.request('tools/call', call));
    expect(textOf(r)).toBe('looked up PMT-771');
    expect(sorted((r._meta as Record<string, unknown>)['io.estate/repairs'])).toEqual(expected);
    // The same list as the call record (SPEC §4 `repairs`).
    expect(sorted((await h.calls('run-repairs'))[0]?.repairs)).toEqual(expected);
    const clean = resultOf(await s.request('tools/call', { name: 'payments.lookup', arguments: { reference: 'PMT-771', include_legs: false } }));
    expect(clean._meta).toEqual({ 'io.estate/version': '1.0.0', 'io.estate/runId': 'run-repairs' });

    const st = resultOf(await stateless(h, acme, 'tools/call', call));
    expect(sorted((st._meta as Record<string, unknown>)['io.estate/repairs'])).toEqual(expected);
    const stClean = resultOf(await stateless(h, acme, 'tools/call', { name: 'payments.lookup', arguments: { reference: 'PMT-771', include_legs: false } }));
    expect(stClean._meta).not.toHaveProperty(['io.estate/repairs']);
  });

  it('a default filled in is reported as defaulted; a refused call (non_idempotent) carries no repairs', async () => {
    const schema = { type: 'object', properties: { reference: { type: 'string' }, limit: { type: 'integer', default: 10 } }, required: ['reference'], additionalProperties: false };
    const h = await makeHarness(
      [
        aDefinition({ name: 'payments.search', handler: 'payments.lookup', inputSchema: schema as never, access: { tenants: ['acme'] } }),
        aDefinition({ name: 'payments.pay', handler: 'payments.lookup', sideEffect: 'non_idempotent', access: { tenants: ['acme'] } }),
      ],
      lookup,
    );
    const s = h.session(acme);
    await s.initialize('2025-06-18');
    const r = resultOf(await s.request('tools/call', { name: 'payments.search', arguments: { reference: 'x' } }));
    expect((r._meta as Record<string, unknown>)['io.estate/repairs']).toEqual([{ path: '$.limit', action: 'defaulted' }]);
    const refused = resultOf(await s.request('tools/call', { name: 'payments.pay', ...{ arguments: call.arguments } }));
    expect(refused.isError).toBe(true);
    expect(refused._meta).not.toHaveProperty(['io.estate/repairs']);
  });
});

describe('structuredContent per revision', () => {
  const def = aDefinition({ access: { tenants: ['acme'] }, outputSchema: { type: 'object', properties: { status: { type: 'string' } }, required: ['status'] } });
  const handlers: HandlerMap = { 'payments.lookup': () => ({ content: [{ type: 'text', text: '{"status":"settled"}' }], structuredContent: { status: 'settled' } }) };

  it('is dropped on 2025-03-26 and 2024-11-05 (no structuredContent there), kept on 2025-06-18, 2025-11-25 and 2026-07-28', async () => {
    const h = await makeHarness([def], handlers);
    for (const [rev, kept] of [['2024-11-05', false], ['2025-03-26', false], ['2025-06-18', true], ['2025-11-25', true]] as const) {
      const s = h.session(acme);
      await s.initialize(rev);
      const r = resultOf(await s.request('tools/call', { name: 'payments.lookup', arguments: { reference: 'PMT-771' } }));
      expect(r.isError, rev).toBeUndefined();
      expect(textOf(r), rev).toBe('{"status":"settled"}');
      if (kept) expect(r.structuredContent, rev).toEqual({ status: 'settled' });
      else expect(r, rev).not.toHaveProperty('structuredContent');
    }
    const st = resultOf(await stateless(h, acme, 'tools/call', { name: 'payments.lookup', arguments: { reference: 'PMT-771' } }));
    expect(st.structuredContent).toEqual({ status: 'settled' });
  });

  it('the output is still checked against the outputSchema on 2025-03-26 (the record says so)', async () => {
    const bad: HandlerMap = { 'payments.lookup': () => ({ content: [{ type: 'text', text: 'x' }], structuredContent: { status: 42 } }) };
    const h = await makeHarness([def], bad);
    const s = h.session(acme, 'run-old');
    await s.initialize('2025-03-26');
    const r = resultOf(await s.request('tools/call', { name: 'payments.lookup', arguments: { reference: 'PMT-771' } }));
    expect(r.isError).toBe(true);
    expect((await h.calls('run-old'))[0]).toMatchObject({ outcome: 'output_invalid' });
  });
});

describe('the ToolCalled record', () => {
  it("carries the client's name and version from initialize, and the revision", async () => {
    const h = await makeHarness([aDefinition({ access: { tenants: ['acme'] } })], lookup);
    const s = h.session(acme, 'run-client');
    await s.request('initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'claude-desktop', version: '0.14.2' } });
    await s.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    resultOf(await s.request('tools/call', { name: 'payments.lookup', arguments: { reference: 'PMT-771' } }));
    expect((await h.calls('run-client'))[0]).toMatchObject({ client: { name: 'claude-desktop', version: '0.14.2' }, protocolVersion: '2025-06-18' });
  });

  it('on 2026-07-28, from _meta clientInfo', async () => {
    const h = await makeHarness([aDefinition({ access: { tenants: ['acme'] } })], lookup);
    resultOf(
      await stateless(h, acme, 'tools/call', {
        name: 'payments.lookup',
        arguments: { reference: 'PMT-771' },
        _meta: { 'io.modelcontextprotocol/clientInfo': { name: 'cursor', version: '2.1.0' }, 'io.estate/runId': 'run-stateless-client' },
      }),
    );
    expect((await h.calls('run-stateless-client'))[0]).toMatchObject({ client: { name: 'cursor', version: '2.1.0' }, protocolVersion: '2026-07-28' });
  });
});

describe('Tool fields per revision', () => {
  const def = aDefinition({
    access: { tenants: ['acme'] },
    annotations: { readOnlyHint: true },
    outputSchema: { type: 'object', properties: { status: { type: 'string' } } },
  } as never);
  const firstTool = (r: Record<string, unknown>) => (r.tools as Record<string, unknown>[])[0] as Record<string, unknown>;

  it('2025-06-18: name, title, description, inputSchema, outputSchema, annotations, _meta — nothing else', async () => {
    const h = await makeHarness([def], lookup);
    const s = h.session(acme);
    await s.initialize('2025-06-18');
    const tool = firstTool(resultOf(await s.request('tools/list')));
    expect(Object.keys(tool).sort()).toEqual(['_meta', 'annotations', 'description', 'inputSchema', 'name', 'outputSchema', 'title']);
  });

  it('2026-07-28: the same set, over a stateless tools/list', async () => {
    const h = await makeHarness([def], lookup);
    const tool = firstTool(resultOf(await stateless(h, acme, 'tools/list')));
    expect(Object.keys(tool).sort()).toEqual(['_meta', 'annotations', 'description', 'inputSchema', 'name', 'outputSchema', 'title']);
    expect(tool._meta).toEqual({ 'io.estate/version': '1.0.0' });
  });
});

describe('retries of a handler that times out', () => {
  const hang = (counter: { n: number }): HandlerMap => ({
    'slow.hang': (_a, ctx) =>
      new Promise((resolve) => {
        counter.n++;
        ctx.signal.addEventListener('abort', () => resolve({ content: [] }));
      }),
  });

  for (const [sideEffect, invocations] of [['none', 3], ['idempotent', 3], ['non_idempotent', 1]] as const) {
    it(`${sideEffect}: the handler is invoked ${invocations} time(s); the call is recorded as a timeout with that many attempts`, async () => {
      const counter = { n: 0 };
      const h = await makeHarness([aDefinition({ name: 'slow.tool', handler: 'slow.hang', sideEffect, timeoutMs: 20, access: { tenants: ['acme'] } })], hang(counter));
      const s = h.session(acme, `run-${sideEffect}`);
      await s.initialize();
      const r = resultOf(await s.request('tools/call', { name: 'slow.tool', arguments: { reference: 'PMT-771' } }));
      expect(r.isError).toBe(true);
      expect(textOf(r)).toBe('Tool timed out after 20 ms');
      expect(counter.n).toBe(invocations);
      expect((await h.calls(`run-${sideEffect}`))[0]).toMatchObject({ outcome: 'timeout', attempts: invocations });
    });
  }

  it('a RETRYABLE timeout backs off (retry 1, then retry 2) before each new attempt; a non_idempotent one is never re-run', async () => {
    const log = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };
    const run = async (sideEffect: 'idempotent' | 'non_idempotent') => {
      const events: string[] = [];
      const out = await runHandler({
        // A handler that stops when its signal says so (one that does not is not repeated: the next test).
        handler: (_a, ctx) => (events.push('attempt'), new Promise((_, reject) => ctx.signal.addEventListener('abort', () => reject(new Error('stopped'))))),
        args: {},
        context: { principal: acme, runId: 'r', tool: { name: 't', version: '1.0.0', schemaHash: 'h' }, log } as never,
        sideEffect,
        timeoutMs: 10,
        backoffMs: (retry) => (events.push(`backoff ${retry}`), retry * 5),
      });
      return { events, out };
    };
    const retryable = await run('idempotent');
    expect(retryable.events).toEqual(['attempt', 'backoff 1', 'attempt', 'backoff 2', 'attempt']);
    expect(retryable.out).toMatchObject({ outcome: 'timeout', attempts: 3 });
    const once = await run('non_idempotent');
    expect(once.events).toEqual(['attempt']);
    expect(once.out).toMatchObject({ outcome: 'timeout', attempts: 1 });
  });

  it('a handler that runs on past its deadline is not repeated beside itself; its execution is told until it ends, and its end logged', async () => {
    const warned: string[] = [];
    const log = { debug: () => undefined, info: () => undefined, warn: (m: string) => void warned.push(m), error: () => undefined };
    let finish!: () => void;
    let attempts = 0;
    const executions: Promise<void>[] = [];
    const out = await runHandler({
      // Ignores its signal: still running when its deadline gives up on it.
      handler: () => (attempts++, new Promise((resolve) => (finish = () => resolve({ content: [] })))),
      args: {},
      context: { principal: acme, runId: 'r', tool: { name: 't', version: '1.0.0', schemaHash: 'h' }, log } as never,
      sideEffect: 'idempotent',
      timeoutMs: 10,
      backoffMs: () => 5,
      onExecution: (ended) => void executions.push(ended),
    });
    expect(out).toMatchObject({ outcome: 'timeout', attempts: 1 });
    expect(attempts).toBe(1);
    expect(executions).toHaveLength(1);
    let ended = false;
    void executions[0]?.then(() => (ended = true));
    await new Promise((r) => setImmediate(r));
    expect(ended).toBe(false);
    finish();
    await executions[0];
    expect(warned).toContain('handler ended after its call was given up');
  });

  it('an attempt that asked the client something is not repeated: a timeout or a retryable failure after it ends the call', async () => {
    const log = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };
    const questions: string[] = [];
    // As clientAskers does: `asked` is called when a question is sent.
    const askers = (_signal: () => AbortSignal, asked: () => void) => ({
      elicit: async () => (asked(), questions.push('elicit'), { action: 'accept' as const, content: {} }),
      sample: async () => (asked(), questions.push('sample'), { role: 'assistant' as const, content: { type: 'text' as const, text: 'ok' }, model: 'm' }),
      listRoots: async () => (asked(), questions.push('roots'), { roots: [] }),
    });
    const run = async (ask: 'elicit' | 'sample' | 'listRoots' | 'nothing', then: 'hang' | 'fail') => {
      let attempts = 0;
      const out = await runHandler({
        handler: async (_a, ctx) => {
          attempts++;
          if (ask === 'elicit') await ctx.elicit?.({ message: 'which account?', requestedSchema: { type: 'object', properties: {} } });
          if (ask === 'sample') await ctx.sample?.({ messages: [], maxTokens: 10 });
          if (ask === 'listRoots') await ctx.listRoots?.();
          if (then === 'fail') throw new ExecutorFailure('upstream_unavailable', 'upstream u unavailable', true);
          // Hangs until its deadline's signal stops it.
          return new Promise((_, reject) => ctx.signal.addEventListener('abort', () => reject(new Error('stopped'))));
        },
        args: {},
        context: { principal: acme, runId: 'r', tool: { name: 't', version: '1.0.0', schemaHash: 'h' }, log } as never,
        withSignal: askers,
        sideEffect: 'none',
        timeoutMs: 10,
        backoffMs: () => 1,
      });
      return { attempts, out };
    };
    for (const ask of ['elicit', 'sample', 'listRoots'] as const) {
      expect(await run(ask, 'hang')).toMatchObject({ attempts: 1, out: { outcome: 'timeout', attempts: 1 } });
      expect(await run(ask, 'fail')).toMatchObject({ attempts: 1, out: { outcome: 'upstream_unavailable', attempts: 1 } });
    }
    expect(questions).toEqual(['elicit', 'elicit', 'sample', 'sample', 'roots', 'roots']);
    // Without a question, the same failures are retried as before.
    expect(await run('nothing', 'hang')).toMatchObject({ attempts: 3, out: { outcome: 'timeout', attempts: 3 } });
    expect(await run('nothing', 'fail')).toMatchObject({ attempts: 3, out: { outcome: 'upstream_unavailable', attempts: 3 } });
  });
});
