/**
 * A session request that can send nothing before its answer is answered as plain JSON by Estate (src/mcp/session-json.ts),
 * past the SDK transport; one that may stream (progress, log messages, questions to the client) still gets the SDK's
 * event stream. The JSON path makes the transport's own checks first: each refusal below is compared with the one the
 * SDK transport gives the same request on the streaming path, so a check dropped from the JSON path fails here.
 */
import { JSONRPCMessageSchema } from '@modelcontextprotocol/core';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makePrincipal } from '#domain/access';
import { isSdkRequestShape } from '#mcp/session-json';
import { aDefinition } from '../fixtures/builders.ts';
import { makeHarness, type Harness } from '../fixtures/handlers/harness.ts';
import { serveMcpHttp, type McpHttpServer } from '../fixtures/mcp-http-server.ts';

const BOTH = 'application/json, text/event-stream';

let h: Harness;
let http: McpHttpServer;

beforeAll(async () => {
  h = await makeHarness([aDefinition({ access: { classification: 'public' } })], {
    'payments.lookup': (args, ctx) => {
      ctx.progress?.(1, 2, 'half way');
      return { content: [{ type: 'text', text: `payment ${String(args.reference)}: settled` }] };
    },
  });
  http = await serveMcpHttp(h.core, makePrincipal({}));
});

afterAll(() => http.close());

const post = async (body: unknown, headers: Record<string, string> = {}) => {
  const res = await fetch(http.url, { method: 'POST', headers: { 'content-type': 'application/json', accept: BOTH, ...headers }, body: JSON.stringify(body) });
  return { status: res.status, type: res.headers.get('content-type') ?? '', sid: res.headers.get('mcp-session-id'), text: await res.text() };
};

const open = async (capabilities: Record<string, unknown> = {}): Promise<Record<string, string>> => {
  const init = await post({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities, clientInfo: { name: 'unit', version: '1' } } });
  const headers = { 'mcp-session-id': init.sid as string, 'mcp-protocol-version': '2025-11-25' };
  await post({ jsonrpc: '2.0', method: 'notifications/initialized' }, headers);
  return headers;
};

let id = 1;
const call = (meta?: Record<string, unknown>) => ({
  jsonrpc: '2.0',
  id: id++,
  method: 'tools/call',
  params: { name: 'payments.lookup', arguments: { reference: 'PMT-123' }, ...(meta ? { _meta: meta } : {}) },
});

describe('a session request that only has its answer to send', () => {
  it('is answered as JSON with the session id, after its call record is durable', async () => {
    const headers = await open();
    const r = await post(call(), headers);
    expect(r.status).toBe(200);
    expect(r.type).toContain('application/json');
    expect(r.sid).toBe(headers['mcp-session-id']);
    const body = JSON.parse(r.text) as { result: { content: { text: string }[] } };
    expect(body.result.content[0]?.text).toBe('payment PMT-123: settled');
    expect(await h.calls(headers['mcp-session-id'] as string)).toHaveLength(1);
    const list = await post({ jsonrpc: '2.0', id: id++, method: 'tools/list' }, headers);
    expect(list.type).toContain('application/json');
  });

  it('streams when it may send something first: a progress token, or a client that can be asked', async () => {
    const plain = await open();
    const withToken = await post(call({ progressToken: 'p1' }), plain);
    expect(withToken.type).toContain('text/event-stream');
    expect(withToken.text).toContain('notifications/progress');
    expect(withToken.text).toContain('payment PMT-123: settled');
    const askable = await open({ elicitation: {} });
    const r = await post(call(), askable);
    expect(r.type).toContain('text/event-stream');
    expect(r.text).toContain('payment PMT-123: settled');
  });
});

describe('the JSON path refuses what the SDK transport refuses, with its answer', () => {
  const cases: [string, (m: Record<string, unknown>) => Record<string, unknown>, Record<string, string>][] = [
    ['an Accept header without text/event-stream (406)', (m) => m, { accept: 'application/json' }],
    ['an unsupported MCP-Protocol-Version header (400)', (m) => m, { 'mcp-protocol-version': '1999-01-01' }],
  ];
  for (const [what, change, extraHeaders] of cases) {
    it(what, async () => {
      // The same request on a session whose client can be asked goes the SDK transport's way.
      const plain = await open();
      const askable = await open({ elicitation: {} });
      const viaJson = await post(change(call()), { ...plain, ...extraHeaders });
      const viaSdk = await post(change(call()), { ...askable, ...extraHeaders });
      expect(viaJson.status).toBeGreaterThanOrEqual(400);
      expect({ status: viaJson.status, body: JSON.parse(viaJson.text) as unknown }).toEqual({ status: viaSdk.status, body: JSON.parse(viaSdk.text) as unknown });
      expect(await h.calls(plain['mcp-session-id'] as string)).toHaveLength(0);
    });
  }
});

describe('valid JSON the SDK schema would refuse (its answer: -32700 with id null, not SPEC §3\'s)', () => {
  const cases: [string, (m: Record<string, unknown>) => Record<string, unknown>][] = [
    ['a fractional id', (m) => ({ ...m, id: 1.5 })],
    ['a member JSON-RPC does not define', (m) => ({ ...m, extra: true })],
    ['a _meta that is not an object', (m) => ({ ...m, params: { ...(m.params as object), _meta: 5 } })],
  ];
  for (const [what, change] of cases) {
    it(`${what}: served as on stdio, the same on both paths, answered with its id`, async () => {
      const plain = await open();
      const askable = await open({ elicitation: {} });
      const message = change(call());
      const viaJson = await post(message, plain);
      const viaStream = await post(message, askable);
      for (const r of [viaJson, viaStream]) {
        expect(r.text).not.toContain('Parse error');
        expect(r.text).toContain(`"id":${JSON.stringify(message.id)}`);
      }
      expect(viaJson.status).toBe(viaStream.status);
    });
  }
});

describe("the JSON path's message-shape check", () => {
  it("accepts exactly the requests the SDK's JSONRPCMessageSchema accepts", () => {
    const scalar = fc.oneof(fc.string({ maxLength: 3 }), fc.integer(), fc.double(), fc.constantFrom(2 ** 53, -(2 ** 53), 1e21, -0), fc.boolean(), fc.constant(null));
    const value = fc.oneof(scalar, fc.dictionary(fc.constantFrom('taskId', 'x'), scalar, { maxKeys: 2 }), fc.array(scalar, { maxLength: 2 }));
    const meta = fc.oneof(
      value,
      fc.record({ progressToken: value, 'io.modelcontextprotocol/related-task': value, other: value }, { requiredKeys: [] }),
    );
    const params = fc.oneof(value, fc.record({ _meta: meta, name: value }, { requiredKeys: [] }));
    const message = fc.record(
      { jsonrpc: fc.constantFrom('2.0', '1.0'), id: value, method: fc.oneof(fc.constant('tools/call'), value), params, extra: value },
      { requiredKeys: ['jsonrpc', 'method', 'id'] },
    );
    fc.assert(
      fc.property(message, (m) => isSdkRequestShape(m) === JSONRPCMessageSchema.safeParse(m).success),
      { numRuns: 5000 },
    );
    // A member named __proto__ (JSON.parse makes it an own key): both refuse it at the top level.
    const proto = JSON.parse('{"jsonrpc":"2.0","id":1,"method":"a","__proto__":{}}') as unknown;
    expect([isSdkRequestShape(proto), JSONRPCMessageSchema.safeParse(proto).success]).toEqual([false, false]);
  });
});
