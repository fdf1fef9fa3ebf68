/**
 * The protocol core shared by every transport: catalogue read side, handlers, validators, call recorder and change
 * notifier, plus the method handlers both paths (stateful sessions and stateless requests) dispatch to. Transports
 * only move frames; everything a client can observe is decided here and in the session/stateless modules.
 */
import type { Logger } from 'pino';
import type { CallRecorder } from '../app/call-recorder.ts';
import type { CatalogueReader } from '../app/catalogue-reader.ts';
import type { SchemaCompiler } from '../domain/schema-compiler.ts';
import { handlerOutsideNamespace } from '../domain/tool-definition.ts';
import type { Principal } from '../domain/types.ts';
import type { HandlerLog, HandlerMap } from '../handlers/types.ts';
import type { CatalogueVersion } from '../../projections/catalogue.ts';
import { ChangeNotifier } from './change-notifier.ts';
import type { CompiledSchemaCache } from './compiled-schemas.ts';
import { isPlainObject } from './jsonrpc.ts';
import { createSchemaWarmup, type SchemaWarmup } from './schema-warmup.ts';
import { INCLUDE_DEPRECATED_META } from './tool-projection.ts';
import { listToolsPage, type ListPage } from './tools-list.ts';
import { callTool, type ToolCallRequest } from './tools-call.ts';

export const SERVER_INFO = { name: 'estate', version: '0.1.0' } as const;

export interface ServerCoreOptions {
  reader: CatalogueReader;
  handlers: HandlerMap;
  compiler: SchemaCompiler;
  recorder: CallRecorder;
  log: Logger;
  pageSize: number;
  listTtlMs: number;
  /** Signs and checks 2026-07-28 requestStates (input-required.ts); default: a random key per process. */
  stateKey?: Buffer;
  /** Why calls must be refused now (the store cannot write: src/ops/store-health.ts); null or absent: serve them. */
  storeRefusal?: () => string | null;
  /** Operations hooks (src/ops/metrics.ts); absent: nothing is counted. */
  metrics?: { request(method: string, revision: string, outcome: string): void; toolCall(o: { tool: string; version: string; outcome: string; seconds: number }): void };
}

/** Methods counted under their own name; anything a client invents is `other` (no label per made-up method). */
const COUNTED_METHODS = new Set(['initialize', 'ping', 'tools/list', 'tools/call', 'logging/setLevel', 'server/discover', 'subscriptions/listen', 'completion/complete']);

/**
 * Whether this process serves a version: its handler is bound here and belongs to the tool's namespace. A version
 * published before the handler-namespace rule (docs/security.md) may name another team's handler: it is never listed
 * nor called, whatever the store holds (src/mcp/schema-warmup.ts logs why).
 */
export const isOfferedBy =
  (handlers: HandlerMap) =>
  (v: CatalogueVersion): boolean =>
    Object.prototype.hasOwnProperty.call(handlers, v.definition.handler) && handlerOutsideNamespace(v.name, v.definition.handler) === null;

export class ServerCore {
  readonly reader: CatalogueReader;
  readonly log: Logger;
  readonly notifier: ChangeNotifier;
  readonly pageSize: number;
  readonly listTtlMs: number;
  private readonly handlers: HandlerMap;
  private readonly schemas: CompiledSchemaCache;
  private readonly warmup: SchemaWarmup;
  private readonly recorder: CallRecorder;
  private readonly stateKey: Buffer | undefined;
  private readonly storeRefusal: (() => string | null) | undefined;
  private readonly metrics: ServerCoreOptions['metrics'];
  private readonly isOffered: (v: CatalogueVersion) => boolean;

  constructor(o: ServerCoreOptions) {
    this.reader = o.reader;
    this.log = o.log;
    this.handlers = o.handlers;
    this.recorder = o.recorder;
    this.stateKey = o.stateKey;
    this.storeRefusal = o.storeRefusal;
    this.metrics = o.metrics;
    this.pageSize = o.pageSize;
    this.listTtlMs = o.listTtlMs;
    this.isOffered = isOfferedBy(o.handlers);
    // Validators compiled ahead of the first call, in slices off the request path (compiled-schemas.ts).
    this.warmup = createSchemaWarmup({ compiler: o.compiler, reader: o.reader, isOffered: this.isOffered, log: o.log });
    this.schemas = this.warmup.cache;
    this.notifier = new ChangeNotifier(o.reader);
  }

  capabilities(): Record<string, unknown> {
    return { tools: { listChanged: true } };
  }

  listTools(principal: Principal, params: Record<string, unknown>, revision: string): ListPage & { includeDeprecated: boolean } {
    const meta = isPlainObject(params._meta) ? params._meta : {};
    const includeDeprecated = meta[INCLUDE_DEPRECATED_META] === true;
    const view = this.reader.discovery.view(principal, includeDeprecated);
    return { ...listToolsPage(view, { revision, cursor: params.cursor, pageSize: this.pageSize }), includeDeprecated };
  }

  /** Count one answered request: outcome `ok` or the JSON-RPC error code. */
  observeRequest(method: string, revision: string | null, outcome: string): void {
    this.metrics?.request(COUNTED_METHODS.has(method) ? method : 'other', revision ?? 'none', outcome);
  }

  callTool(req: ToolCallRequest) {
    return callTool(
      {
        reader: this.reader,
        handlers: this.handlers,
        schemas: this.schemas,
        recorder: this.recorder,
        ...(this.stateKey ? { stateKey: this.stateKey } : {}),
        ...(this.storeRefusal ? { storeRefusal: this.storeRefusal } : {}),
        ...(this.metrics ? { observe: (o: { tool: string; version: string; outcome: string; seconds: number }) => this.metrics?.toolCall(o) } : {}),
        isOffered: this.isOffered,
        handlerLog: (fields) => this.handlerLog(fields),
      },
      req,
    );
  }

  async close(): Promise<void> {
    this.notifier.close();
    this.warmup.close();
    await this.recorder.flush();
  }

  private handlerLog(fields: Record<string, unknown>): HandlerLog {
    const child = this.log.child({ ...fields, component: 'handler' });
    return {
      debug: (msg, f) => child.debug(f ?? {}, msg),
      info: (msg, f) => child.info(f ?? {}, msg),
      warn: (msg, f) => child.warn(f ?? {}, msg),
      error: (msg, f) => child.error(f ?? {}, msg),
    };
  }
}
