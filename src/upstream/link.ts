/**
 * One serving process's link to one upstream (SPEC §7): one connection (for stdio: one child process) shared by every
 * call, restarted with backoff when it ends; the circuit breaker; and the proxied call itself. An upstream's
 * JSON-RPC error or `isError` result is `upstream <ns>: <message>` (upstream_error); no answer, a refused connection,
 * a closed one or a timeout is `upstream <ns> unavailable` (upstream_unavailable). The caller's credentials are never
 * passed on: the request carries the tool name and the (validated, repaired) arguments, nothing of the principal.
 *
 * The upstream's log messages, elicitation and sampling requests are relayed to the call they belong to (relay.ts
 * says how Estate tells).
 */
import { ProtocolError } from '@modelcontextprotocol/client';
import { exponentialBackoff } from '#app/backoff';
import { throttledWarning, type Log } from '#app/log';
import { markFailed, traceUpstreamCall } from '#app/tracing';
import type { UpstreamTarget } from '#domain/events';
import { ExecutorFailure } from '#handlers/executor-failure';
import type { CallToolResult, HandlerContext } from '#handlers/types';
import { LOG_LEVEL_META } from '#mcp/client-channel';
import { ClientRequestError } from '#mcp/client-requests';
import { MISSING_CLIENT_CAPABILITY } from '#mcp/jsonrpc';
import { CLIENT_CAPABILITIES_META } from '#mcp/revisions';
import { AnswerRefused, type AnswerBudget } from './answer-budget.ts';
import { CircuitBreaker, type BreakerOptions } from './breaker.ts';
import { MAX_EVENT_LINES_PER_SECOND } from './event-pace.ts';
import { describeFailure, openUpstream, STATELESS_REVISION, STDERR_BYTES_PER_SECOND, upstreamAnswered, type UpstreamHooks, type UpstreamSession } from './connection.ts';
import { keepListening } from './listen.ts';
import { CallRelay } from './relay.ts';

export interface LinkOptions {
  ns: string;
  target: UpstreamTarget;
  env: NodeJS.ProcessEnv;
  log: Log;
  /** The process's bound on upstream answers held at once (./answer-budget.ts): each call and sync is charged to it. */
  answers: AnswerBudget;
  breaker?: BreakerOptions;
  /** The upstream said its tool list changed. */
  onToolsChanged?: () => void;
  /** Backoff before restart n (1-based) of a stdio child that exited. */
  restartDelayMs?: (n: number) => number;
  connectTimeoutMs?: number;
}

/** 100 ms, doubling up to 10 s: a crashing child is not respawned in a tight loop. */
const defaultRestartDelay = exponentialBackoff({ initialMs: 100, maxMs: 10_000 });

const textOf = (r: CallToolResult): string =>
  r.content
    .map((c) => (c.type === 'text' && typeof c.text === 'string' ? c.text : `<${c.type}>`))
    .join('\n')
    .slice(0, 4000);

/** What a caller declared that Estate can relay (never more than Estate itself declares to the upstream). */
const RELAYED_CAPABILITIES = ['elicitation', 'sampling', 'roots'];
const callerCapabilities = (ctx: HandlerContext): Record<string, unknown> => {
  if (ctx.clientCapabilities === undefined) return {};
  const declared = Object.fromEntries(RELAYED_CAPABILITIES.filter((c) => isObject(ctx.clientCapabilities?.[c])).map((c) => [c, ctx.clientCapabilities?.[c]]));
  return { [CLIENT_CAPABILITIES_META]: declared };
};
const isObject = (v: unknown): boolean => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The capability an upstream's -32021 (MissingRequiredClientCapabilityError) names, if that is what it answered. */
const missingCapabilityOf = (e: unknown): string | undefined => {
  if (!(e instanceof ProtocolError) || e.code !== MISSING_CLIENT_CAPABILITY) return undefined;
  const required = (e.data as { requiredCapabilities?: unknown } | undefined)?.requiredCapabilities;
  return (isObject(required) ? Object.keys(required as object)[0] : undefined) ?? 'unknown';
};

/** The `_meta` keys Estate itself sets (`io.estate/runId`, `io.estate/version`, ...): an upstream's word is not Estate's. */
const ESTATE_META = 'io.estate/';

/**
 * The result without `io.estate/` keys in its content items' `_meta` (the result's own `_meta` is dropped whole above):
 * a client that reads Estate's keys must not read an upstream's forgery of them (`io.estate/version: "9.9.9"`).
 */
const withoutEstateMeta = (r: CallToolResult): CallToolResult => {
  const forged = (c: unknown): boolean => isObject(c) && isObject((c as { _meta?: unknown })._meta) && Object.keys((c as { _meta: object })._meta).some((k) => k.startsWith(ESTATE_META));
  if (!Array.isArray(r.content) || !r.content.some(forged)) return r;
  return {
    ...r,
    content: r.content.map((c) => {
      if (!forged(c)) return c;
      const meta = Object.fromEntries(Object.entries((c as unknown as { _meta: Record<string, unknown> })._meta).filter(([k]) => !k.startsWith(ESTATE_META)));
      return { ...c, _meta: meta };
    }),
  };
};

export class UpstreamLink {
  readonly ns: string;
  readonly breaker: CircuitBreaker;
  private current: Promise<UpstreamSession> | null = null;
  private closing = false;
  private restarts = 0;
  /** The session last opened and not yet closed, and the stopper of its listen stream (2026-07-28 upstreams). */
  private live: UpstreamSession | undefined;
  private stopListening: () => void = () => undefined;
  private readonly relay: CallRelay;
  /** Answers refused for room, in the log at most once per 10 s (each is also counted: estate_upstream_answers_refused_total). */
  private readonly warnRefused: (fields: Record<string, unknown>) => void;
  /** What the connection reports going wrong (a stdio message past its bound, lines that are not messages, a flood). */
  private readonly warnConnection: (fields: Record<string, unknown>) => void;
  /** An upstream whose output (stdio) or event streams (HTTP) are read slower than it sends (./event-pace.ts). */
  private readonly warnPaced: (fields: Record<string, unknown>) => void;
  /** A stdio child writing more to stderr than is looked at (./connection.ts: STDERR_BYTES_PER_SECOND). */
  private readonly warnStderr: (fields: Record<string, unknown>) => void;

  constructor(private readonly o: LinkOptions) {
    this.ns = o.ns;
    this.breaker = new CircuitBreaker(o.breaker);
    this.relay = new CallRelay(o.ns, o.target.transport === 'stdio', o.log);
    this.warnRefused = throttledWarning(o.log, 'upstream answer refused: the process holds too much of upstream answers');
    this.warnConnection = throttledWarning(o.log, 'upstream connection error', 'times');
    this.warnPaced = throttledWarning(o.log, 'upstream paced: it sends more lines a second than are read', 'times');
    this.warnStderr = throttledWarning(o.log, 'upstream stderr dropped: the child writes more to stderr than is read a second', 'times');
  }

  /** A failure said in the MCP client's terms (its errors' codes): for the pool, which loads the client only with a link. */
  describe(e: unknown): string {
    return describeFailure(e);
  }

  /** A session is open (connected, its handshake done, not closed since). */
  get connected(): boolean {
    return this.live !== undefined;
  }

  get status(): 'up' | 'down' | 'probing' {
    return this.breaker.state;
  }

  private unavailable(retryable: boolean): ExecutorFailure {
    return new ExecutorFailure('upstream_unavailable', `upstream ${this.ns} unavailable`, retryable);
  }

  /** The live session, connecting (or waiting for a scheduled restart) if there is none. */
  session(): Promise<UpstreamSession> {
    if (this.closing) return Promise.reject(new Error(`upstream ${this.ns}: link closed`));
    if (!this.current) {
      const p = this.connect();
      this.current = p;
      p.catch(() => {
        if (this.current === p) this.current = null;
      });
    }
    return this.current;
  }

  private async connect(delayMs = 0): Promise<UpstreamSession> {
    if (delayMs > 0) await new Promise((r) => setTimeout(r, delayMs));
    if (this.closing) throw new Error(`upstream ${this.ns}: link closed`);
    // A close before the handshake ended is the connect's own failure, not a restart.
    const opened: { session?: UpstreamSession } = {};
    const hooks: UpstreamHooks = {
      ...(this.o.onToolsChanged ? { onToolsChanged: this.o.onToolsChanged } : {}),
      onLog: (params) => this.relay.relayLog(params),
      onElicit: (params, key) => this.relay.elicit(params, key),
      onSample: (params, key) => this.relay.sample(params, key),
      onRoots: (key) => this.relay.roots(key),
      onStderr: (line) => this.o.log.debug({ upstream: this.ns, stderr: line }, 'upstream stderr'),
      onStderrDropped: (bytes) => this.warnStderr({ upstream: this.ns, bytes, bytesPerSecond: STDERR_BYTES_PER_SECOND }),
      onError: (e) => this.warnConnection({ upstream: this.ns, error: describeFailure(e) }),
      onPaced: (ms) => this.warnPaced({ upstream: this.ns, waitMs: ms, linesPerSecond: MAX_EVENT_LINES_PER_SECOND }),
      onClose: () => {
        if (!opened.session) return;
        void this.onClosed();
      },
    };
    // Outside any caller's context: channels the connection opens (HTTP's GET stream, stdio's pipe) belong to no call.
    const session = await this.relay.outside(() => openUpstream(this.ns, this.o.target, this.o.env, hooks, this.o.connectTimeoutMs));
    opened.session = session;
    this.live = session;
    const onChanged = this.o.onToolsChanged;
    if (onChanged) this.stopListening = this.relay.outside(() => keepListening(session, { ns: this.ns, log: this.o.log, onChanged, alive: () => this.live === session }));
    this.o.log.info({ upstream: this.ns, transport: this.o.target.transport, protocolVersion: session.protocolVersion }, 'upstream connected');
    return session;
  }

  /** The connection ended: a stdio child is restarted with backoff (an HTTP one reconnects on the next call). */
  private async onClosed(): Promise<void> {
    const was = this.current;
    this.current = null;
    this.live = undefined;
    this.stopListening();
    if (this.closing || !was) return;
    if (this.o.target.transport !== 'stdio') return;
    this.restarts++;
    const delay = (this.o.restartDelayMs ?? defaultRestartDelay)(this.restarts);
    this.o.log.warn({ upstream: this.ns, restart: this.restarts, delayMs: delay }, 'upstream child exited; restarting');
    const p = this.connect(delay);
    this.current = p;
    p.then(
      () => undefined,
      (e: unknown) => {
        if (this.current === p) this.current = null;
        this.o.log.warn({ upstream: this.ns, error: describeFailure(e) }, 'upstream restart failed');
      },
    );
  }

    /** Proxy one call. Returns the upstream's result, or throws an ExecutorFailure with the outcome. */
  async call(upstreamTool: string, args: Record<string, unknown>, ctx: HandlerContext): Promise<CallToolResult> {
    if (!this.breaker.admit()) throw this.unavailable(false); // failing fast: nothing is sent
    let session: UpstreamSession;
    try {
      session = await this.session();
    } catch (e) {
      this.breaker.failure();
      this.o.log.warn({ upstream: this.ns, error: describeFailure(e) }, 'upstream connect failed');
      throw this.unavailable(true); // never reached the upstream: a repeat is safe whatever the side effect
    }
    // The upstream's progress reaches the caller through the session's own routing (connection.ts says why not the SDK's).
    const progress = session.trackProgress((p, total, message) => ctx.progress?.(p, total, message));
    try {
      const options = {
        signal: ctx.signal,
        // The deadline is the pinned version's timeoutMs, kept by the tools/call path; this only bounds a stuck link.
        timeout: 24 * 3600_000,
        // Read nothing from the upstream's current tools/list: the pinned contract is checked by Estate.
        toolDefinition: { name: upstreamTool, inputSchema: { type: 'object' as const } },
      };
      // Inside the relay's context: what the upstream sends on this call's own channel is relayed to this caller.
      // 2026-07-28 upstreams log only at a level named on the call: ask for everything (each caller's level is applied when relaying).
      // Traced, the call is a CLIENT span whose context travels in `_meta` (traceparent, tracestate): the upstream's
      // spans join the caller's trace (src/app/tracing.ts). A 2026-07-28 upstream is also told what THIS caller declared
      // it can answer (what Estate can relay of it), so it asks only that; the SDK's own envelope would claim everything.
      const r = await traceUpstreamCall(this.ns, upstreamTool, async (trace, span) => {
        const revision = session.protocolVersion === STATELESS_REVISION ? { [LOG_LEVEL_META]: 'debug', ...callerCapabilities(ctx) } : undefined;
        const params = { name: upstreamTool, arguments: args, _meta: { progressToken: progress.token, ...revision, ...trace } };
        // What the answer holds is charged to this call (./answer-budget.ts); an answer dropped ends the call at once.
        const answer = (await this.o.answers.within(this.ns, (account) =>
          this.relay
            .run(ctx, () => session.client.callTool(params, { ...options, signal: AbortSignal.any([ctx.signal, account.signal]) }))
            .catch((e: unknown) => {
              // Whatever of the call is still in flight (its POST, when the upstream never answered) is given up.
              account.abandon();
              throw account.signal.aborted && !ctx.signal.aborted ? account.signal.reason : e;
            }),
        )) as CallToolResult;
        if (answer.isError) markFailed(span, 'upstream_error');
        return answer;
      });
      this.breaker.success();
      this.restarts = 0;
      if (r.isError) throw this.relay.undeclaredCapability(ctx) ?? new ExecutorFailure('upstream_error', `upstream ${this.ns}: ${textOf(r)}`, false);
      const { _meta: _m, ...result } = r;
      return withoutEstateMeta(result as CallToolResult);
    } catch (e) {
      if (e instanceof ExecutorFailure || e instanceof ClientRequestError) throw e;
      if (e instanceof AnswerRefused) {
        // The process is short of room, not the upstream of health: the breaker is not told. Nothing is repeated.
        this.breaker.abandon();
        this.warnRefused({ upstream: this.ns, tool: upstreamTool, error: e.message });
        throw new ExecutorFailure('upstream_unavailable', `upstream ${this.ns} unavailable: ${e.message}`, false);
      }
      if (ctx.signal.aborted) {
        this.breaker.abandon();
        throw e;
      }
      const undeclared = missingCapabilityOf(e);
      if (undeclared !== undefined) {
        this.breaker.success();
        throw new ClientRequestError('capability', `upstream ${this.ns} needs the ${undeclared} capability, which the caller did not declare`, undefined, undeclared);
      }
      if (upstreamAnswered(e)) {
        this.breaker.success();
        throw this.relay.undeclaredCapability(ctx) ?? new ExecutorFailure('upstream_error', `upstream ${this.ns}: ${describeFailure(e)}`, false);
      }
      this.breaker.failure();
      this.o.log.warn({ upstream: this.ns, tool: upstreamTool, error: describeFailure(e) }, 'upstream call failed');
      // An HTTP upstream that stopped answering may come back as a new process (its sessions gone): reconnect next time.
      if (this.o.target.transport === 'http' && this.current) {
        const dead = this.current;
        this.current = null;
        void dead.then((s) => s.close(), () => undefined).catch(() => undefined);
      }
      // It may have reached the upstream: RETRYABLE decides (a non_idempotent call is never re-sent).
      throw this.unavailable(true);
    } finally {
      progress.release();
    }
  }

  /**
   * The upstream's tools, every page charged to one account until the last is read: a listing of many pages holds
   * them all, so one upstream cannot list its way past its share.
   */
  async listTools(): ReturnType<UpstreamSession['listTools']> {
    const session = await this.session();
    return this.o.answers.within(this.ns, (account) =>
      session.listTools(account.signal).catch((e: unknown) => {
        account.abandon();
        throw e;
      }),
    );
  }

  async close(): Promise<void> {
    this.closing = true;
    this.live = undefined;
    this.stopListening();
    const c = this.current;
    this.current = null;
    if (c) await c.then((s) => s.close(), () => undefined).catch(() => undefined);
  }
}
