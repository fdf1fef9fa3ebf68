/**
 * SPEC §7 (a non_idempotent call is never re-sent once it may have reached the upstream) against 2026-07-28
 * input-required rounds: the upstream asks its client a question mid-call, Estate cannot relay it on a stateless
 * request, and the round's follow-up runs the call again from the start. For a proxied non_idempotent tool that would
 * send the call to the upstream twice, so Estate refuses the question instead and the call ends with one execution
 * (counted at the fixture upstream, test/fixtures/upstream/fixture-server.mjs). A read-only tool keeps the rounds:
 * sending it again is what its side-effect class allows.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTempStore, parseMcpBody, runCli, startHttpServer, type HttpServer, type TempStore } from './helpers.ts';

const FIXTURE = fileURLToPath(new URL('../fixtures/upstream/fixture-server.mjs', import.meta.url));
const PRINCIPAL = ['--tenant', 'acme', '--scopes', 'fx.use', '--clearance', 'internal', '--subject', 'rounds-e2e'];
const CAPS = { elicitation: {} };
const askSchema = { type: 'object', properties: {} };
const TOOLS = [
  { name: 'ask', description: 'Asks for a name, then writes (not idempotent).', inputSchema: askSchema },
  { name: 'ask_ro', description: 'Asks for a name (read-only).', inputSchema: askSchema, annotations: { readOnlyHint: true } },
];

type Body = Record<string, unknown> & { result?: Record<string, unknown>; error?: { code: number; message: string } };

let nextId = 1;
const call = async (url: string, name: string, params: Record<string, unknown> = {}): Promise<Body> => {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': name },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: nextId++,
      method: 'tools/call',
      params: { name, arguments: {}, ...params, _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': CAPS, ...((params._meta as object | undefined) ?? {}) } },
    }),
  });
  return (parseMcpBody(res.headers.get('content-type') ?? undefined, await res.text()).response ?? {}) as Body;
};

/** What a compliant client does: answer every question (accept, name Alice) and call again, until a final result. */
const callAnswering = async (url: string, name: string, runId: string): Promise<{ final: Record<string, unknown>; rounds: number }> => {
  let params: Record<string, unknown> = { _meta: { 'io.estate/runId': runId } };
  for (let rounds = 0; rounds < 4; rounds++) {
    const body = await call(url, name, params);
    const r = body.result;
    if (!r) throw new Error(`no result: ${JSON.stringify(body.error)}`);
    if (r.resultType !== 'input_required') return { final: r, rounds };
    const keys = Object.keys(r.inputRequests as object);
    params = { ...params, inputResponses: Object.fromEntries(keys.map((k) => [k, { action: 'accept', content: { name: 'Alice' } }])), requestState: r.requestState };
  }
  throw new Error('still asking after 4 rounds');
};

const textOf = (r: Record<string, unknown>): string => (r.content as { text?: string }[]).map((c) => c.text ?? '').join('\n');

describe('2026-07-28 input-required rounds in front of an upstream', () => {
  let store: TempStore;
  let calls: string;
  let http: HttpServer;
  const cli = async (args: string[]) => {
    const r = await runCli([...args, '--store', store.store], { timeoutMs: 120_000 });
    expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(0);
    return r.stdout.trim().startsWith('{') ? (JSON.parse(r.stdout) as Record<string, unknown>) : null;
  };
  const sent = (tool: string): number => readFileSync(calls, 'utf8').split('\n').filter(Boolean).filter((l) => (JSON.parse(l) as { tool: string }).tool === tool).length;

  beforeAll(async () => {
    store = makeTempStore('estate-rounds-');
    const spec = store.file('tools.json', { tools: TOOLS });
    calls = store.file('calls.log', '');
    await cli(['upstream', 'add', 'fx', '--command', `${process.execPath} ${FIXTURE} ${spec} ${calls}`, '--scopes', 'fx.use', '--clearance', 'internal', '--json']);
    await cli(['upstream', 'sync', 'fx', '--json']);
    await cli(['upstream', 'approve', 'fx', '--all', '--json']);
    http = await startHttpServer(['--store', store.store, ...PRINCIPAL, '--upstream-sync-interval', '0']);
  }, 300_000);

  afterAll(async () => {
    await http?.stop();
    store?.cleanup();
  });

  it('never sends a non_idempotent upstream call twice: its question is refused and the one execution is the call', async () => {
    const runId = `rounds-ni-${Date.now()}`;
    const { final, rounds } = await callAnswering(http.url, 'fx.ask', runId);
    expect(sent('ask')).toBe(1);
    expect(rounds).toBe(0);
    expect(final.isError).toBe(true);
    expect(textOf(final)).toMatch(/^upstream fx: no answer: .*never sent twice/);
    const recorded = await cli(['calls', runId, '--json']);
    expect((recorded?.calls as { outcome: string; version: string }[]).map((c) => c.outcome)).toEqual(['upstream_error']);
  }, 120_000);

  it('keeps the rounds for a read-only upstream tool (sending it again is allowed): answered on the follow-up', async () => {
    const before = sent('ask_ro');
    const { final, rounds } = await callAnswering(http.url, 'fx.ask_ro', `rounds-ro-${Date.now()}`);
    expect(rounds).toBe(1);
    expect([final.isError ?? false, textOf(final)]).toEqual([false, 'answered: Alice']);
    expect(sent('ask_ro') - before).toBe(2);
  }, 120_000);
});
