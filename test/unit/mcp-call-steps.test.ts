/**
 * The tools/call steps and ports on their own: the executor port (which handler names are proxies, when a call may
 * run again), the input-round step (no rounds for a proxied non_idempotent call), the admission step, and the one
 * method table both paths dispatch through. Plus the pipeline in process: a proxied non_idempotent executor that asks
 * a question on a 2026-07-28 call runs once, while a module handler and a read-only proxy keep their rounds.
 */
import { describe, expect, it } from 'vitest';
import { makePrincipal } from '#domain/access';
import { RUN_ID_PATTERN } from '#domain/events';
import { createSchemaCompiler } from '#domain/schema-compiler';
import type { SideEffect } from '#domain/types';
import type { HandlerMap } from '#handlers/types';
import { createCompiledSchemaCache } from '#mcp/compiled-schemas';
import type { JsonRpcResponse } from '#mcp/jsonrpc';
import { countedMethod, findMethod } from '#mcp/method-table';
import { handleStateless, newRunId } from '#mcp/stateless';
import fc from 'fast-check';
import { canonicalHash } from '#domain/hash';
import { admitArguments, argumentLimitRefusal } from '#mcp/tool-call/admit';
import { argsHashOf } from '#mcp/tool-call/args-hash';
import { executorsFrom, mayRunAgain, type ToolExecutor } from '#mcp/tool-call/executor';
import { openInputRounds } from '#mcp/tool-call/input-round';
import type { CallParams } from '#mcp/tool-call/read-request';
import { RUN_ID_META } from '#mcp/tool-projection';
import { aDefinition } from '../fixtures/builders.ts';
import { makeHarness, resultOf, textOf } from '../fixtures/handlers/harness.ts';

const ok = () => ({ content: [{ type: 'text' as const, text: 'ok' }] });

describe('the executor port', () => {
  const executors = executorsFrom({ 'payments.lookup': ok, 'upstream:fx/ask': ok } as HandlerMap);

  it('a module handler replays, an upstream:<ns>/<t> name is a proxy that re-sends; an unbound or inherited name has none', () => {
    expect(executors('payments.lookup')?.rerun).toBe('replays');
    expect(executors('upstream:fx/ask')?.rerun).toBe('resends');
    expect(executors('payments.other')).toBeUndefined();
    expect(executors('constructor')).toBeUndefined();
    expect(executors('__proto__')).toBeUndefined();
  });

  it.each<[ToolExecutor['rerun'], SideEffect, boolean]>([
    ['replays', 'none', true],
    ['replays', 'idempotent', true],
    ['replays', 'non_idempotent', true],
    ['resends', 'none', true],
    ['resends', 'idempotent', true],
    ['resends', 'non_idempotent', false],
  ])('an executor that %s a %s call may run it again: %s', (rerun, sideEffect, expected) => {
    expect(mayRunAgain({ rerun, execute: () => Promise.reject(new Error('unused')) }, sideEffect)).toBe(expected);
  });
});

describe('the input-round step', () => {
  const v = (sideEffect: SideEffect) => ({ name: 'fx.ask', version: '1.0.0', sideEffect }) as never;
  const params = (input?: CallParams['input']): CallParams => ({ name: 'fx.ask', meta: {}, runId: 'r', received: {}, ...(input ? { input } : {}) });
  const proxy = executorsFrom({ 'upstream:fx/ask': ok } as HandlerMap)('upstream:fx/ask') as ToolExecutor;
  const input = { responses: { q: { action: 'accept', content: { name: 'Alice' } } }, capabilities: { elicitation: {} } };
  const caller = makePrincipal({});
  const stateSettings = { ttlMs: 60_000, now: () => 0 };

  it('opens no rounds on a stateful call (its questions go to the client mid-call)', () => {
    expect(openInputRounds(params(), v('none'), proxy, 'h', caller, stateSettings)).toBeUndefined();
  });

  it('reads no clock for a call that brings no requestState (the hot path does no extra work)', () => {
    const clockless = { ttlMs: 60_000, now: (): number => { throw new Error('the clock was read'); } };
    expect(openInputRounds(params(input), v('none'), proxy, 'h', caller, clockless)?.kind).toBe('rounds');
    expect(() => openInputRounds(params({ ...input, state: 'x.y' }), v('none'), proxy, 'h', caller, clockless)).toThrow(/integrity|clock/);
  });

  it('opens rounds for a read-only proxy, and none for a non_idempotent one: its questions are refused, answers or not', async () => {
    expect(openInputRounds(params(input), v('none'), proxy, 'h', caller, stateSettings)?.kind).toBe('rounds');
    const once = openInputRounds(params({ ...input, capabilities: { elicitation: {}, sampling: {}, roots: {} } }), v('non_idempotent'), proxy, 'h', caller, stateSettings);
    expect(once?.kind).toBe('once');
    if (once?.kind !== 'once') return;
    await expect(once.askers.elicit?.({ message: 'Name?', requestedSchema: { type: 'object', properties: {} } }, { key: 'q' })).rejects.toThrow(/never sent twice/);
    await expect(once.askers.sample?.({ messages: [], maxTokens: 1 })).rejects.toThrow(/never sent twice/);
    await expect(once.askers.listRoots?.()).rejects.toThrow(/never sent twice/);
  });

  it('a non_idempotent proxy\'s question the client never declared is a missing capability, not a refused round', async () => {
    const once = openInputRounds(params({ responses: {}, capabilities: { elicitation: {} } }), v('non_idempotent'), proxy, 'h', caller, stateSettings);
    if (once?.kind !== 'once') throw new Error('expected no rounds');
    await expect(once.askers.sample?.({ messages: [], maxTokens: 1 })).rejects.toMatchObject({ reason: 'capability', capability: 'sampling' });
    await expect(once.askers.elicit?.({ message: 'Name?', requestedSchema: { type: 'object', properties: {} } })).rejects.toMatchObject({ reason: 'unavailable' });
  });
});

describe('the admission step', () => {
  const cache = createCompiledSchemaCache(createSchemaCompiler());
  const version = (sideEffect: SideEffect) => {
    const definition = aDefinition({ sideEffect, inputSchema: { type: 'object', properties: { n: { type: 'integer' } }, additionalProperties: false } });
    return { name: definition.name, version: definition.version, sideEffect, details: { definition, schemaHash: 's', definitionHash: 'd', reasons: [] } } as never;
  };

  it('repairs where the side effect allows, validates only for non_idempotent, and refuses over-limit arguments before compiling', async () => {
    const v = version('idempotent');
    expect(admitArguments(v, await cache.ready(v), { n: '3', extra: true })).toEqual({ ok: true, args: { n: 3 }, repairs: [{ path: '$.extra', action: 'dropped' }, { path: '$.n', action: 'coerced' }] });
    const ni = version('non_idempotent');
    expect(admitArguments(ni, await cache.ready(ni), { n: '3' })).toMatchObject({ ok: false, refusal: { isError: true } });
    let deep: unknown = 1;
    for (let i = 0; i < 100; i++) deep = { d: deep };
    // The limits need no validator: a version never called is not compiled for them.
    const cold = { name: 'payments.lookup', version: '2.0.0', definition: aDefinition({ version: '2.0.0' }) } as never;
    expect(argumentLimitRefusal(deep)).toMatchObject({ isError: true });
    expect(argumentLimitRefusal({ n: 3 })).toBeNull();
    expect(cache.compiled(cold)).toBeUndefined();
    expect(cache.compiled(v)).toBeDefined();
  });
});

describe('the arguments hash', () => {
  it("is the pure core's canonicalHash, computed with Node's sha256", () => {
    fc.assert(fc.property(fc.jsonValue(), (v) => argsHashOf(v) === canonicalHash(v)), { numRuns: 300 });
    expect(argsHashOf({ b: 1, a: ['é', null] })).toBe(canonicalHash({ a: ['é', null], b: 1 }));
  });
});

describe('the one method table', () => {
  it('says which family has which method, own keys only', () => {
    for (const m of ['initialize', 'ping', 'logging/setLevel']) expect([!!findMethod(m, 'stateful'), !!findMethod(m, 'stateless')]).toEqual([true, false]);
    for (const m of ['server/discover', 'subscriptions/listen']) expect([!!findMethod(m, 'stateful'), !!findMethod(m, 'stateless')]).toEqual([false, true]);
    for (const m of ['tools/list', 'tools/call']) expect([!!findMethod(m, 'stateful'), !!findMethod(m, 'stateless')]).toEqual([true, true]);
    for (const m of ['valueOf', 'constructor', '__proto__', 'resources/list']) expect([findMethod(m, 'stateful'), findMethod(m, 'stateless')]).toEqual([undefined, undefined]);
    expect([findMethod('initialize', 'stateful')?.beforeInitialize, findMethod('ping', 'stateful')?.beforeInitialize, findMethod('tools/list', 'stateful')?.beforeInitialize]).toEqual([true, true, undefined]);
  });

  it('labels metrics by the table: a method a client invents is `other`', () => {
    expect([countedMethod('tools/call'), countedMethod('server/discover'), countedMethod('made/up'), countedMethod('toString')]).toEqual(['tools/call', 'server/discover', 'other', 'other']);
  });
});

describe('the pipeline, in process: 2026-07-28 questions from a proxied executor', () => {
  const sent: Record<string, number> = {};
  // Stands in for the upstream proxy (src/upstream/link.ts relays the upstream's question to ctx.elicit and tells the
  // upstream when it is refused): counts what would reach the upstream.
  const asking = (name: string) => async (_args: Record<string, unknown>, ctx: Parameters<HandlerMap[string]>[1]) => {
    sent[name] = (sent[name] ?? 0) + 1;
    try {
      const r = await ctx.elicit!({ message: 'Name?', requestedSchema: { type: 'object', properties: { name: { type: 'string' } } } }, { key: 'name' });
      return { content: [{ type: 'text' as const, text: `answered: ${String(r.content?.name)}` }] };
    } catch (e) {
      return { content: [{ type: 'text' as const, text: `no answer: ${(e as Error).message}` }], isError: true };
    }
  };
  const handlers = { 'upstream:fx/ask': asking('ask'), 'upstream:fx/ask_ro': asking('ask_ro'), 'fx.local_ask': asking('local_ask') } as HandlerMap;
  const defs = [
    aDefinition({ name: 'fx.ask', handler: 'upstream:fx/ask', sideEffect: 'non_idempotent', inputSchema: { type: 'object' }, access: { classification: 'public' } }),
    aDefinition({ name: 'fx.ask_ro', handler: 'upstream:fx/ask_ro', sideEffect: 'none', inputSchema: { type: 'object' }, access: { classification: 'public' } }),
    aDefinition({ name: 'fx.local_ask', handler: 'fx.local_ask', sideEffect: 'non_idempotent', inputSchema: { type: 'object' }, access: { classification: 'public' } }),
  ];
  let id = 1;
  const answering = async (name: string, runId: string) => {
    const h = await makeHarness(defs, handlers);
    let extra: Record<string, unknown> = {};
    for (let rounds = 0; rounds < 4; rounds++) {
      const meta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': { elicitation: {} }, [RUN_ID_META]: runId };
      const out = await handleStateless(h.core, { jsonrpc: '2.0', id: id++, method: 'tools/call', params: { name, arguments: {}, ...extra, _meta: meta } }, { principal: makePrincipal({}) });
      const r = resultOf((out as { response: JsonRpcResponse }).response);
      if (r.resultType !== 'input_required') {
        await h.recorder.flush();
        return { r, rounds, records: await h.calls(runId) };
      }
      extra = { inputResponses: { name: { action: 'accept', content: { name: 'Alice' } } }, requestState: r.requestState };
    }
    throw new Error('still asking');
  };

  it('a proxied non_idempotent call runs once: its question is refused and that one execution is recorded', async () => {
    const { r, rounds, records } = await answering('fx.ask', 'steps-ni');
    expect([rounds, sent.ask, r.isError, records.map((c) => c.outcome)]).toEqual([0, 1, true, ['tool_error']]);
    expect(textOf(r)).toMatch(/never sent twice/);
  });

  it('a read-only proxy and a module handler keep their rounds (sending again is allowed; a handler replays)', async () => {
    const ro = await answering('fx.ask_ro', 'steps-ro');
    expect([ro.rounds, sent.ask_ro, textOf(ro.r)]).toEqual([1, 2, 'answered: Alice']);
    const local = await answering('fx.local_ask', 'steps-local');
    expect([local.rounds, sent.local_ask, textOf(local.r), local.records.map((c) => c.outcome)]).toEqual([1, 2, 'answered: Alice', ['ok']]);
  });
});

describe("a stateless request's run id", () => {
  it('is a version-7 UUID whose order follows time', () => {
    const ids = [newRunId(1_700_000_000_000), newRunId(1_700_000_000_001), newRunId(1_800_000_000_000)];
    for (const id of ids) expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect([...ids].sort()).toEqual(ids);
    expect(newRunId(1_700_000_000_000)).not.toBe(newRunId(1_700_000_000_000));
    expect(newRunId()).toMatch(RUN_ID_PATTERN);
  });
});
