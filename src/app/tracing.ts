/**
 * The tracing port (SPEC §9, docs/operations.md): what the call path asks of OpenTelemetry, over @opentelemetry/api
 * only. The SDK is started by the composition root (src/compose/tracing.ts) when an OTLP endpoint is configured, and
 * it turns this port on; until then every function here runs its work and nothing else — no span, no context, no
 * attribute object (the API's own no-op tracer would still allocate a span per call).
 *
 * A span that is not recording (the caller's trace context said "not sampled") still carries its context onward (to
 * an upstream), but the code that builds attributes and events is handed `undefined` instead of it: `span?.addEvent(…)`
 * then evaluates nothing.
 */
import { context, propagation, SpanKind, SpanStatusCode, trace, type Attributes, type Context, type Span } from '@opentelemetry/api';

export type { Span } from '@opentelemetry/api';

/** A ProxyTracer: it delegates to the SDK's tracer once one is registered. */
const tracer = trace.getTracer('estate');
let on = false;

/** Set by the composition root once the SDK is started (and cleared when it stops). */
export const setTracingEnabled = (enabled: boolean): void => {
  on = enabled;
};

export const tracingEnabled = (): boolean => on;

/**
 * The longest `traceparent` read from a request: W3C's version 00 is 55 characters; later versions may append fields,
 * so a little room is left. Longer is ignored (a new trace), never parsed.
 */
export const TRACEPARENT_MAX_CHARS = 256;
/** The longest `tracestate` read (the W3C limit; the SDK ignores longer ones too). */
export const TRACESTATE_MAX_CHARS = 512;

/**
 * The caller's trace context from a request's `params._meta` (`traceparent`, `tracestate`): strings within the bounds
 * above, handed to the registered W3C propagator. Anything else — absent, not a string, too long, malformed — is
 * ignored, and the request starts a new trace.
 */
export const callerContext = (meta: unknown): Context => {
  const base = context.active();
  if (typeof meta !== 'object' || meta === null) return base;
  const { traceparent, tracestate } = meta as Record<string, unknown>;
  if (typeof traceparent !== 'string' || traceparent.length > TRACEPARENT_MAX_CHARS) return base;
  const carrier: Record<string, string> = { traceparent };
  if (typeof tracestate === 'string' && tracestate.length <= TRACESTATE_MAX_CHARS) carrier.tracestate = tracestate;
  return propagation.extract(base, carrier);
};

/** The trace context to pass on in an outgoing request's `params._meta` (traceparent, tracestate), from `ctx`. */
const outgoingMeta = (ctx: Context): Record<string, string> => {
  const carrier: Record<string, string> = {};
  propagation.inject(ctx, carrier);
  const out: Record<string, string> = {};
  if (carrier.traceparent !== undefined) out.traceparent = carrier.traceparent;
  if (carrier.tracestate !== undefined) out.tracestate = carrier.tracestate;
  return out;
};

const bounded = (s: string): string => (s.length > 200 ? `${s.slice(0, 200)}...` : s);

/** Marks a span failed: `error.type` and an ERROR status with a bounded message. */
export const markFailed = (span: Span | undefined, type: string, message?: string): void => {
  if (!span) return;
  span.setAttribute('error.type', type);
  span.setStatus({ code: SpanStatusCode.ERROR, ...(message !== undefined ? { message: bounded(message) } : {}) });
};

const typeOf = (e: unknown): string => {
  if (typeof e === 'object' && e !== null) {
    const outcome = (e as { outcome?: unknown }).outcome;
    if (typeof outcome === 'string') return outcome;
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'number' || typeof code === 'string') return String(code);
  }
  return e instanceof Error ? e.name : 'error';
};

/**
 * Run `fn` inside a new span, the active one while it runs (so spans started below are its children), ended when `fn`
 * settles; a throw marks it failed. Off: `fn(undefined)`, nothing else.
 */
const inSpan = async <T>(name: string, kind: SpanKind, parent: Context, attributes: Attributes, fn: (span: Span | undefined) => Promise<T>): Promise<T> => {
  const span = tracer.startSpan(name, { kind, attributes }, parent);
  try {
    return await context.with(trace.setSpan(parent, span), () => fn(span.isRecording() ? span : undefined));
  } catch (e) {
    markFailed(span, typeOf(e), e instanceof Error ? e.message : undefined);
    throw e;
  } finally {
    span.end();
  }
};

/** The JSON-RPC error a request was answered with. */
export interface AnsweredError {
  code: number;
  message?: string;
}

/**
 * A span per MCP request, SERVER kind, named after the method as the metrics count it (`tools/call`; `other` for a
 * method the server does not know), parented on the caller's `_meta.traceparent`. `errorOf` says whether it was answered
 * with an error (the span's outcome and status).
 */
export const traceRequest = <T>(
  method: string,
  meta: unknown,
  revision: string | null,
  session: boolean,
  fn: () => Promise<T>,
  errorOf: (t: T) => AnsweredError | undefined,
): Promise<T> => {
  if (!on) return fn();
  const attributes = { 'mcp.method.name': method, 'mcp.protocol.version': revision ?? 'none', 'estate.session': session };
  return inSpan(method, SpanKind.SERVER, callerContext(meta), attributes, async (span) => {
    const t = await fn();
    if (!span) return t;
    const error = errorOf(t);
    if (error) {
      span.setAttribute('rpc.response.status_code', String(error.code));
      markFailed(span, String(error.code), error.message);
    }
    span.setAttribute('estate.outcome', error ? String(error.code) : 'ok');
    return t;
  });
};

/** A span per tools/call, a child of its request's: the gates are its events (src/mcp/tools-call.ts). */
export const traceToolCall = <T>(fn: (span: Span | undefined) => Promise<T>): Promise<T> =>
  on ? inSpan('execute_tool', SpanKind.INTERNAL, context.active(), { 'gen_ai.operation.name': 'execute_tool' }, fn) : fn(undefined);

/** A span per store operation on the call path (the call's intent, its record). */
export const traceStore = <T>(operation: string, eventType: string, fn: () => Promise<T>): Promise<T> =>
  on ? inSpan(`${operation} ${eventType}`, SpanKind.INTERNAL, context.active(), { 'db.operation.name': operation, 'estate.event.type': eventType }, () => fn()) : fn();

/**
 * A span per call sent to an upstream, CLIENT kind; `fn` is given the `_meta` entries that carry this span's context
 * to the upstream (`traceparent`, `tracestate`), or nothing when tracing is off, and the span when it records.
 */
export const traceUpstreamCall = <T>(ns: string, tool: string, fn: (meta: Record<string, string> | undefined, span: Span | undefined) => Promise<T>): Promise<T> => {
  if (!on) return fn(undefined, undefined);
  const attributes = { 'mcp.method.name': 'tools/call', 'gen_ai.tool.name': tool, 'estate.upstream': ns };
  return inSpan(`tools/call ${tool}`, SpanKind.CLIENT, context.active(), attributes, (span) => fn(outgoingMeta(context.active()), span));
};
