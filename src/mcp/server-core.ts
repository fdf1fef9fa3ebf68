/**
 * The protocol core shared by every transport: catalogue read side, handlers, validators, call recorder and change
 * notifier, and the tools/call pipeline built once from them. Both paths (stateful sessions and stateless requests)
 * dispatch through the one method table (method-table.ts), whose rows call in here. Transports only move frames;
 * everything a client can observe is decided here, in the table and in the session/stateless modules.
 */
import type { CallRecorder } from '#app/call-recorder';
import type { CatalogueReader } from '#app/catalogue-reader';
import type { SchemaCompiler } from '#domain/schema-compiler';
import type { JsonObject } from '#domain/types';
import { handlerOutsideNamespace } from '#domain/tool-definition';
import type { Principal } from '#domain/types';
import type { RootLog } from '#app/log';
import { DEFAULT_MAX_CALLS_PER_SUBJECT, DEFAULT_MAX_UNTAKEN_BYTES_PER_SUBJECT, DEFAULT_STATE_TTL_MS } from '#config';
import { handlerLogOver } from '#handlers/handler-log';
import type { UntakenAccount } from '#http/unsent';
import type { CallToolResult, HandlerLog, HandlerMap } from '#handlers/types';
import type { CatalogueVersion } from '#projections/catalogue';
import { ChangeNotifier } from './change-notifier.ts';
import { tooManyCalls, tooManyUntaken } from './error-map.ts';
import type { InputRequiredResult } from './input-required.ts';
import { isPlainObject } from './jsonrpc.ts';
import { createSchemaWarmup, type SchemaWarmup } from './schema-warmup.ts';
import { boundKey, SubjectCounts, subjectOf } from './subject-counts.ts';
import { INCLUDE_DEPRECATED_META } from './tool-projection.ts';
import { ListPageCache, type CachedPage } from './list-cache.ts';
import { createToolCallPipeline, type ToolCallPipeline, type ToolCallRequest } from './tools-call.ts';
import { executorsFrom } from './tool-call/executor.ts';

export { SERVER_INFO } from './server-info.ts';

export interface ServerCoreOptions {
  reader: CatalogueReader;
  handlers: HandlerMap;
  compiler: SchemaCompiler;
  /** Compiles large schemas to source in another thread (the definition worker); absent: every schema compiles here. */
  offThread?: (schema: JsonObject, where: string) => Promise<string | undefined>;
  /** Compile validators ahead of calls only from `startWarmup()` (a serving process calls it once ready). */
  deferWarmup?: boolean;
  recorder: CallRecorder;
  log: RootLog;
  pageSize: number;
  listTtlMs: number;
  /** Signs and checks 2026-07-28 requestStates (input-required.ts); default: a random key per process. */
  stateKey?: Buffer;
  /**
   * How long a call's requestStates are accepted after its first was issued (ESTATE_STATE_TTL_MS); default
   * DEFAULT_STATE_TTL_MS.
   */
  stateTtlMs?: number;
  /** The tools/call pipeline's clock (call timings, requestState issue and expiry); default Date.now. */
  now?: () => number;
  /**
   * tools/calls one subject may have running at once, over every transport and session (ESTATE_MAX_CALLS_PER_SUBJECT;
   * default DEFAULT_MAX_CALLS_PER_SUBJECT): one caller's burst must not take every handler and upstream slot there is.
   */
  maxCallsPerSubject?: number;
  /**
   * Bytes of answers one subject's clients may leave untaken (written, not read) before its next tools/call is refused
   * (ESTATE_MAX_UNTAKEN_BYTES_PER_SUBJECT; default DEFAULT_MAX_UNTAKEN_BYTES_PER_SUBJECT): an answer is held until its
   * client takes it or 30 s pass with none of it taken, so without this a caller that never reads could go on making
   * answers for this process to hold, one call after another.
   */
  maxUntakenBytesPerSubject?: number;
  /** Why calls must be refused now (the store cannot write: src/ops/store-health.ts); null or absent: serve them. */
  storeRefusal?: () => string | null;
  /** Operations hooks (src/ops/metrics.ts); absent: nothing is counted. */
  metrics?: { request(method: string, revision: string, outcome: string): void; toolCall(o: { tool: string; version: string; outcome: string; seconds: number }): void };
}

/**
 * Whether this process serves a version: its handler is bound here and belongs to the tool's namespace. A version
 * published before the handler-namespace rule (docs/security.md) may name another team's handler: it is never listed
 * nor called, whatever the store holds (src/mcp/schema-warmup.ts logs why).
 */
export const isOfferedBy =
  (handlers: HandlerMap) =>
  (v: CatalogueVersion): boolean =>
    Object.prototype.hasOwnProperty.call(handlers, v.handler) && handlerOutsideNamespace(v.name, v.handler) === null;

export class ServerCore {
  readonly reader: CatalogueReader;
  readonly log: RootLog;
  readonly notifier: ChangeNotifier;
  readonly pageSize: number;
  readonly listTtlMs: number;
  private readonly warmup: SchemaWarmup;
  private readonly recorder: CallRecorder;
  private readonly metrics: ServerCoreOptions['metrics'];
  private readonly pages = new ListPageCache();
  /** Built once from the dependencies above: a call only brings its own request. */
  private readonly pipeline: ToolCallPipeline;
  private readonly maxCallsPerSubject: number;
  /** tools/calls running now, per subject. */
  private readonly running = new SubjectCounts();
  private readonly maxUntakenBytesPerSubject: number;
  /** Bytes of answers written and not yet taken by their clients, per subject (#http/unsent). */
  private readonly untaken = new SubjectCounts();

  constructor(o: ServerCoreOptions) {
    this.reader = o.reader;
    this.log = o.log;
    this.recorder = o.recorder;
    this.metrics = o.metrics;
    this.pageSize = o.pageSize;
    this.listTtlMs = o.listTtlMs;
    this.maxCallsPerSubject = o.maxCallsPerSubject ?? DEFAULT_MAX_CALLS_PER_SUBJECT;
    this.maxUntakenBytesPerSubject = o.maxUntakenBytesPerSubject ?? DEFAULT_MAX_UNTAKEN_BYTES_PER_SUBJECT;
    const isOffered = isOfferedBy(o.handlers);
    // Validators compiled ahead of the first call, in slices off the request path (compiled-schemas.ts).
    this.warmup = createSchemaWarmup({ compiler: o.compiler, reader: o.reader, isOffered, log: o.log, deferStart: o.deferWarmup === true, ...(o.offThread ? { offThread: o.offThread } : {}) });
    this.notifier = new ChangeNotifier(o.reader);
    const metrics = o.metrics;
    this.pipeline = createToolCallPipeline({
      reader: o.reader,
      executors: executorsFrom(o.handlers),
      schemas: this.warmup.cache,
      recorder: o.recorder,
      isOffered,
      handlerLog: (fields) => this.handlerLog(fields),
      ...(o.stateKey ? { stateKey: o.stateKey } : {}),
      stateTtlMs: o.stateTtlMs ?? DEFAULT_STATE_TTL_MS,
      ...(o.now ? { now: o.now } : {}),
      ...(o.storeRefusal ? { storeRefusal: o.storeRefusal } : {}),
      storeFailed: (fields) => this.log.error(fields, 'the store refused a call\'s write: answered -32050 (the caller sees the call id, not the reason)'),
      ...(metrics ? { observe: (c: { tool: string; version: string; outcome: string; seconds: number }) => metrics.toolCall(c) } : {}),
    });
  }

  /** Start compiling the served versions' validators ahead of calls (with `deferWarmup`: once the server is ready). */
  startWarmup(): void {
    this.warmup.start();
  }

  capabilities(): Record<string, unknown> {
    return { tools: { listChanged: true } };
  }

  /** A page of the caller's view, serialized once per view revision (list-cache.ts). */
  async listTools(principal: Principal, params: Record<string, unknown>, revision: string): Promise<CachedPage & { includeDeprecated: boolean }> {
    const meta = isPlainObject(params._meta) ? params._meta : {};
    const includeDeprecated = meta[INCLUDE_DEPRECATED_META] === true;
    const view = this.reader.discovery.view(principal, includeDeprecated);
    const page = await this.pages.page(view, { revision, cursor: params.cursor, pageSize: this.pageSize }, (vs) => this.reader.details.ofMany(vs));
    return { ...page, includeDeprecated };
  }

  /** Count one answered request: outcome `ok` or the JSON-RPC error code. `method`: the table's label (countedMethod). */
  observeRequest(method: string, revision: string | null, outcome: string): void {
    this.metrics?.request(method, revision ?? 'none', outcome);
  }

  /**
   * A call, counted against its subject's bound while it runs (maxCallsPerSubject); refused past it, before any work,
   * and while the subject's clients leave more than maxUntakenBytesPerSubject of answers untaken.
   * Not an async wrapper: the caller awaits the pipeline's own promise (no extra turn), the count is given back beside.
   */
  callTool(req: ToolCallRequest): Promise<CallToolResult | InputRequiredResult> {
    const key = boundKey(req.principal);
    if (this.running.of(key) >= this.maxCallsPerSubject) return Promise.reject(tooManyCalls(subjectOf(req.principal), this.maxCallsPerSubject));
    const unread = this.untaken.of(key);
    if (unread > this.maxUntakenBytesPerSubject) return Promise.reject(tooManyUntaken(subjectOf(req.principal), unread, this.maxUntakenBytesPerSubject));
    this.running.take(key);
    // The slot is held until the call has answered AND every execution of its handler has ended: a call cancelled or
    // timed out answers at once, while a handler that does not watch its signal runs on. Released at the answer, 80 such
    // executions of one subject ran at once against a bound of 4.
    let open = 1;
    const release = (): void => {
      if (--open === 0) this.running.give(key);
    };
    req.onExecution = (ended) => {
      open++;
      void ended.then(release);
    };
    const call = this.pipeline.call(req); // async: it cannot throw, only reject
    call.then(release, release);
    return call;
  }

  /**
   * What answers to `principal` leave untaken is charged to its subject (#http/unsent: chargeUntakenTo), and counted
   * against maxUntakenBytesPerSubject by callTool.
   */
  untakenAccount(principal: Principal): UntakenAccount {
    const key = boundKey(principal);
    return {
      hold: (bytes) => {
        this.untaken.take(key, bytes);
        return () => this.untaken.give(key, bytes);
      },
    };
  }

  async close(): Promise<void> {
    this.notifier.close();
    this.warmup.close();
    await this.recorder.flush();
  }

  /** Built on the handler's first line: most calls log nothing, and a child logger costs more than the rest of the wiring. */
  private handlerLog(fields: Record<string, unknown>): HandlerLog {
    let log: HandlerLog | undefined;
    const of = (): HandlerLog => (log ??= handlerLogOver(this.log.child({ ...fields, component: 'handler' })));
    return {
      debug: (msg, f) => of().debug(msg, f),
      info: (msg, f) => of().info(msg, f),
      warn: (msg, f) => of().warn(msg, f),
      error: (msg, f) => of().error(msg, f),
    };
  }
}
