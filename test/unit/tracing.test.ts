/**
 * The tracing port (src/app/tracing.ts) and its configuration (src/config.ts `loadTracingConfig`): on only with an
 * OTLP endpoint; off, no span is made even with an SDK registered; the caller's trace context is read within bounds
 * and passed on; the tools/call pipeline's spans, in process, over an in-memory exporter.
 */
import { context, propagation, trace } from '@opentelemetry/api';
import { node } from '@opentelemetry/sdk-node';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { callerContext, setTracingEnabled, traceRequest, traceUpstreamCall, TRACEPARENT_MAX_CHARS, TRACESTATE_MAX_CHARS, tracingEnabled } from '#app/tracing';
import { loadTracingConfig } from '#config';
import { startTracing } from '#compose/tracing';
import { silentLog } from '#app/log';
import { aDefinition } from '../fixtures/builders.ts';
import { makeHarness, resultOf } from '../fixtures/handlers/harness.ts';

describe('loadTracingConfig: the standard OTEL_* variables', () => {
  it('off unless an OTLP endpoint is set', () => {
    expect(loadTracingConfig({})).toBeUndefined();
    expect(loadTracingConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: '  ', OTEL_SERVICE_NAME: 'x', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' })).toBeUndefined();
  });
  it('on with an endpoint: the traces endpoint wins, protocol defaults to http/protobuf, diagnostics to warn', () => {
    expect(loadTracingConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' })).toEqual({ endpoint: 'http://collector:4318', protocol: 'http/protobuf', diagLevel: 'warn' });
    expect(
      loadTracingConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://a:4318', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://b/v1/traces', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc', OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json', OTEL_LOG_LEVEL: 'DEBUG' }),
    ).toEqual({ endpoint: 'https://b/v1/traces', protocol: 'http/json', diagLevel: 'debug' });
    expect(loadTracingConfig({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://b:4318/v1/traces', OTEL_TRACES_EXPORTER: 'otlp' })?.endpoint).toBe('http://b:4318/v1/traces');
  });
  it('OTEL_SDK_DISABLED=true and OTEL_TRACES_EXPORTER=none turn it off', () => {
    const endpoint = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' };
    expect(loadTracingConfig({ ...endpoint, OTEL_SDK_DISABLED: 'True' })).toBeUndefined();
    expect(loadTracingConfig({ ...endpoint, OTEL_SDK_DISABLED: 'false' })).toBeDefined();
    expect(loadTracingConfig({ ...endpoint, OTEL_TRACES_EXPORTER: 'none' })).toBeUndefined();
  });
  it.each([
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' }, /the OTLP endpoint 'collector:4318' is not an http:\/\/ or https:\/\/ URL/],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'ftp://collector' }, /is not an http:\/\/ or https:\/\/ URL/],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/xml' }, /OTLP protocol 'http\/xml' is not one of http\/protobuf, http\/json, grpc/],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_TRACES_EXPORTER: 'zipkin' }, /OTEL_TRACES_EXPORTER 'zipkin': Estate exports traces by OTLP only/],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_LOG_LEVEL: 'loud' }, /OTEL_LOG_LEVEL 'loud' is not one of/],
  ])('refuses %j at start', (env, message) => {
    expect(() => loadTracingConfig(env)).toThrow(message);
  });
});

describe('the port, with an SDK registered in process', () => {
  const exporter = new node.InMemorySpanExporter();
  const provider = new node.NodeTracerProvider({ spanProcessors: [new node.SimpleSpanProcessor(exporter)] });
  beforeAll(() => provider.register());
  afterEach(() => {
    setTracingEnabled(false);
    exporter.reset();
  });
  afterAll(async () => {
    await provider.shutdown();
    trace.disable();
    context.disable();
    propagation.disable();
  });

  const traceId = 'a'.repeat(32);
  const spanId = 'b'.repeat(16);

  it('off: the work runs with no span, no context and no export, even with an SDK registered', async () => {
    expect(tracingEnabled()).toBe(false);
    const seen = await traceRequest('tools/call', { traceparent: `00-${traceId}-${spanId}-01` }, '2025-11-25', true, async () => trace.getActiveSpan(), () => undefined);
    expect(seen).toBeUndefined();
    expect(await traceUpstreamCall('ns', 't', async (meta, span) => [meta, span])).toEqual([undefined, undefined]);
    expect(exporter.getFinishedSpans()).toEqual([]);
    expect(await startTracing(undefined, silentLog)).toBeNull();
    expect(tracingEnabled()).toBe(false);
  });

  it('the caller context: a traceparent up to the bound is read, a longer one is not; an over-long tracestate is dropped alone', () => {
    const future = (length: number) => `cc-${traceId}-${spanId}-01-`.padEnd(length, 'x');
    expect(trace.getSpanContext(callerContext({ traceparent: future(TRACEPARENT_MAX_CHARS) }))?.traceId).toBe(traceId);
    expect(trace.getSpanContext(callerContext({ traceparent: future(TRACEPARENT_MAX_CHARS + 1) }))).toBeUndefined();
    const withState = trace.getSpanContext(callerContext({ traceparent: `00-${traceId}-${spanId}-01`, tracestate: 'k=v' }));
    expect(withState?.traceState?.get('k')).toBe('v');
    const longState = trace.getSpanContext(callerContext({ traceparent: `00-${traceId}-${spanId}-01`, tracestate: 'k='.padEnd(TRACESTATE_MAX_CHARS + 1, 'v') }));
    expect([longState?.spanId, longState?.traceState]).toEqual([spanId, undefined]);
    for (const meta of [undefined, null, 'x', [], { traceparent: 7 }, { traceparent: 'garbage' }]) expect(trace.getSpanContext(callerContext(meta))).toBeUndefined();
  });

  it('a caller that does not sample: nothing is recorded or built, yet the upstream still gets the trace context', async () => {
    setTracingEnabled(true);
    const out = await traceRequest(
      'tools/call',
      { traceparent: `00-${traceId}-${spanId}-00` },
      '2025-11-25',
      true,
      () => traceUpstreamCall('ns', 'tool', async (meta, span) => ({ meta, span })),
      () => undefined,
    );
    expect(out.span).toBeUndefined();
    expect(out.meta?.traceparent).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-00$`));
    expect(exporter.getFinishedSpans()).toEqual([]);
  });

  it('the pipeline in process: a non_idempotent call has its intent span and its record span under the call span', async () => {
    setTracingEnabled(true);
    const h = await makeHarness([aDefinition({ name: 'payments.transfer', handler: 'payments.transfer', sideEffect: 'non_idempotent', access: { classification: 'public' } })], {
      'payments.transfer': () => ({ content: [{ type: 'text', text: 'moved' }] }),
    });
    const s = h.session();
    await s.initialize();
    expect(exporter.getFinishedSpans().map((x) => x.name)).toEqual(['initialize']);
    exporter.reset();
    resultOf(await s.request('tools/call', { name: 'payments.transfer', arguments: { reference: 'PMT-771' }, _meta: { traceparent: `00-${traceId}-${spanId}-01` } }));
    const spans = exporter.getFinishedSpans();
    const byName = (name: string) => spans.find((x) => x.name === name);
    const request = byName('tools/call');
    const call = byName('execute_tool payments.transfer');
    expect(request?.parentSpanContext?.spanId).toBe(spanId);
    expect(call?.parentSpanContext?.spanId).toBe(request?.spanContext().spanId);
    for (const name of ['append ToolCallStarted', 'append ToolCalled']) expect(byName(name)?.parentSpanContext?.spanId, name).toBe(call?.spanContext().spanId);
    expect(call?.events.map((e) => e.name)).toEqual(['resolved', 'validated', 'handler', 'recorded']);
    expect(new Set(spans.map((x) => x.spanContext().traceId))).toEqual(new Set([traceId]));
  });
});
