/**
 * InputRequiredResult (SEP-2322) on stateless 2026-07-28 tools/call, through the harness: a handler's unanswered
 * ctx.elicit / ctx.sample / ctx.listRoots ends the run with the question(s) and a signed requestState; the follow-up
 * re-runs the handler with the recorded answers. Only the final, executed call is recorded.
 */
import { describe, expect, it } from 'vitest';
import { createHmac } from 'node:crypto';
import { makePrincipal } from '#domain/access';
import { canonicalJson } from '#domain/hash';
import type { Principal } from '#domain/types';
import type { HandlerMap } from '#handlers/types';
import { ClientRequestError } from '#mcp/client-requests';
import { INPUT_REQUIRED, MAX_STATE_CLOCK_SKEW_MS, openState, resolveStateKey, sealState } from '#mcp/input-required';
import type { JsonRpcResponse } from '#mcp/jsonrpc';
import { handleStateless, type StatelessOutcome } from '#mcp/stateless';
import { RUN_ID_META } from '#mcp/tool-projection';
import { aDefinition } from '../fixtures/builders.ts';
import { errorOf, makeHarness, resultOf, textOf } from '../fixtures/handlers/harness.ts';

const ALL = { elicitation: {}, sampling: {}, roots: {} };
const schemaOf = (field: string) => ({ type: 'object', properties: { [field]: { type: 'string' } }, required: [field] });
const accept = (content: Record<string, unknown>) => ({ action: 'accept', content });
const runs: Record<string, number> = {};
const count = (name: string) => (runs[name] = (runs[name] ?? 0) + 1);
const captured: unknown[] = [];

const handlers: HandlerMap = {
  greet: async (args, ctx) => {
    count('greet');
    const r = await ctx.elicit!({ message: `Name for ${String(args.reference)}?`, requestedSchema: schemaOf('name') }, { key: 'user_name' });
    return { content: [{ type: 'text', text: `Hello, ${String(r.content?.name)}!` }] };
  },
  'two.steps': async (_args, ctx) => {
    count('twoSteps');
    const a = await ctx.elicit!({ message: 'Step 1', requestedSchema: schemaOf('name') }, { key: 'step1' });
    const b = await ctx.elicit!({ message: 'Step 2', requestedSchema: schemaOf('color') }, { key: 'step2' });
    return { content: [{ type: 'text', text: `${String(a.content?.name)} likes ${String(b.content?.color)}` }] };
  },
  // No keys: the defaults name each question by method and position.
  'all.at.once': async (_args, ctx) => {
    count('allAtOnce');
    const [n, s, r] = await Promise.all([
      ctx.elicit!({ message: 'Name?', requestedSchema: schemaOf('name') }),
      ctx.sample!({ messages: [{ role: 'user', content: { type: 'text', text: 'Greet' } }], maxTokens: 10 }),
      ctx.listRoots!(),
    ]);
    const said = Array.isArray(s.content) ? '' : String(s.content.text);
    return { content: [{ type: 'text', text: `${said} ${String(n.content?.name)} in ${r.roots.map((x) => x.uri).join(',')}` }] };
  },
  // Swallows every error, the internal signal included: the call must still answer input_required.
  swallowing: async (_args, ctx) => {
    try {
      await ctx.elicit!({ message: 'Name?', requestedSchema: schemaOf('name') }, { key: 'n' });
      return { content: [{ type: 'text', text: 'answered' }] };
    } catch (e) {
      captured.push(e);
      return { content: [{ type: 'text', text: 'gave up' }] };
    }
  },
};

const defs = [
  aDefinition({ name: 'greet', handler: 'greet', access: { classification: 'public' } }),
  aDefinition({ name: 'two.steps', handler: 'two.steps', inputSchema: { type: 'object' }, access: { classification: 'public' } }),
  aDefinition({ name: 'all.at.once', handler: 'all.at.once', inputSchema: { type: 'object' }, access: { classification: 'public' } }),
  aDefinition({ name: 'swallowing', handler: 'swallowing', inputSchema: { type: 'object' }, access: { classification: 'public' } }),
];

const principal = makePrincipal({});
let nextId = 1;

const setup = async (options: { now?: () => number; stateTtlMs?: number } = {}) => {
  const h = await makeHarness(defs, handlers, options);
  const call = async (params: Record<string, unknown>, opts: { runId?: string; capabilities?: Record<string, unknown>; principal?: Principal } = {}): Promise<JsonRpcResponse> => {
    const meta = {
      'io.modelcontextprotocol/protocolVersion': '2026-07-28',
      'io.modelcontextprotocol/clientCapabilities': opts.capabilities ?? ALL,
      ...(opts.runId ? { [RUN_ID_META]: opts.runId } : {}),
    };
    const out: StatelessOutcome = await handleStateless(h.core, { jsonrpc: '2.0', id: nextId++, method: 'tools/call', params: { ...params, _meta: meta } }, { principal: opts.principal ?? principal });
    if (out.kind !== 'response') throw new Error(`expected a response, got ${out.kind}`);
    return out.response;
  };
  return { h, call };
};

const greet = { name: 'greet', arguments: { reference: 'PMT-100' } };

describe('InputRequiredResult round trips (stateless tools/call)', () => {
  it('an unanswered elicit answers input_required; the follow-up with the answer and the state completes, and only it is recorded', async () => {
    const { h, call } = await setup();
    const before = runs.greet ?? 0;
    const r1 = resultOf(await call(greet, { runId: 'ir-1' }));
    expect(r1.resultType).toBe(INPUT_REQUIRED);
    expect(r1.content).toBeUndefined();
    expect(r1.inputRequests).toEqual({
      user_name: { method: 'elicitation/create', params: { message: 'Name for PMT-100?', requestedSchema: schemaOf('name') } },
    });
    expect(typeof r1.requestState).toBe('string');
    await h.recorder.flush();
    expect(await h.calls('ir-1')).toEqual([]);

    const r2 = resultOf(await call({ ...greet, inputResponses: { user_name: accept({ name: 'Alice' }) }, requestState: r1.requestState }, { runId: 'ir-2' }));
    expect(r2.resultType).toBe('complete');
    expect(textOf(r2)).toBe('Hello, Alice!');
    await h.recorder.flush();
    const records = await h.calls('ir-2');
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({ tool: 'greet', outcome: 'ok', attempts: 1, protocolVersion: '2026-07-28' });
    // The handler ran once per round: a question is not a failure to retry.
    expect((runs.greet ?? 0) - before).toBe(2);
  });

  it('multi-round: each round adds its answer to a new state; the last round needs only its own answer', async () => {
    const { call } = await setup();
    const before = runs.twoSteps ?? 0;
    const r1 = resultOf(await call({ name: 'two.steps', arguments: {} }));
    expect(Object.keys(r1.inputRequests as object)).toEqual(['step1']);
    const r2 = resultOf(await call({ name: 'two.steps', arguments: {}, inputResponses: { step1: accept({ name: 'Alice' }) }, requestState: r1.requestState }));
    expect(r2.resultType).toBe(INPUT_REQUIRED);
    expect(Object.keys(r2.inputRequests as object)).toEqual(['step2']);
    expect(r2.requestState).not.toBe(r1.requestState);
    const r3 = resultOf(await call({ name: 'two.steps', arguments: {}, inputResponses: { step2: accept({ color: 'blue' }) }, requestState: r2.requestState }));
    expect(textOf(r3)).toBe('Alice likes blue');
    expect((runs.twoSteps ?? 0) - before).toBe(3);
    // The round-2 state really carries step1's answer: without it, step1 is asked again.
    const again = resultOf(await call({ name: 'two.steps', arguments: {}, inputResponses: { step2: accept({ color: 'blue' }) }, requestState: r1.requestState }));
    expect(Object.keys(again.inputRequests as object)).toEqual(['step1']);
  });

  it('questions asked before the handler awaits go out together, keyed by method and position by default', async () => {
    const { call } = await setup();
    const r1 = resultOf(await call({ name: 'all.at.once', arguments: {} }));
    const reqs = r1.inputRequests as Record<string, { method: string }>;
    expect(Object.keys(reqs)).toEqual(['elicit-1', 'sample-2', 'roots-3']);
    expect(Object.values(reqs).map((q) => q.method)).toEqual(['elicitation/create', 'sampling/createMessage', 'roots/list']);
    const r2 = resultOf(await call({
      name: 'all.at.once',
      arguments: {},
      requestState: r1.requestState,
      inputResponses: {
        'elicit-1': accept({ name: 'Bo' }),
        'sample-2': { role: 'assistant', content: { type: 'text', text: 'Hi' }, model: 'm' },
        'roots-3': { roots: [{ uri: 'file:///a' }] },
      },
    }));
    expect(textOf(r2)).toBe('Hi Bo in file:///a');
  });

  it('a handler that swallows the signal still answers input_required (it cannot turn a question into a result)', async () => {
    const { call } = await setup();
    const r = resultOf(await call({ name: 'swallowing', arguments: {} }));
    expect(r.resultType).toBe(INPUT_REQUIRED);
    expect(Object.keys(r.inputRequests as object)).toEqual(['n']);
    expect(captured.at(-1)).toBeInstanceOf(ClientRequestError);
  });
});

describe('requestState integrity', () => {
  it('a tampered state is refused with -32602 and the handler does not run', async () => {
    const { call } = await setup();
    const r1 = resultOf(await call(greet));
    const before = runs.greet ?? 0;
    const e = errorOf(await call({ ...greet, inputResponses: { user_name: accept({ name: 'Alice' }) }, requestState: `${String(r1.requestState)}-TAMPERED` }));
    expect(e).toMatchObject({ code: -32602, message: 'Invalid params: requestState failed its integrity check' });
    // Forged answers under the old signature: the payload changes, the signature no longer fits.
    const [payload, sig] = String(r1.requestState).split('.');
    const body = JSON.parse(Buffer.from(String(payload), 'base64url').toString('utf8')) as Record<string, unknown>;
    const forged = `${Buffer.from(JSON.stringify({ ...body, answers: { user_name: accept({ name: 'Mallory' }) } })).toString('base64url')}.${String(sig)}`;
    expect(errorOf(await call({ ...greet, requestState: forged }))).toMatchObject({ code: -32602 });
    expect(errorOf(await call({ ...greet, requestState: 'not-a-state' }))).toMatchObject({ code: -32602 });
    expect(runs.greet ?? 0).toBe(before);
  });

  it('a state issued for other arguments (a foreign call) is refused', async () => {
    const { call } = await setup();
    const r1 = resultOf(await call(greet));
    const e = errorOf(await call({ name: 'greet', arguments: { reference: 'PMT-999' }, inputResponses: { user_name: accept({ name: 'A' }) }, requestState: r1.requestState }));
    expect(e).toMatchObject({ code: -32602, message: 'Invalid params: requestState belongs to another call (tool, version or arguments differ)' });
  });

  it('ESTATE_STATE_KEY lets replicas verify each other; without it each process has its own key', () => {
    const id = { tool: 'greet', version: '1.0.0', argsHash: 'h' };
    const state = sealState(id, { a: { action: 'cancel' } }, { principal, now: 1_000, key: resolveStateKey('shared-secret') });
    expect(openState(state, id, { principal, now: 1_000, ttlMs: 60_000, key: resolveStateKey('shared-secret') })).toEqual({ answers: { a: { action: 'cancel' } }, firstIssuedAt: 1_000 });
    expect(() => openState(state, id, { principal, now: 1_000, ttlMs: 60_000, key: resolveStateKey() })).toThrow(/integrity/);
    expect(resolveStateKey().equals(resolveStateKey())).toBe(false);
  });
});

/** A state's payload, decoded; and the same state with its payload changed under the old signature. */
const bodyOf = (state: unknown): Record<string, unknown> =>
  JSON.parse(Buffer.from(String(state).split('.')[0] ?? '', 'base64url').toString('utf8')) as Record<string, unknown>;
const reworked = (state: unknown, change: Record<string, unknown>): string =>
  `${Buffer.from(JSON.stringify({ ...bodyOf(state), ...change })).toString('base64url')}.${String(String(state).split('.')[1])}`;

describe('requestState is bound to its caller and expires', () => {
  const alice = makePrincipal({ tenant: 'bank', subject: 'alice@bank.example' });
  const follow = (state: unknown) => ({ ...greet, inputResponses: { user_name: accept({ name: 'Alice' }) }, requestState: state });

  it("another caller's state is refused with -32602 before the handler runs, and nothing is recorded", async () => {
    const { h, call } = await setup();
    const r1 = resultOf(await call(greet, { principal: alice }));
    expect(r1.resultType).toBe(INPUT_REQUIRED);
    const before = runs.greet ?? 0;
    const others = [
      makePrincipal({ tenant: 'bank', subject: 'bob@bank.example' }),
      // The same subject in another tenant is another caller (an issuer's `sub` may be unique only within a tenant).
      makePrincipal({ tenant: 'other', subject: 'alice@bank.example' }),
      // No subject (no authorization: the flags' principal) is not a wildcard, and is not the subject `anonymous`.
      makePrincipal({ tenant: 'bank' }),
      makePrincipal({ tenant: 'bank', subject: 'anonymous' }),
    ];
    for (const [i, other] of others.entries()) {
      const e = errorOf(await call(follow(r1.requestState), { principal: other, runId: `ir-other-${i}` }));
      expect(e).toEqual({ code: -32602, message: 'Invalid params: requestState belongs to another caller' });
    }
    expect(runs.greet ?? 0).toBe(before);
    await h.recorder.flush();
    for (const i of others.keys()) expect(await h.calls(`ir-other-${i}`)).toEqual([]);
    // Its own caller completes with it.
    expect(textOf(resultOf(await call(follow(r1.requestState), { principal: alice })))).toBe('Hello, Alice!');
    // A subjectless caller's state is its own too.
    const anon = makePrincipal({ tenant: 'bank' });
    const r2 = resultOf(await call(greet, { principal: anon }));
    expect(textOf(resultOf(await call(follow(r2.requestState), { principal: anon })))).toBe('Hello, Alice!');
    expect(errorOf(await call(follow(r2.requestState), { principal: makePrincipal({ tenant: 'bank', subject: 'anonymous' }) }))).toMatchObject({ code: -32602 });
    // And the other way round: a token whose `sub` is "anonymous" is not the subjectless caller.
    const r3 = resultOf(await call(greet, { principal: makePrincipal({ tenant: 'bank', subject: 'anonymous' }) }));
    expect(errorOf(await call(follow(r3.requestState), { principal: anon }))).toEqual({ code: -32602, message: 'Invalid params: requestState belongs to another caller' });
  });

  it('a state older than the TTL is refused with -32602 before the handler runs; one within it is accepted', async () => {
    let t = 1_700_000_000_000;
    const { h, call } = await setup({ now: () => t, stateTtlMs: 60_000 });
    const r1 = resultOf(await call(greet, { principal: alice }));
    const before = runs.greet ?? 0;
    t += 60_001;
    const e = errorOf(await call(follow(r1.requestState), { principal: alice, runId: 'ir-expired' }));
    expect(e).toEqual({ code: -32602, message: 'Invalid params: requestState has expired; call the tool again without it' });
    expect(runs.greet ?? 0).toBe(before);
    await h.recorder.flush();
    expect(await h.calls('ir-expired')).toEqual([]);
    // Exactly the TTL old: still good.
    const r2 = resultOf(await call(greet, { principal: alice }));
    t += 60_000;
    expect(textOf(resultOf(await call(follow(r2.requestState), { principal: alice, runId: 'ir-in-time' })))).toBe('Hello, Alice!');
    await h.recorder.flush();
    expect(await h.calls('ir-in-time')).toHaveLength(1);
  });

  it("each round's state carries the first round's issue time: the TTL bounds the whole call, not each question", async () => {
    let t = 1_700_000_000_000;
    const first = t;
    const { call } = await setup({ now: () => t, stateTtlMs: 60_000 });
    const r1 = resultOf(await call({ name: 'two.steps', arguments: {} }));
    t += 50_000;
    const r2 = resultOf(await call({ name: 'two.steps', arguments: {}, inputResponses: { step1: accept({ name: 'Alice' }) }, requestState: r1.requestState }));
    expect(r2.resultType).toBe(INPUT_REQUIRED);
    t += 10_000;
    // Exactly the TTL since the first question: still good.
    const r3 = resultOf(await call({ name: 'two.steps', arguments: {}, inputResponses: { step2: accept({ color: 'blue' }) }, requestState: r2.requestState }));
    expect(textOf(r3)).toBe('Alice likes blue');
    // A millisecond later the round-2 state, which carries step1's answer, is refused: re-stamped each round, a call of
    // N questions kept its first answer for up to N TTLs.
    t += 1;
    const before = runs.twoSteps ?? 0;
    expect(errorOf(await call({ name: 'two.steps', arguments: {}, inputResponses: { step2: accept({ color: 'blue' }) }, requestState: r2.requestState }))).toEqual({
      code: -32602,
      message: 'Invalid params: requestState has expired; call the tool again without it',
    });
    expect(runs.twoSteps ?? 0).toBe(before);
    expect(bodyOf(r2.requestState)).toMatchObject({ firstIssuedAt: first });
  });

  it('a state from a clock at most MAX_STATE_CLOCK_SKEW_MS ahead counts as issued now; further ahead it is refused', async () => {
    let t = 1_700_000_000_000;
    const issued = t;
    const { call } = await setup({ now: () => t, stateTtlMs: 60_000 });
    // The replica that issued it ran ahead of this one: here, this one's clock is behind the state's issue time.
    const r1 = resultOf(await call({ name: 'two.steps', arguments: {} }));
    t = issued - MAX_STATE_CLOCK_SKEW_MS;
    const r2 = resultOf(await call({ name: 'two.steps', arguments: {}, inputResponses: { step1: accept({ name: 'Alice' }) }, requestState: r1.requestState }));
    expect(r2.resultType).toBe(INPUT_REQUIRED);
    // Carried as this clock's now, not the time ahead: an answer lives no longer for the skew.
    expect(bodyOf(r2.requestState)).toMatchObject({ firstIssuedAt: t });
    t = issued - MAX_STATE_CLOCK_SKEW_MS - 1;
    const before = runs.twoSteps ?? 0;
    expect(errorOf(await call({ name: 'two.steps', arguments: {}, inputResponses: { step1: accept({ name: 'Alice' }) }, requestState: r1.requestState }))).toEqual({
      code: -32602,
      message: `Invalid params: requestState was issued in the future (more than ${MAX_STATE_CLOCK_SKEW_MS / 1000} s ahead of this server's clock); call the tool again without it`,
    });
    expect(runs.twoSteps ?? 0).toBe(before);
    // Far in the future (a clock a day ahead) too: a state from the future does not get a TTL on top of the lead.
    const id = { tool: 'greet', version: '1.0.0', argsHash: 'h' };
    const key = resolveStateKey('shared-secret');
    const ahead = sealState(id, {}, { principal, now: issued + 86_400_000, key });
    expect(() => openState(ahead, id, { principal, now: issued, ttlMs: 60_000, key })).toThrow('requestState was issued in the future');
  });

  it('the state names its caller by a keyed hash (never the subject) and its issue time; altering either fails the integrity check', async () => {
    const t = 1_700_000_000_000;
    const { call } = await setup({ now: () => t });
    const r1 = resultOf(await call(greet, { principal: alice }));
    const body = bodyOf(r1.requestState);
    expect(body).toMatchObject({ v: 3, tool: 'greet', firstIssuedAt: t });
    expect(typeof body.caller).toBe('string');
    expect(Buffer.from(String(r1.requestState).split('.')[0] ?? '', 'base64url').toString('utf8')).not.toMatch(/alice|bank/);
    const before = runs.greet ?? 0;
    const bob = makePrincipal({ tenant: 'bank', subject: 'bob@bank.example' });
    const bobs = bodyOf(resultOf(await call(greet, { principal: bob })).requestState);
    const beforeBob = runs.greet ?? 0;
    // Bob puts his own caller field into Alice's state, or makes an old state young again: the signature no longer fits.
    for (const [who, change] of [
      [bob, { caller: bobs.caller }],
      [alice, { firstIssuedAt: t + 3_600_000 }],
      [alice, { firstIssuedAt: undefined }],
      [alice, { v: 1 }],
      [alice, { v: 2 }],
    ] as const) {
      expect(errorOf(await call(follow(reworked(r1.requestState, change)), { principal: who }))).toEqual({
        code: -32602,
        message: 'Invalid params: requestState failed its integrity check',
      });
    }
    expect(runs.greet ?? 0).toBe(beforeBob);
    expect(beforeBob - before).toBe(1);
  });

  it('a state of an earlier version, even correctly signed, fails the integrity check', () => {
    const key = resolveStateKey('shared-secret');
    const id = { tool: 'greet', version: '1.0.0', argsHash: 'h' };
    const caller = createHmac('sha256', key).update(canonicalJson(['caller', principal.tenant, null])).digest('base64url');
    const now = 1_700_000_000_000;
    for (const body of [
      // 1: no caller, no issue time.
      { v: 1, ...id, answers: { a: { action: 'cancel' } } },
      // 2: its issue time was each round's own, so its answers may be older than its stamp.
      { v: 2, ...id, caller, issuedAt: now, answers: { a: { action: 'cancel' } } },
    ]) {
      const payload = Buffer.from(canonicalJson(body), 'utf8').toString('base64url');
      const old = `${payload}.${createHmac('sha256', key).update(payload).digest('base64url')}`;
      expect(() => openState(old, id, { principal, now, ttlMs: 60_000, key })).toThrow('Invalid params: requestState failed its integrity check');
    }
  });
});

describe('input responses', () => {
  it('a missing or misnamed response is asked again (a new input_required, not an error); extra keys are ignored', async () => {
    const { call } = await setup();
    const wrong = resultOf(await call({ ...greet, inputResponses: { wrong_key: accept({ data: 'x' }) } }));
    expect(wrong.resultType).toBe(INPUT_REQUIRED);
    expect(Object.keys(wrong.inputRequests as object)).toEqual(['user_name']);
    const extra = resultOf(await call({ ...greet, inputResponses: { user_name: accept({ name: 'Alice' }), unknown_extra_key: { foo: 1 } } }));
    expect(textOf(extra)).toBe('Hello, Alice!');
    // An answer of the wrong shape for its question is asked again too.
    const misshapen = resultOf(await call({ ...greet, inputResponses: { user_name: { action: 'maybe' } } }));
    expect(Object.keys(misshapen.inputRequests as object)).toEqual(['user_name']);
  });

  it('inputResponses that are not an object of objects, or a requestState that is not a string, are -32602', async () => {
    const { call } = await setup();
    expect(errorOf(await call({ ...greet, inputResponses: null }))).toMatchObject({ code: -32602, message: 'Invalid params: inputResponses must be an object' });
    expect(errorOf(await call({ ...greet, inputResponses: { user_name: 12345 } }))).toMatchObject({ code: -32602, message: 'Invalid params: inputResponses.user_name must be an object' });
    expect(errorOf(await call({ ...greet, requestState: 7 }))).toMatchObject({ code: -32602, message: 'Invalid params: requestState must be a string' });
  });

  it('a question for a capability the request did not declare, left uncaught, is -32021 naming it (HTTP 400); nothing is recorded', async () => {
    const { h } = await setup();
    const meta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': { sampling: {} }, [RUN_ID_META]: 'ir-cap' };
    const out = await handleStateless(h.core, { jsonrpc: '2.0', id: nextId++, method: 'tools/call', params: { ...greet, _meta: meta } }, { principal });
    if (out.kind !== 'response') throw new Error(`expected a response, got ${out.kind}`);
    expect(out.status).toBe(400);
    expect(errorOf(out.response)).toEqual({
      code: -32021,
      message: 'Missing required client capability: elicitation',
      data: { requiredCapabilities: { elicitation: {} } },
    });
    await h.recorder.flush();
    expect(await h.calls('ir-cap')).toEqual([]);
  });

  it('a handler that catches the refusal answers for itself, and that call is recorded', async () => {
    const { h, call } = await setup();
    const r = resultOf(await call({ name: 'swallowing', arguments: {} }, { capabilities: { sampling: {} }, runId: 'ir-cap-caught' }));
    expect(r.resultType).toBe('complete');
    expect(textOf(r)).toBe('gave up');
    expect(captured.at(-1)).toBeInstanceOf(ClientRequestError);
    expect((captured.at(-1) as ClientRequestError).reason).toBe('capability');
    await h.recorder.flush();
    expect(await h.calls('ir-cap-caught')).toMatchObject([{ outcome: 'ok' }]);
  });
});
