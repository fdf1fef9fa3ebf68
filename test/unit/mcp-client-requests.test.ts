/**
 * A handler asks the client mid-call (ctx.elicit, ctx.sample) on a 2025 session: the request goes out with an id of
 * ours, the client's response is routed back to the call that asked by that id, and every way it cannot be answered
 * (capability not declared, cancel/timeout, client error, session closed; a stateless request gets an InputRequiredResult instead) rejects instead of
 * hanging. Responses pass gate 1 without being answered; other method-less envelopes still fail it.
 */
import { describe, expect, it } from 'vitest';
import { makePrincipal } from '#domain/access';
import type { HandlerMap } from '#handlers/types';
import { ClientRequestError } from '#mcp/client-requests';
import { INVALID_REQUEST, type JsonRpcRequest, type JsonRpcResponse } from '#mcp/jsonrpc';
import { handleStateless } from '#mcp/stateless';
import { aDefinition } from '../fixtures/builders.ts';
import { errorOf, makeHarness, resultOf, textOf } from '../fixtures/handlers/harness.ts';

const schema = { type: 'object', properties: { answer: { type: 'string' } }, required: ['answer'] };
const caught: unknown[] = [];

const asking: HandlerMap = {
  // Not catching: what run-handler makes of a refusal is under test too.
  'payments.lookup': async (args, ctx) => {
    const r = await ctx.elicit!({ message: String(args.reference), requestedSchema: schema });
    return { content: [{ type: 'text', text: `${r.action}:${JSON.stringify(r.content ?? {})}` }] };
  },
  sample: async (_args, ctx) => {
    const r = await ctx.sample!({ messages: [{ role: 'user', content: { type: 'text', text: 'hi' } }], maxTokens: 10 });
    return { content: [{ type: 'text', text: `${r.model}:${JSON.stringify(r.content)}` }] };
  },
  // Asks, is answered, then never returns (an upstream that went quiet after its question).
  'patient.quiet': async (_args, ctx) => {
    await ctx.elicit!({ message: 'which account?', requestedSchema: schema });
    return new Promise(() => undefined);
  },
  // Records how its question ended, then answers with that.
  patient: async (_args, ctx) => {
    try {
      await ctx.elicit!({ message: 'wait', requestedSchema: schema });
      return { content: [{ type: 'text', text: 'answered' }] };
    } catch (e) {
      caught.push(e);
      throw e;
    }
  },
};

const defs = [
  aDefinition({ access: { classification: 'public' } }),
  aDefinition({ name: 'sample', handler: 'sample', inputSchema: { type: 'object' }, access: { classification: 'public' } }),
  aDefinition({ name: 'patient', handler: 'patient', inputSchema: { type: 'object' }, access: { classification: 'public' } }),
  aDefinition({ name: 'patient.quiet', handler: 'patient.quiet', inputSchema: { type: 'object' }, timeoutMs: 50, sideEffect: 'none', access: { classification: 'public' } }),
  aDefinition({ name: 'patient.hasty', handler: 'patient', inputSchema: { type: 'object' }, timeoutMs: 50, sideEffect: 'non_idempotent', access: { classification: 'public' } }),
];
const BOTH = { elicitation: {}, sampling: {} };
const lookup = (reference: string) => ({ name: 'payments.lookup', arguments: { reference: `PMT-${reference}` } });

const setup = async (capabilities: Record<string, unknown> = BOTH) => {
  const h = await makeHarness(defs, asking);
  const s = h.session();
  resultOf(await s.initialize('2025-11-25', capabilities));
  return { h, s };
};

const asRequest = (m: unknown): JsonRpcRequest => {
  const r = m as JsonRpcRequest;
  if (typeof r.method !== 'string' || r.id === undefined) throw new Error(`expected a request, got ${JSON.stringify(m)}`);
  return r;
};

describe('server-to-client requests on a session', () => {
  it('elicitation/create goes out with a server id and the answer reaches the call that asked, by id', async () => {
    const { s } = await setup();
    const first = s.request('tools/call', lookup('100'));
    const second = s.request('tools/call', lookup('200'));
    const a = asRequest(await s.nextToClient());
    const b = asRequest(await s.nextToClient());
    expect(a.method).toBe('elicitation/create');
    expect(a.params).toEqual({ message: 'PMT-100', requestedSchema: schema });
    expect(b.params?.message).toBe('PMT-200');
    expect(a.id).not.toEqual(b.id);
    // Answered in the other order: each call still gets its own answer.
    expect(await s.send({ jsonrpc: '2.0', id: b.id, result: { action: 'accept', content: { answer: 'two' } } })).toBeNull();
    expect(await s.send({ jsonrpc: '2.0', id: a.id, result: { action: 'decline' } })).toBeNull();
    expect(textOf(resultOf(await first))).toBe('decline:{}');
    expect(textOf(resultOf(await second))).toBe('accept:{"answer":"two"}');
  });

  it('sampling/createMessage: sent with the handler params, the result returned to it', async () => {
    const { s } = await setup();
    const call = s.request('tools/call', { name: 'sample', arguments: {} });
    const q = asRequest(await s.nextToClient());
    expect(q.method).toBe('sampling/createMessage');
    expect(q.params).toEqual({ messages: [{ role: 'user', content: { type: 'text', text: 'hi' } }], maxTokens: 10 });
    await s.send({ jsonrpc: '2.0', id: q.id, result: { role: 'assistant', content: { type: 'text', text: 'hello' }, model: 'm1' } });
    expect(textOf(resultOf(await call))).toBe('m1:{"type":"text","text":"hello"}');
  });

  it('a capability the client did not declare: refused, nothing sent, not retried, recorded as a tool error', async () => {
    const { h, s } = await setup({ sampling: {} });
    const r = resultOf(await s.request('tools/call', lookup('100')));
    expect(r.isError).toBe(true);
    expect(textOf(r)).toBe('Tool failed: elicitation/create refused: the client did not declare the elicitation capability');
    const only = await setup({ elicitation: {} });
    const r2 = resultOf(await only.s.request('tools/call', { name: 'sample', arguments: {} }));
    expect(textOf(r2)).toBe('Tool failed: sampling/createMessage refused: the client did not declare the sampling capability');
    expect(s.toClient).toEqual([]);
    expect(only.s.toClient).toEqual([]);
    const [record] = await h.calls(s.session.id);
    expect(record).toMatchObject({ outcome: 'tool_error', attempts: 1 });
  });

  it('URL-mode elicitation needs its own declaration', async () => {
    const h = await makeHarness([aDefinition({ name: 'url', handler: 'url', inputSchema: { type: 'object' }, access: { classification: 'public' } })], {
      url: async (_a, ctx) => {
        await ctx.elicit!({ mode: 'url', message: 'sign in', requestedSchema: {}, url: 'https://example.test', elicitationId: 'e1' });
        return { content: [] };
      },
    });
    const s = h.session();
    await s.initialize('2025-11-25', { elicitation: {} });
    expect(textOf(resultOf(await s.request('tools/call', { name: 'url', arguments: {} })))).toContain('did not declare URL-mode elicitation');
  });

  it('the client answers with an error: the handler sees a ClientRequestError with the code', async () => {
    caught.length = 0;
    const { s } = await setup();
    const call = s.request('tools/call', { name: 'patient', arguments: {} });
    const q = asRequest(await s.nextToClient());
    await s.send({ jsonrpc: '2.0', id: q.id, error: { code: -1, message: 'User rejected' } });
    const r = resultOf(await call);
    expect(r.isError).toBe(true);
    expect(textOf(r)).toBe('Tool failed: The client answered elicitation/create with an error (-1): User rejected');
    expect(caught).toHaveLength(1);
    expect(caught[0]).toBeInstanceOf(ClientRequestError);
    expect(caught[0]).toMatchObject({ reason: 'client_error', code: -1 });
    // Asked once: a refusal is not retried even where the side-effect policy would allow it.
    expect(s.toClient).toHaveLength(1);
  });

  it('an answer that is not an elicitation result is refused', async () => {
    const { s } = await setup();
    const call = s.request('tools/call', lookup('100'));
    const q = asRequest(await s.nextToClient());
    await s.send({ jsonrpc: '2.0', id: q.id, result: { action: 'maybe' } });
    expect(textOf(resultOf(await call))).toContain('invalid result: action must be accept, decline or cancel');
  });

  it('the call is cancelled while it waits: the question is withdrawn and a late answer settles nothing', async () => {
    caught.length = 0;
    const { s } = await setup();
    const call = s.send({ jsonrpc: '2.0', id: 'call-1', method: 'tools/call', params: { name: 'patient', arguments: {} } });
    const q = asRequest(await s.nextToClient());
    expect(await s.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'call-1' } })).toBeNull();
    expect(textOf(resultOf(await call))).toBe('Tool call cancelled');
    expect(await s.nextToClient()).toEqual({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: q.id, reason: 'the tool call was cancelled or timed out' } });
    expect(caught[0]).toMatchObject({ reason: 'aborted' });
    expect(s.session.acceptResponse({ jsonrpc: '2.0', id: q.id, result: { action: 'accept', content: { answer: 'late' } } })).toBe(false);
  });

  it('the call times out while it waits: the question is withdrawn, the result is the timeout', async () => {
    caught.length = 0;
    const { s } = await setup();
    const r = resultOf(await s.request('tools/call', { name: 'patient.hasty', arguments: {} }));
    expect(textOf(r)).toBe('Tool timed out after 50 ms');
    const [q, withdrawn] = s.toClient;
    expect(asRequest(q).method).toBe('elicitation/create');
    expect(withdrawn).toMatchObject({ method: 'notifications/cancelled', params: { requestId: asRequest(q).id } });
    expect(caught[0]).toMatchObject({ reason: 'aborted' });
  });

  it('a retryable call that times out after its question was answered is not run again: its user would be asked twice', async () => {
    const { s } = await setup();
    const call = s.request('tools/call', { name: 'patient.quiet', arguments: {} });
    const q = asRequest(await s.nextToClient());
    await s.send({ jsonrpc: '2.0', id: q.id, result: { action: 'accept', content: { answer: 'acct-1' } } });
    expect(textOf(resultOf(await call))).toBe('Tool timed out after 50 ms');
    // One question in all, not one per attempt (sideEffect none allows three).
    expect(s.toClient.filter((m) => (m as { method?: string }).method === 'elicitation/create')).toHaveLength(1);
  });

  it('the session closes while a call waits: the question is rejected', async () => {
    caught.length = 0;
    const { s } = await setup();
    const call = s.request('tools/call', { name: 'patient', arguments: {} });
    await s.nextToClient();
    s.session.close();
    expect(resultOf(await call).isError).toBe(true);
    expect(caught[0]).toMatchObject({ reason: 'closed' });
  });

  it('stateless 2026-07-28 requests send nothing: the question comes back as an InputRequiredResult (SEP-2322)', async () => {
    const h = await makeHarness(defs, asking);
    const meta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': BOTH };
    const out = await handleStateless(h.core, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { ...lookup('100'), _meta: meta } }, { principal: makePrincipal({}) });
    if (out.kind !== 'response' || !('result' in out.response)) throw new Error(`expected a result, got ${JSON.stringify(out)}`);
    expect(out.response.result).toMatchObject({ resultType: 'input_required', inputRequests: { 'elicit-1': { method: 'elicitation/create', params: { message: 'PMT-100' } } } });
  });
});

describe('gate 1 and responses', () => {
  it('a well-formed response is taken, never answered, even when nothing waits for it', async () => {
    const { s } = await setup();
    expect(await s.send({ jsonrpc: '2.0', id: 'nobody', result: {} })).toBeNull();
    expect(await s.send({ jsonrpc: '2.0', id: 42, error: { code: -32601, message: 'no' } })).toBeNull();
  });

  it.each([
    [{ jsonrpc: '2.0', id: 1 }, 1],
    [{ jsonrpc: '2.0', id: 1, result: {}, error: { code: 1, message: 'x' } }, 1],
    [{ jsonrpc: '2.0', id: 1, result: 5 }, 1],
    [{ jsonrpc: '2.0', id: 1, error: { code: 'x', message: 'x' } }, 1],
    [{ jsonrpc: '2.0', id: null, error: { code: 1, message: 'x' } }, null],
    [{ jsonrpc: '1.0', id: 1, result: {} }, 1],
    [{ id: 1, result: {} }, 1],
  ])('an invalid envelope without a method still fails gate 1: %j', async (raw, id) => {
    const { s } = await setup();
    const answer = (await s.send(raw)) as JsonRpcResponse;
    expect(answer.id).toBe(id);
    expect(errorOf(answer).code).toBe(INVALID_REQUEST);
  });
});
