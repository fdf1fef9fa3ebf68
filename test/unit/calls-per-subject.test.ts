/**
 * The bound on tools/calls one subject may have running at once (ESTATE_MAX_CALLS_PER_SUBJECT), over every path into
 * the core: a caller at its bound is refused (-32051, retryable; HTTP 429 on the stateless path) before anything is
 * resolved or run, and nothing is recorded; another subject's calls go on meanwhile; once one of the caller's calls
 * ends, it may call again. Handlers here wait for the test to release them, so "running" is exact, not timed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makePrincipal } from '#domain/access';
import { TOO_MANY_CALLS } from '#mcp/jsonrpc';
import { boundKey } from '#mcp/subject-counts';
import { aDefinition } from '../fixtures/builders.ts';
import { errorOf, makeHarness, resultOf, textOf, type Harness, type TestSession } from '../fixtures/handlers/harness.ts';
import { serveMcpHttp, type McpHttpServer } from '../fixtures/mcp-http-server.ts';

const MAX = 2;
let h: Harness;
/** Calls waiting in the handler, by reference, each with its release. */
const waiting = new Map<string, () => void>();
let started = 0;

beforeAll(async () => {
  h = await makeHarness(
    [aDefinition({ access: { classification: 'public' } })],
    {
      'payments.lookup': async (args) => {
        started++;
        const ref = String(args.reference);
        await new Promise<void>((r) => waiting.set(ref, r));
        waiting.delete(ref);
        return { content: [{ type: 'text', text: `payment ${ref}: settled` }] };
      },
    },
    { maxCallsPerSubject: MAX },
  );
});

const release = async (ref: string): Promise<void> => {
  await expect.poll(() => waiting.has(ref)).toBe(true);
  (waiting.get(ref) as () => void)();
};

const args = (ref: string, runId: string) => ({ name: 'payments.lookup', arguments: { reference: ref }, _meta: { 'io.estate/runId': runId } });

describe('tools/calls running per subject', () => {
  it('refuses a session call past the bound before it runs, records nothing for it, and lets another subject call meanwhile', async () => {
    const alice = h.session(makePrincipal({ subject: 'alice' }));
    const bob = h.session(makePrincipal({ subject: 'bob' }));
    await alice.initialize();
    await bob.initialize();
    const first = alice.request('tools/call', args('PMT-101', 'run-a1'));
    const second = alice.request('tools/call', args('PMT-102', 'run-a2'));
    await expect.poll(() => waiting.size).toBe(2);
    const before = started;

    const refused = errorOf(await alice.request('tools/call', args('PMT-103', 'run-a3')));
    expect(refused.code).toBe(TOO_MANY_CALLS);
    expect(refused.message).toBe("Too many calls in flight: subject 'alice' already has 2 tools/calls running (at most 2, ESTATE_MAX_CALLS_PER_SUBJECT); try again when one has ended");
    expect(refused.data).toEqual({ retryable: true });
    expect(started).toBe(before); // its handler never ran
    expect(await h.calls('run-a3')).toEqual([]); // and nothing is on record

    // Bob is another subject: his call runs while Alice's two wait.
    const bobs = bob.request('tools/call', args('PMT-201', 'run-b1'));
    await release('PMT-201');
    expect(textOf(resultOf(await bobs))).toBe('payment PMT-201: settled');

    // One of Alice's ends: she may call again.
    await release('PMT-101');
    expect(textOf(resultOf(await first))).toBe('payment PMT-101: settled');
    const again = alice.request('tools/call', args('PMT-104', 'run-a4'));
    await release('PMT-104');
    await release('PMT-102');
    expect(textOf(resultOf(await again))).toBe('payment PMT-104: settled');
    expect(textOf(resultOf(await second))).toBe('payment PMT-102: settled');
  });

  it('a call that failed frees its place: the bound counts running calls, not calls made', async () => {
    const carol = h.session(makePrincipal({ subject: 'carol' }));
    await carol.initialize();
    // Unknown tools are refused inside the call: each takes and gives back a place.
    for (let i = 0; i < MAX * 3; i++) expect(errorOf(await carol.request('tools/call', { name: 'no.such', arguments: {} })).message).toBe('Unknown tool: no.such');
    const ok = carol.request('tools/call', args('PMT-301', 'run-c1'));
    await release('PMT-301');
    expect(textOf(resultOf(await ok))).toBe('payment PMT-301: settled');
  });

  it('a cancelled call whose handler runs on keeps its place until the handler has ended (cancelling is no way past the bound)', async () => {
    const erin = h.session(makePrincipal({ subject: 'erin' }));
    await erin.initialize();
    // The handler here does not watch its signal: a cancel answers the call at once, and the handler goes on.
    const cancelled = erin.send({ jsonrpc: '2.0', id: 'cx-1', method: 'tools/call', params: args('PMT-501', 'run-e1') });
    await expect.poll(() => waiting.has('PMT-501')).toBe(true);
    await erin.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'cx-1' } });
    await cancelled;
    expect((await h.calls('run-e1'))[0]).toMatchObject({ outcome: 'cancelled' });
    const second = erin.request('tools/call', args('PMT-502', 'run-e2'));
    await expect.poll(() => waiting.has('PMT-502')).toBe(true);
    // Two executions run (the cancelled one's and this one): a third call is refused.
    expect(errorOf(await erin.request('tools/call', args('PMT-503', 'run-e3'))).code).toBe(TOO_MANY_CALLS);
    // The cancelled call's handler ends: its place is free again (once the end is counted, a few turns later). Each try
    // is told apart by what happens, not by a clock: refused, it answers at once; admitted, its handler starts.
    await release('PMT-501');
    await expect
      .poll(async () => {
        const r = erin.request('tools/call', args('PMT-504', 'run-e4'));
        let answered = false;
        void r.then(() => (answered = true));
        while (!answered && !waiting.has('PMT-504')) await new Promise((next) => setImmediate(next));
        if (!waiting.has('PMT-504')) return errorOf(await r).code;
        await release('PMT-504');
        return textOf(resultOf(await r));
      })
      .toBe('payment PMT-504: settled');
    await release('PMT-502');
    expect(textOf(resultOf(await second))).toBe('payment PMT-502: settled');
  });

  /**
   * `full` takes both its places (calls `<prefix>01`, `<prefix>02` held) and is refused a third; `other` is still
   * served meanwhile (`<prefix>11`); then `full`'s calls are let go.
   */
  const placesApart = async (full: TestSession, other: TestSession, prefix: string, runs: string): Promise<void> => {
    const held = [full.request('tools/call', args(`${prefix}01`, `${runs}1`)), full.request('tools/call', args(`${prefix}02`, `${runs}2`))];
    await expect.poll(() => waiting.has(`${prefix}01`) && waiting.has(`${prefix}02`)).toBe(true);
    expect(errorOf(await full.request('tools/call', args(`${prefix}03`, `${runs}3`))).code).toBe(TOO_MANY_CALLS);
    const served = other.request('tools/call', args(`${prefix}11`, `${runs}4`));
    await release(`${prefix}11`);
    expect(textOf(resultOf(await served))).toBe(`payment ${prefix}11: settled`);
    await release(`${prefix}01`);
    await release(`${prefix}02`);
    await Promise.all(held);
  };

  it('counts a subject within its tenant: the same sub in another tenant has places of its own', async () => {
    const inAcme = h.session(makePrincipal({ subject: 'frank', tenant: 'acme' }));
    const inGlobex = h.session(makePrincipal({ subject: 'frank', tenant: 'globex' }));
    await inAcme.initialize();
    await inGlobex.initialize();
    await placesApart(inAcme, inGlobex, 'PMT-6', 'run-f');
  });

  it('counts a principal without a subject apart from one whose subject is `anonymous`, though both are recorded `anonymous`', async () => {
    // No subject: no authorization, the flags' principal. A token whose `sub` is the string "anonymous" is refused at the
    // edge (auth-rules, auth-http); inside, a principal of that subject is still someone else: it must not take the
    // places of unauthenticated callers, nor they its.
    const none = h.session(makePrincipal({ tenant: 'initech' }));
    const named = h.session(makePrincipal({ tenant: 'initech', subject: 'anonymous' }));
    await none.initialize();
    await named.initialize();
    await placesApart(none, named, 'PMT-7', 'run-n');
    // And the other way round: `anonymous` at its bound leaves the subjectless caller its places.
    await placesApart(named, none, 'PMT-8', 'run-m');
    // What is recorded is unchanged: no subject is `anonymous` in the call record.
    await h.recorder.flush();
    expect((await h.calls('run-n1'))[0]).toMatchObject({ subject: 'anonymous', tenant: 'initech' });
    expect((await h.calls('run-m1'))[0]).toMatchObject({ subject: 'anonymous', tenant: 'initech' });
  });

  it('boundKey: no subject, the subject `anonymous`, and a tenant or subject holding the separator are all told apart', () => {
    const keys = [
      makePrincipal({ tenant: 't' }),
      makePrincipal({ tenant: 't', subject: 'anonymous' }),
      makePrincipal({ tenant: 't', subject: 'null' }),
      makePrincipal({ tenant: 'a\u0000b', subject: 'c' }),
      makePrincipal({ tenant: 'a', subject: 'b\u0000c' }),
    ].map(boundKey);
    expect(new Set(keys).size).toBe(keys.length);
    expect(boundKey(makePrincipal({ tenant: 't', subject: 'u', scopes: ['x'] }))).toBe(boundKey(makePrincipal({ tenant: 't', subject: 'u' })));
  });

  describe('on the 2026-07-28 stateless path', () => {
    let http: McpHttpServer;
    beforeAll(async () => {
      http = await serveMcpHttp(h.core, makePrincipal({ subject: 'dave' }));
    });
    afterAll(() => http.close());

    const call = (ref: string) => {
      const meta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };
      return fetch(http.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'payments.lookup' },
        body: JSON.stringify({ jsonrpc: '2.0', id: ref, method: 'tools/call', params: { name: 'payments.lookup', arguments: { reference: ref }, _meta: meta } }),
      });
    };

    it('answers HTTP 429 with the JSON-RPC error past the bound', async () => {
      const running = [call('PMT-401'), call('PMT-402')];
      await expect.poll(() => waiting.has('PMT-401') && waiting.has('PMT-402')).toBe(true);
      const refused = await call('PMT-403');
      expect(refused.status).toBe(429);
      expect(((await refused.json()) as { error: { code: number } }).error.code).toBe(TOO_MANY_CALLS);
      await release('PMT-401');
      await release('PMT-402');
      for (const r of await Promise.all(running)) expect(r.status).toBe(200);
    });
  });
});
