/**
 * InputRequiredResult (SEP-2322) over `estate serve --http` with raw fetch: a two-question tool answers input_required
 * twice and completes on the third call; the rounds may land on different processes that share ESTATE_STATE_KEY; a
 * process with another key, or an altered state, is refused with -32602. With authorization, a state is its token's
 * caller's: another subject sending it is refused with -32602.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestIssuer, type TestIssuer } from '../fixtures/jwks.ts';
import { makeTempStore, parseMcpBody, runCli, startHttpServer, type HttpServer, type TempStore } from './helpers.ts';

const HANDLERS = 'test/conformance/handlers.ts';
const TOOL = 'test_input_required_result_multi_round';
const CAPS = { elicitation: {}, sampling: {}, roots: {} };

let nextId = 1;
const callTool = async (url: string, params: Record<string, unknown>, token?: string): Promise<{ status: number; body: Record<string, unknown> }> => {
  const res = await fetch(url, {
    method: 'POST',
    headers: {
      ...(token !== undefined ? { authorization: `Bearer ${token}` } : {}),
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': 'tools/call',
      'mcp-name': TOOL,
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: nextId++,
      method: 'tools/call',
      params: { name: TOOL, arguments: {}, ...params, _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': CAPS } },
    }),
  });
  const parsed = parseMcpBody(res.headers.get('content-type') ?? undefined, await res.text());
  return { status: res.status, body: parsed.response ?? {} };
};

const accept = (content: Record<string, unknown>) => ({ action: 'accept', content });

describe('estate serve --http: InputRequiredResult round trips', () => {
  const tmps: TempStore[] = [];
  const servers: HttpServer[] = [];

  const AUDIENCE = 'https://estate.test/mcp';
  let idp: TestIssuer | undefined;

  const serve = async (key: string, args: string[] = []): Promise<string> => {
    const tmp = makeTempStore();
    tmps.push(tmp);
    const pub = await runCli(['publish', `test/conformance/tools/${TOOL}.yaml`, '--store', tmp.store]);
    if (pub.code !== 0) throw new Error(`publish failed: ${pub.stderr}`);
    const srv = await startHttpServer(['--store', tmp.store, '--handlers', HANDLERS, ...args], { env: { ESTATE_STATE_KEY: key } });
    servers.push(srv);
    return srv.url;
  };

  let a = '';
  let b = '';
  let other = '';
  let authorized = '';
  beforeAll(async () => {
    idp = await startTestIssuer(AUDIENCE);
    const auth = ['--auth-issuer', idp.issuer, '--auth-jwks-url', idp.jwksUrl, '--auth-audience', AUDIENCE];
    [a, b, other, authorized] = await Promise.all([serve('replica-secret'), serve('replica-secret'), serve('another-secret'), serve('replica-secret', auth)]);
  }, 60_000);
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.stop()));
    await idp?.close();
    for (const t of tmps) t.cleanup();
  });

  it('two rounds of questions, answered across two replicas sharing the key, then the result', async () => {
    const r1 = await callTool(a, {});
    expect(r1.status).toBe(200);
    const res1 = r1.body.result as Record<string, unknown>;
    expect(res1).toMatchObject({ resultType: 'input_required', inputRequests: { step1: { method: 'elicitation/create' } } });
    expect(typeof res1.requestState).toBe('string');

    const r2 = await callTool(b, { inputResponses: { step1: accept({ name: 'Alice' }) }, requestState: res1.requestState });
    const res2 = r2.body.result as Record<string, unknown>;
    expect(res2).toMatchObject({ resultType: 'input_required', inputRequests: { step2: { method: 'elicitation/create' } } });
    expect(res2.requestState).not.toBe(res1.requestState);

    const r3 = await callTool(a, { inputResponses: { step2: accept({ color: 'blue' }) }, requestState: res2.requestState });
    expect(r3.body.result).toMatchObject({ resultType: 'complete', content: [{ type: 'text', text: 'Alice likes blue' }] });
  });

  it('a state from a process with another key, or an altered one, is refused with -32602', async () => {
    const r1 = await callTool(a, {});
    const state = String((r1.body.result as Record<string, unknown>).requestState);
    const foreign = await callTool(other, { inputResponses: { step1: accept({ name: 'Alice' }) }, requestState: state });
    expect(foreign.body.error).toMatchObject({ code: -32602, message: 'Invalid params: requestState failed its integrity check' });
    const altered = await callTool(a, { inputResponses: { step1: accept({ name: 'Alice' }) }, requestState: `${state}-TAMPERED` });
    expect(altered.body.error).toMatchObject({ code: -32602 });
  });

  it("with authorization, a state is its token's caller's: another subject of the same tenant is refused", async () => {
    const mint = (sub: string) => idp!.mint({ claims: { sub, tenant: 'bank', scope: undefined, clearance: 'public' } });
    const r1 = await callTool(authorized, {}, await mint('alice'));
    const res1 = r1.body.result as Record<string, unknown>;
    expect(res1).toMatchObject({ resultType: 'input_required', inputRequests: { step1: { method: 'elicitation/create' } } });
    const follow = { inputResponses: { step1: accept({ name: 'Alice' }) }, requestState: res1.requestState };
    const replayed = await callTool(authorized, follow, await mint('mallory'));
    expect(replayed.body.error).toEqual({ code: -32602, message: 'Invalid params: requestState belongs to another caller' });
    const own = await callTool(authorized, follow, await mint('alice'));
    expect(own.body.result).toMatchObject({ resultType: 'input_required', inputRequests: { step2: { method: 'elicitation/create' } } });
  });
});
