/**
 * One serving process's link to one upstream (SPEC §7): one connection (for stdio: one child process) shared by every
 * call, restarted with backoff when it ends; the circuit breaker; and the proxied call itself. An upstream's
 * JSON-RPC error or `isError` result is `upstream <ns>: <message>` (upstream_error); no answer, a refused connection,
 * a closed one or a timeout is `upstream <ns> unavailable` (upstream_unavailable). The caller's credentials are never
 * passed on: the request carries the tool name and the (validated, repaired) arguments, nothing of the principal.
 *
 * The upstream's log messages, elicitation and sampling requests carry no reference to the call they belong to (a
 * server's request to its client names no originating request), so they are relayed to the caller only while exactly
 * ONE call is in flight on this link; otherwise a log line goes to Estate's log and a question is answered with an
 * error (asking the wrong user is worse than not asking).
 */
import { ProtocolError } from '@modelcontextprotocol/client';
import { exponentialBackoff } from '../app/backoff.ts';
import type { Log } from '../app/log.ts';
import { ExecutorFailure } from '../handlers/executor-failure.ts';
import type { CallToolResult, ElicitParams, HandlerContext, SampleParams } from '../handlers/types.ts';
import type { UpstreamTarget } from '../domain/events.ts';
import { CircuitBreaker, type BreakerOptions } from './breaker.ts';
import { describeFailure, openUpstream, upstreamAnswered, type UpstreamSession } from './connection.ts';

export interface LinkOptions {
  ns: string;
  target: UpstreamTarget;
  env: NodeJS.ProcessEnv;
  log: Log;
  breaker?: BreakerOptions;
  /** The upstream said its tool list changed. */
  onToolsChanged?: () => void;
  /** Backoff before restart n (1-based) of a stdio child that exited. */
  restartDelayMs?: (n: number) => number;
  connectTimeoutMs?: number;
}

/** 100 ms, doubling up to 10 s: a crashing child is not respawned in a tight loop. */
const defaultRestartDelay = exponentialBackoff({ initialMs: 100, maxMs: 10_000 });

const LOG_LEVELS = new Set(['debug', 'info', 'warn', 'error']);
const levelOf = (l: unknown): 'debug' | 'info' | 'warn' | 'error' => {
  if (typeof l === 'string' && LOG_LEVELS.has(l)) return l as 'debug' | 'info' | 'warn' | 'error';
  if (l === 'warning') return 'warn';
  if (l === 'notice') return 'info';
  return typeof l === 'string' && ['critical', 'alert', 'emergency'].includes(l) ? 'error' : 'info';
};

const textOf = (r: CallToolResult): string =>
  r.content
    .map((c) => (c.type === 'text' && typeof c.text === 'string' ? c.text : `<${c.type}>`))
    .join('\n')
    .slice(0, 4000);

export class UpstreamLink {
  readonly ns: string;
  readonly breaker: CircuitBreaker;
  private current: Promise<UpstreamSession> | null = null;
  private closing = false;
  private restarts = 0;
  private readonly inflight = new Set<HandlerContext>();

  constructor(private readonly o: LinkOptions) {
    this.ns = o.ns;
    this.breaker = new CircuitBreaker(o.breaker);
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
    const session = await openUpstream(
      this.ns,
      this.o.target,
      this.o.env,
      {
        ...(this.o.onToolsChanged ? { onToolsChanged: this.o.onToolsChanged } : {}),
        onLog: (params) => this.relayLog(params),
        onElicit: (params) => this.relayAsk('elicitation', (ctx) => ctx.elicit?.(params as ElicitParams)),
        onSample: (params) => this.relayAsk('sampling', (ctx) => ctx.sample?.(params as SampleParams)),
        onStderr: (line) => this.o.log.debug({ upstream: this.ns, stderr: line }, 'upstream stderr'),
        onClose: () => {
          if (!opened.session) return;
          void this.onClosed();
        },
      },
      this.o.connectTimeoutMs,
    );
    opened.session = session;
    this.o.log.info({ upstream: this.ns, transport: this.o.target.transport, protocolVersion: session.protocolVersion }, 'upstream connected');
    return session;
  }

  /** The connection ended: a stdio child is restarted with backoff (an HTTP one reconnects on the next call). */
  private async onClosed(): Promise<void> {
    const was = this.current;
    this.current = null;
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

  private relayLog(params: Record<string, unknown>): void {
    const only = this.inflight.size === 1 ? [...this.inflight][0] : undefined;
    const data = params.data;
    const msg = typeof data === 'string' ? data : JSON.stringify(data ?? null).slice(0, 2000);
    if (only) only.log[levelOf(params.level)](msg, { upstream: this.ns, ...(typeof params.logger === 'string' ? { logger: params.logger } : {}) });
    else this.o.log.debug({ upstream: this.ns, level: params.level, data: msg }, 'upstream log');
  }

  private async relayAsk(what: string, ask: (ctx: HandlerContext) => Promise<unknown> | undefined): Promise<Record<string, unknown>> {
    if (this.inflight.size !== 1) throw new ProtocolError(-32603, `Estate cannot tell which caller this ${what} request is for (${this.inflight.size} calls in flight)`);
    const ctx = [...this.inflight][0] as HandlerContext;
    const answer = ask(ctx);
    if (!answer) throw new ProtocolError(-32603, `the caller cannot answer ${what} requests`);
    try {
      return (await answer) as Record<string, unknown>;
    } catch (e) {
      throw new ProtocolError(-32603, `the caller did not answer: ${e instanceof Error ? e.message : String(e)}`);
    }
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
    this.inflight.add(ctx);
    try {
      const r = (await session.client.callTool(
        { name: upstreamTool, arguments: args },
        {
          signal: ctx.signal,
          // The deadline is the pinned version's timeoutMs, kept by the tools/call path; this only bounds a stuck link.
          timeout: 24 * 3600_000,
          resetTimeoutOnProgress: true,
          onprogress: (p) => ctx.progress?.(p.progress, p.total, p.message),
          // Read nothing from the upstream's current tools/list: the pinned contract is checked by Estate.
          toolDefinition: { name: upstreamTool, inputSchema: { type: 'object' } },
        },
      )) as CallToolResult;
      this.breaker.success();
      this.restarts = 0;
      if (r.isError) throw new ExecutorFailure('upstream_error', `upstream ${this.ns}: ${textOf(r)}`, false);
      const { _meta: _m, ...result } = r;
      return result as CallToolResult;
    } catch (e) {
      if (e instanceof ExecutorFailure) throw e;
      if (ctx.signal.aborted) {
        this.breaker.abandon();
        throw e;
      }
      if (upstreamAnswered(e)) {
        this.breaker.success();
        throw new ExecutorFailure('upstream_error', `upstream ${this.ns}: ${describeFailure(e)}`, false);
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
      this.inflight.delete(ctx);
    }
  }

  async close(): Promise<void> {
    this.closing = true;
    const c = this.current;
    this.current = null;
    if (c) await c.then((s) => s.close(), () => undefined).catch(() => undefined);
  }
}
