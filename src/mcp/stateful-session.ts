/**
 * One stateful MCP session (2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05): the deep dive's five gates, in order.
 *  1. envelope invalid → error with the readable id, else null   (done by `handleFrame` / the transport)
 *  2. `notifications/*` → handled, never answered
 *  3. no id → nothing answered
 *  4. not initialized and not a method the table answers before initialize (`initialize`, `ping`) → -32600
 *  5. dispatch through the method table (method-table.ts) → result or JSON-RPC error
 * Gate 2 before gate 3: a notification has no id, and swallowing `notifications/initialized` at gate 3 is the bug
 * that looks like a transport problem.
 * Before gate 1, a well-formed RESPONSE (no method; an id and exactly one of result/error) is the client answering one
 * of our requests (elicitation/create, sampling/createMessage): it settles that request and is never answered. Any
 * other envelope without a method still fails gate 1 as before.
 */
import { traceRequest } from '#app/tracing';
import type { Principal } from '#domain/types';
import { Cancellation } from './cancellation.ts';
import type { ViewWatcher } from './change-notifier.ts';
import type { CallToolResult } from '#handlers/types';
import { askDeclared, CAPABILITY_OF, ClientRequests, type ClientSender } from './client-requests.ts';
import { clientInfoRefusal, clientOfInfo, type ClientInfo } from './client-info.ts';
import { batchRefusal, duplicateId, type BatchLimits } from './batch-limits.ts';
import { McpError, methodNotFound, notInitialized, toJsonRpcError } from './error-map.ts';
import type { InputRequiredResult } from './input-required.ts';
import {
  checkEnvelope,
  errorOfResponse,
  failure,
  INVALID_REQUEST,
  isPlainObject,
  isRequest,
  isResponseEnvelope,
  success,
  type JsonRpcCall,
  type JsonRpcNotification,
  type JsonRpcRequest,
  type JsonRpcResponse,
  type RequestId,
} from './jsonrpc.ts';
import { negotiate } from './revisions.ts';
import { countedMethod, findMethod, type SessionHost } from './method-table.ts';
import type { ServerCore } from './server-core.ts';
import { SERVER_INFO } from './server-info.ts';
import type { ListPage } from './tools-list.ts';

export interface SessionOptions {
  /** Session id (HTTP) or connection id (stdio): the default run id. */
  id: string;
  principal: Principal;
  transport: 'stdio' | 'http';
  /** Server-initiated messages (list_changed). */
  notify(message: JsonRpcNotification): void;
  /** Messages about one request (progress, log messages), on that request's stream; default: `notify`. */
  notifyRequest?(message: JsonRpcNotification, requestId: RequestId): void;
  /** Requests to the client (elicitation, sampling) and their cancellations, on the related request's stream. */
  sendToClient?: ClientSender;
  batchLimits?: BatchLimits;
}

export class StatefulSession {
  revision: string | undefined;
  client: ClientInfo | null = null;
  private initialized = false;
  /** Set by logging/setLevel: handlers' log messages at or above it are sent to the client. */
  private logLevel: string | undefined;
  /** name → version, from the last tools/list (all its pages): unpinned calls use it. */
  private listed = new Map<string, string>();
  private listing: { includeDeprecated: boolean; revision: number } | null = null;
  private readonly inFlight = new Map<RequestId, Cancellation>();
  /** Ids of requests being handled, and ids an edge has claimed for requests on their way here (see `claim`). */
  private readonly active = new Set<RequestId>();
  private readonly claimed = new Set<RequestId>();
  private watcher: ViewWatcher | null = null;
  private closed = false;
  /** What the client declared in initialize: elicitation and sampling are asked only of a client that offers them. */
  private clientCapabilities: Record<string, unknown> = {};
  /** The client declared a capability a handler may use to ask it something (elicitation, sampling, roots). */
  private mayAsk = false;
  private readonly clientRequests: ClientRequests | null;

  constructor(
    private readonly core: ServerCore,
    readonly options: SessionOptions,
  ) {
    this.clientRequests = options.sendToClient ? new ClientRequests(options.sendToClient) : null;
  }

  get id(): string {
    return this.options.id;
  }

  get isInitialized(): boolean {
    return this.initialized;
  }

  /**
   * A parsed frame: one message, or a batch (answered per message on 2025-03-26 sessions only). `bytes`: the frame's
   * size as received, for the batch bound.
   */
  async handleFrame(raw: unknown, bytes?: number): Promise<JsonRpcResponse | JsonRpcResponse[] | null> {
    if (Array.isArray(raw)) {
      const refused = batchRefusal(raw, this.revision, this.options.batchLimits, bytes);
      if (refused) return refused;
      const answers = await Promise.all(raw.map((m) => this.handleRaw(m)));
      const out = answers.filter((a): a is JsonRpcResponse => a !== null);
      return out.length > 0 ? out : null;
    }
    return this.handleRaw(raw);
  }

  handleRaw(raw: unknown): Promise<JsonRpcResponse | null> {
    if (isResponseEnvelope(raw)) {
      this.acceptResponse(raw);
      return Promise.resolve(null);
    }
    const env = checkEnvelope(raw);
    if (!env.ok) return Promise.resolve(env.response);
    return this.handle(env.message);
  }

  /** Gates 2–5 for a message whose envelope is valid. */
  async handle(message: JsonRpcCall): Promise<JsonRpcResponse | null> {
    if (message.method.startsWith('notifications/')) {
      this.onNotification(message);
      return null;
    }
    if (!isRequest(message)) return null;
    if (!this.initialized && !findMethod(message.method, 'stateful')?.beforeInitialize) {
      return failure(message.id, notInitialized().code, notInitialized().message);
    }
    const id = message.id;
    if (this.claimed.has(id)) this.claimed.delete(id);
    else if (this.active.has(id)) return duplicateId(id);
    this.active.add(id);
    try {
      // One span per request (src/app/tracing.ts), parented on the caller's params._meta.traceparent.
      return await traceRequest(countedMethod(message.method), message.params?._meta, this.revision ?? null, true, () => this.answer(message), errorOfResponse);
    } finally {
      this.active.delete(id);
    }
  }

  /** Gate 5 and its answer: a result, or the error the method ended with; counted either way. */
  private async answer(message: JsonRpcRequest): Promise<JsonRpcResponse> {
    try {
      const answered = success(message.id, await this.dispatch(message));
      this.core.observeRequest(countedMethod(message.method), this.revision ?? null, 'ok');
      return answered;
    } catch (e) {
      const err = toJsonRpcError(e);
      this.core.observeRequest(countedMethod(message.method), this.revision ?? null, String(err.code));
      if (!(e instanceof McpError)) this.core.log.error({ err: e, method: message.method, session: this.id }, 'request failed');
      return { jsonrpc: '2.0', id: message.id, error: err };
    }
  }

  /**
   * Reserve a request id before the message reaches `handle` through a transport that routes answers by id (the SDK's
   * HTTP transport would send the first request's answer down the second's stream). False: the id is in flight here,
   * and the caller answers `duplicateId`. `unclaim` if the message never arrives.
   */
  claim(id: RequestId): boolean {
    if (this.active.has(id) || this.claimed.has(id)) return false;
    this.claimed.add(id);
    return true;
  }

  unclaim(id: RequestId): void {
    this.claimed.delete(id);
  }

  /**
   * Whether answering `req` can send nothing else first: true for every method but a tools/call that may report
   * progress (it carries a token), send log messages (a level was set) or ask the client (it declared how). Such a
   * request may be answered as plain JSON (session-json.ts).
   */
  sendsOnlyItsAnswer(req: JsonRpcRequest): boolean {
    if (req.method !== 'tools/call') return true;
    const meta = req.params?._meta;
    return !(isPlainObject(meta) && meta.progressToken !== undefined) && this.logLevel === undefined && !this.mayAsk;
  }

  /** A client's response to one of our requests; one we are not waiting for (late, or never ours) is dropped. */
  acceptResponse(response: JsonRpcResponse): boolean {
    const settled = this.clientRequests?.settle(response) ?? false;
    if (!settled) this.core.log.debug({ session: this.id, id: response.id }, 'a response to no pending request of ours: dropped');
    return settled;
  }

  /** No further message can arrive from the client (stdin ended): what we asked it will never be answered. */
  clientGone(): void {
    this.clientRequests?.close();
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.clientRequests?.close();
    this.watcher?.close();
    for (const ac of this.inFlight.values()) ac.abort();
    this.inFlight.clear();
  }

  private onNotification(n: JsonRpcNotification): void {
    if (n.method === 'notifications/cancelled') {
      const id = isPlainObject(n.params) ? n.params.requestId : undefined;
      if (typeof id === 'string' || typeof id === 'number') this.inFlight.get(id)?.abort();
    }
    // notifications/initialized and anything else: nothing to do; the session is live once initialize was answered.
  }

  /** Gate 5, through the one method table (method-table.ts); this session lends the methods its state. */
  private async dispatch(req: JsonRpcRequest): Promise<Record<string, unknown>> {
    const row = findMethod(req.method, 'stateful');
    if (!row) throw methodNotFound(req.method);
    const host: SessionHost = {
      family: 'stateful',
      initialize: (params) => this.initialize(params),
      setLogLevel: (level) => {
        this.logLevel = level;
      },
      listed: (page, params) => this.remember(page, params),
      callTool: (params) => this.callTool(req.id, params),
    };
    const answer = await row.run({ core: this.core, revision: this.revision ?? '', principal: this.options.principal, params: req.params ?? {}, host });
    // Only stateless rows answer with a stream; the table never gives one to a session.
    if (!('result' in answer)) throw methodNotFound(req.method);
    return answer.result;
  }

  private initialize(params: Record<string, unknown>): Record<string, unknown> {
    if (this.initialized) throw new McpError(INVALID_REQUEST, 'Invalid Request: the session is already initialized');
    const tooLong = clientInfoRefusal(params.clientInfo, 'clientInfo');
    if (tooLong) throw tooLong;
    const revision = negotiate(params.protocolVersion);
    this.client = clientOfInfo(params.clientInfo);
    this.revision = revision;
    this.clientCapabilities = isPlainObject(params.capabilities) ? params.capabilities : {};
    this.mayAsk = Object.values(CAPABILITY_OF).some((c) => isPlainObject(this.clientCapabilities[c]));
    this.initialized = true;
    this.core.log.info(
      { session: this.id, transport: this.options.transport, protocolVersion: revision, requested: params.protocolVersion, client: this.client },
      'session initialized',
    );
    this.watch(false);
    return {
      protocolVersion: revision,
      capabilities: { ...this.core.capabilities(), logging: {} },
      serverInfo: { ...SERVER_INFO },
      instructions: 'Estate serves a catalogue of versioned tools. Pin a version with params._meta["io.estate/version"].',
    };
  }

  private watch(includeDeprecated: boolean): void {
    this.watcher?.close();
    this.watcher = this.core.notifier.watch({
      principal: this.options.principal,
      includeDeprecated,
      notify: () => {
        if (!this.closed) this.options.notify({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' });
      },
    });
  }

  /** A listing starts at the first page; later pages of the same view revision extend it. */
  private remember(page: ListPage & { includeDeprecated: boolean }, params: Record<string, unknown>): void {
    const view = this.core.reader.discovery.view(this.options.principal, page.includeDeprecated);
    if (params.cursor === undefined || !this.listing || this.listing.revision !== view.revision || this.listing.includeDeprecated !== page.includeDeprecated) {
      this.listed = new Map();
      this.listing = { includeDeprecated: page.includeDeprecated, revision: view.revision };
      this.watch(page.includeDeprecated);
      this.watcher?.given();
    }
    for (const v of page.shown) this.listed.set(v.name, v.version);
  }

  private async callTool(id: RequestId, params: Record<string, unknown>): Promise<CallToolResult | InputRequiredResult> {
    const ac = new Cancellation();
    this.inFlight.set(id, ac);
    try {
      const result = await this.core.callTool({
        params,
        principal: this.options.principal,
        defaultRunId: this.id,
        protocolVersion: this.revision as string,
        client: this.client,
        listed: this.listed,
        cancel: ac,
        notify: (n) => (this.options.notifyRequest ? this.options.notifyRequest(n, id) : this.options.notify(n)),
        ...(this.logLevel !== undefined ? { logLevel: this.logLevel } : {}),
        ask: (method, p, signal) => askDeclared(this.clientRequests, this.clientCapabilities, { callId: id, method, params: p, signal }),
      });
      return result;
    } finally {
      this.inFlight.delete(id);
    }
  }
}
