/**
 * Tracing (SPEC §9): `estate serve --http` with OTEL_EXPORTER_OTLP_ENDPOINT pointing at an in-test OTLP/HTTP receiver
 * (JSON encoding) exports, for a tools/call that carries the caller's `_meta.traceparent`, a request span parented on
 * the caller's span, a tool-call span under it with the gates as events, and the call record's store span under that —
 * all in the caller's trace. A traceparent that is malformed or absurdly long starts a new trace and never fails the
 * call. Estate in front of Estate: the caller's trace continues into the upstream's own spans.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTempStore, parseMcpBody, runCli, startHttpServer, startStdioServer, type HttpServer, type TempStore } from './helpers.ts';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from './otlp-receiver.ts';

const JSON_HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
const PRINCIPAL = ['--tenant', 'acme', '--scopes', 'payments.read', '--clearance', 'confidential'];
const STATELESS = '2026-07-28';
const SERVER = 2;
const CLIENT = 3;

const hex = (bytes: number): string => randomBytes(bytes).toString('hex');
const caller = () => {
  const traceId = hex(16);
  const spanId = hex(8);
  return { traceId, spanId, traceparent: `00-${traceId}-${spanId}-01` };
};

const otelEnv = (receiver: OtlpReceiver, service: string): NodeJS.ProcessEnv => ({
  OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
  OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
  OTEL_SERVICE_NAME: service,
  // Export each batch soon after it ends, so the test waits little; the content is what is asserted.
  OTEL_BSP_SCHEDULE_DELAY: '50',
});

let receiver: OtlpReceiver;
let tmp: TempStore;
let srv: HttpServer;

beforeAll(async () => {
  receiver = await startOtlpReceiver();
  tmp = makeTempStore('estate-tracing-');
  srv = await startHttpServer(['--demo', '--store', tmp.store, ...PRINCIPAL], { env: otelEnv(receiver, 'estate-e2e') });
});
afterAll(async () => {
  await srv?.stop();
  await receiver?.close();
  tmp?.cleanup();
});

const post = async (url: string, body: unknown, headers: Record<string, string> = {}) => {
  const r = await fetch(url, { method: 'POST', headers: { ...JSON_HEADERS, ...headers }, body: JSON.stringify(body) });
  return { sid: r.headers.get('mcp-session-id') ?? undefined, message: parseMcpBody(r.headers.get('content-type') ?? undefined, await r.text()).response };
};

const openSession = async (url: string): Promise<string> => {
  const init = await post(url, { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } } });
  await post(url, { jsonrpc: '2.0', method: 'notifications/initialized' }, { 'mcp-session-id': String(init.sid) });
  return String(init.sid);
};

const statelessCall = (url: string, name: string, args: Record<string, unknown>, meta: Record<string, unknown>) =>
  post(
    url,
    { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name, arguments: args, _meta: { 'io.modelcontextprotocol/protocolVersion': STATELESS, 'io.modelcontextprotocol/clientCapabilities': {}, ...meta } } },
    { 'mcp-protocol-version': STATELESS, 'mcp-method': 'tools/call', 'mcp-name': name },
  );

/** The tool-call span of a run, then its request span (its parent). */
const spansOfRun = async (runId: string): Promise<{ call: ReceivedSpan; request: ReceivedSpan }> => {
  const call = await receiver.span((s) => s.attributes['estate.run_id'] === runId, `the execute_tool span of run ${runId}`);
  const request = await receiver.span((s) => s.spanId === call.parentSpanId, `the request span of run ${runId}`);
  return { call, request };
};

describe('a traced tools/call, exported by OTLP', () => {
  it('2025 session: request span on the caller span, the call span under it with the gate events, the record span under that', async () => {
    const sid = await openSession(srv.url);
    const c = caller();
    const runId = `run-${hex(4)}`;
    const r = await post(
      srv.url,
      { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'payments.lookup', arguments: { reference: 'PMT-771', include_legs: false }, _meta: { traceparent: c.traceparent, tracestate: 'vendor=abc', 'io.estate/runId': runId } } },
      { 'mcp-session-id': sid },
    );
    expect(r.message).toHaveProperty('result');

    const { call, request } = await spansOfRun(runId);
    expect(request).toMatchObject({ traceId: c.traceId, parentSpanId: c.spanId, name: 'tools/call', kind: SERVER, service: 'estate-e2e' });
    expect(request.attributes).toMatchObject({ 'mcp.method.name': 'tools/call', 'mcp.protocol.version': '2025-11-25', 'estate.session': true, 'estate.outcome': 'ok' });
    expect(call).toMatchObject({ traceId: c.traceId, name: 'execute_tool payments.lookup' });
    expect(call.attributes).toMatchObject({ 'gen_ai.tool.name': 'payments.lookup', 'estate.tool.version': '1.0.0', 'estate.run_id': runId, 'estate.outcome': 'ok' });
    expect(String(call.attributes['estate.tool.schema_hash'])).toMatch(/^sha256:|^[0-9a-f]{16,}/);
    expect(call.events.map((e) => e.name)).toEqual(['resolved', 'validated', 'handler', 'recorded']);
    expect(call.events.find((e) => e.name === 'handler')?.attributes).toMatchObject({ 'estate.outcome': 'ok', 'estate.attempts': 1 });
    const record = await receiver.span((s) => s.parentSpanId === call.spanId && s.name === 'append ToolCalled', 'the call record span');
    expect(record.traceId).toBe(c.traceId);
    expect(srv.logs.seen.find((l) => l.msg === 'tracing: exporting spans by OTLP')).toMatchObject({ endpoint: `${receiver.url}/`, protocol: 'http/json' });
  });

  it('repair is an event of its own; a refusal ends after `validated` with the outcome, nothing run or recorded', async () => {
    const sid = await openSession(srv.url);
    const repairedRun = `run-${hex(4)}`;
    const refusedRun = `run-${hex(4)}`;
    const call = (args: Record<string, unknown>, runId: string) =>
      post(srv.url, { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'payments.lookup', arguments: args, _meta: { traceparent: caller().traceparent, 'io.estate/runId': runId } } }, { 'mcp-session-id': sid });
    // One repair: the surplus argument dropped (include_legs is given, so its default is not filled in).
    await call({ reference: 'PMT-771', include_legs: false, surplus: 1 }, repairedRun);
    await call({ reference: 'not a reference' }, refusedRun);

    const repaired = (await spansOfRun(repairedRun)).call;
    expect(repaired.events.map((e) => e.name)).toEqual(['resolved', 'validated', 'repaired', 'handler', 'recorded']);
    expect(repaired.events.find((e) => e.name === 'repaired')?.attributes).toEqual({ 'estate.repairs': 1 });
    const refused = (await spansOfRun(refusedRun)).call;
    expect(refused.events.map((e) => e.name)).toEqual(['resolved', 'validated']);
    expect(refused.events[1]?.attributes).toEqual({ 'estate.admitted': false });
    expect(refused.attributes['estate.outcome']).toBe('invalid_arguments');
  });

  it('2026-07-28 stateless request: the same tree, no session, and an error answer marks the request span', async () => {
    const c = caller();
    const runId = `run-${hex(4)}`;
    const r = await statelessCall(srv.url, 'payments.lookup', { reference: 'PMT-771' }, { traceparent: c.traceparent, 'io.estate/runId': runId });
    expect(r.message).toHaveProperty('result');
    const { call, request } = await spansOfRun(runId);
    expect(request).toMatchObject({ traceId: c.traceId, parentSpanId: c.spanId, kind: SERVER });
    expect(request.attributes).toMatchObject({ 'mcp.protocol.version': STATELESS, 'estate.session': false, 'estate.outcome': 'ok' });
    expect(call.traceId).toBe(c.traceId);

    const unknown = caller();
    const u = await statelessCall(srv.url, 'no.such_tool', {}, { traceparent: unknown.traceparent });
    expect(u.message).toMatchObject({ error: { code: -32602 } });
    const failed = await receiver.span((s) => s.traceId === unknown.traceId && s.kind === SERVER, 'the failed request span');
    expect(failed.attributes).toMatchObject({ 'estate.outcome': '-32602', 'rpc.response.status_code': '-32602', 'error.type': '-32602' });
    expect(failed.status.code).toBe(2);
  });

  it('attack: a malformed or 1 MB traceparent is ignored (a new trace), never an error', async () => {
    const sid = await openSession(srv.url);
    const long = caller();
    // A future version may carry more fields, so the W3C parser would accept this one, 1 MB and all: only the bound stops it.
    const huge = `cc-${long.traceId}-${long.spanId}-01-${'x'.repeat(1_000_000)}`;
    const cases: [string, unknown][] = [
      ['huge', huge],
      ['garbage', 'not a traceparent'],
      ['zero trace id', `00-${'0'.repeat(32)}-${hex(8)}-01`],
      ['not a string', { traceId: long.traceId }],
      ['number', 42],
    ];
    for (const [label, traceparent] of cases) {
      const runId = `run-${label.replace(/\W/g, '-')}-${hex(3)}`;
      const r = await post(
        srv.url,
        { jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'payments.lookup', arguments: { reference: 'PMT-771' }, _meta: { traceparent, tracestate: 'k='.padEnd(5000, 'v'), 'io.estate/runId': runId } } },
        { 'mcp-session-id': sid },
      );
      expect(r.message, label).toHaveProperty('result');
      const { request } = await spansOfRun(runId);
      expect(request.parentSpanId, label).toBe('');
      expect(request.traceId, label).not.toBe(long.traceId);
      expect(request.traceId, label).toMatch(/^[0-9a-f]{32}$/);
    }
  });
});

describe('on stop', () => {
  it('what is still buffered is exported before the process exits', async () => {
    const store = makeTempStore('estate-trace-flush-');
    // A batch delay far beyond the test: only the flush at shutdown can send these spans.
    const held = await startHttpServer(['--demo', '--store', store.store, ...PRINCIPAL], { env: { ...otelEnv(receiver, 'estate-flush'), OTEL_BSP_SCHEDULE_DELAY: '600000' } });
    try {
      const c = caller();
      const r = await statelessCall(held.url, 'payments.lookup', { reference: 'PMT-771' }, { traceparent: c.traceparent });
      expect(r.message).toHaveProperty('result');
      expect(receiver.spans.seen.filter((s) => s.traceId === c.traceId)).toEqual([]);
      expect(await held.stop()).toBe(0);
      expect(receiver.spans.seen.filter((s) => s.traceId === c.traceId).map((s) => s.name).sort()).toEqual(['append ToolCalled', 'execute_tool payments.lookup', 'tools/call']);
    } finally {
      await held.stop();
      store.cleanup();
    }
  });
});

describe('over stdio', () => {
  it('the same spans, and stdout stays protocol only', async () => {
    const store = makeTempStore('estate-trace-stdio-');
    const stdio = await startStdioServer(['--demo', '--store', store.store, ...PRINCIPAL], { env: otelEnv(receiver, 'estate-stdio') });
    try {
      await stdio.initialize();
      const c = caller();
      const runId = `run-${hex(4)}`;
      const r = await stdio.request('tools/call', { name: 'payments.lookup', arguments: { reference: 'PMT-771' }, _meta: { traceparent: c.traceparent, 'io.estate/runId': runId } });
      expect(r).toHaveProperty('result');
      const { call, request } = await spansOfRun(runId);
      expect([request.service, request.traceId, request.parentSpanId, call.traceId]).toEqual(['estate-stdio', c.traceId, c.spanId, c.traceId]);
      for (const line of stdio.lines.seen) expect(() => JSON.parse(line), line).not.toThrow();
    } finally {
      await stdio.stop();
      store.cleanup();
    }
  });
});

describe('Estate in front of Estate: the trace continues upstream', () => {
  let upstreamStore: TempStore;
  let frontStore: TempStore;
  let upstream: HttpServer;
  let front: HttpServer;

  beforeAll(async () => {
    upstreamStore = makeTempStore('estate-trace-up-');
    frontStore = makeTempStore('estate-trace-front-');
    upstream = await startHttpServer(['--store', upstreamStore.store, '--demo', ...PRINCIPAL], { env: otelEnv(receiver, 'estate-upstream') });
    const cli = async (args: string[]) => {
      const r = await runCli([...args, '--store', frontStore.store, '--json']);
      expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(0);
    };
    await cli(['upstream', 'add', 'pay', '--url', String(upstream.url), '--scopes', 'pay.use', '--clearance', 'internal']);
    await cli(['upstream', 'sync', 'pay']);
    await cli(['upstream', 'approve', 'pay', '--all']);
    front = await startHttpServer(['--store', frontStore.store, '--tenant', 'acme', '--scopes', 'pay.use', '--clearance', 'internal', '--upstream-sync-interval', '0'], {
      env: otelEnv(receiver, 'estate-front'),
    });
  }, 120_000);

  afterAll(async () => {
    await front?.stop();
    await upstream?.stop();
    upstreamStore?.cleanup();
    frontStore?.cleanup();
  });

  it('the proxied call carries traceparent to the upstream, whose spans join the caller trace under the front client span', async () => {
    const c = caller();
    const runId = `run-${hex(4)}`;
    const r = await statelessCall(String(front.url), 'pay.payments_lookup', { reference: 'PMT-771' }, { traceparent: c.traceparent, 'io.estate/runId': runId });
    expect(r.message).toHaveProperty('result');

    const { call } = await spansOfRun(runId);
    expect(call).toMatchObject({ traceId: c.traceId, service: 'estate-front' });
    const client = await receiver.span((s) => s.parentSpanId === call.spanId && s.kind === CLIENT, 'the front client span');
    expect(client).toMatchObject({ traceId: c.traceId, name: 'tools/call payments.lookup', service: 'estate-front' });
    expect(client.attributes).toMatchObject({ 'estate.upstream': 'pay', 'gen_ai.tool.name': 'payments.lookup' });
    const served = await receiver.span((s) => s.service === 'estate-upstream' && s.parentSpanId === client.spanId, "the upstream's request span");
    expect(served).toMatchObject({ traceId: c.traceId, kind: SERVER, name: 'tools/call' });
    const upstreamCall = await receiver.span((s) => s.service === 'estate-upstream' && s.parentSpanId === served.spanId, "the upstream's tool-call span");
    expect(upstreamCall).toMatchObject({ traceId: c.traceId, name: 'execute_tool payments.lookup' });
  });
});
