/**
 * Which caller an upstream's log line, elicitation or sampling request belongs to, with several proxied calls in
 * flight on one link (one connection shared by every caller).
 *
 * The wire names no originating request for these messages, but the channel they arrive on often does, and the SDK's
 * client keeps the async context of the code that opened that channel:
 * - Streamable HTTP: a server sends what relates to a tools/call on that POST's own event stream (2025 `relatedRequestId`,
 *   2026-07-28 by construction). The client reads that stream inside the async context of our `callTool`, so the
 *   message is handled inside it too: an AsyncLocalStorage set around the call names the caller exactly.
 * - 2026-07-28 (any transport): elicitation and sampling come back embedded in an `input_required` result, and the SDK
 *   answers them inside the same `callTool` flow: the same context names the caller.
 * - stdio 2025 (one pipe, read in the connection's context): nothing names the call. There, a message is relayed only
 *   while exactly ONE call is in flight; otherwise a log line goes to Estate's log and a question is answered with an
 *   error (asking the wrong user is worse than not asking).
 * An HTTP message outside any call's stream (the standalone GET stream) is not about a call: it is never relayed.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { ProtocolError } from '@modelcontextprotocol/client';
import type { ElicitParams, HandlerContext, SampleParams } from '#handlers/types';
import { ClientRequestError } from '#mcp/client-requests';
import type { Log } from '#app/log';

const LOG_LEVELS = new Set(['debug', 'info', 'warn', 'error']);
const levelOf = (l: unknown): 'debug' | 'info' | 'warn' | 'error' => {
  if (typeof l === 'string' && LOG_LEVELS.has(l)) return l as 'debug' | 'info' | 'warn' | 'error';
  if (l === 'warning') return 'warn';
  if (l === 'notice') return 'info';
  return typeof l === 'string' && ['critical', 'alert', 'emergency'].includes(l) ? 'error' : 'info';
};

/** Longest upstream log line relayed (longer ones are cut). */
const MAX_RELAYED_LOG_CHARS = 8192;
/**
 * Most questions (elicitation, sampling, roots) an upstream may put to the caller within one call: a person answers
 * them, and an upstream asking in a loop must not keep them at it. Past it the upstream gets an error.
 */
export const MAX_QUESTIONS_PER_CALL = 16;

export class CallRelay {
  private readonly current = new AsyncLocalStorage<HandlerContext>();
  private readonly inflight = new Set<HandlerContext>();
  private readonly asked = new WeakMap<HandlerContext, number>();
  /** A question the caller could not be asked because it did not declare the capability (the first, per call). */
  private readonly undeclared = new WeakMap<HandlerContext, ClientRequestError>();

  constructor(
    private readonly ns: string,
    /** Whether a message may be guessed to belong to the only call in flight (stdio: no channel tells). */
    private readonly guessSingle: boolean,
    private readonly log: Log,
  ) {}

  /** Run one proxied call: what the upstream sends within it is relayed to `ctx`. */
  async run<T>(ctx: HandlerContext, fn: () => Promise<T>): Promise<T> {
    this.inflight.add(ctx);
    try {
      return await this.current.run(ctx, fn);
    } finally {
      this.inflight.delete(ctx);
    }
  }

  /** Run `fn` outside any call (connecting, restarting): channels it opens belong to no caller. */
  outside<T>(fn: () => T): T {
    return this.current.exit(fn);
  }

  /** The caller a message received now belongs to, if Estate can tell. */
  private owner(): HandlerContext | undefined {
    const bound = this.current.getStore();
    if (bound) return this.inflight.has(bound) ? bound : undefined;
    if (this.guessSingle && this.inflight.size === 1) return [...this.inflight][0];
    return undefined;
  }

  /** `notifications/message` from the upstream. */
  relayLog(params: Record<string, unknown>): void {
    const to = this.owner();
    const data = params.data;
    // Cut before anything else touches it (the call's log bounds it again): an upstream may send megabytes.
    const msg = (typeof data === 'string' ? data : JSON.stringify(data ?? null)).slice(0, MAX_RELAYED_LOG_CHARS);
    if (to) to.log[levelOf(params.level)](msg, { upstream: this.ns, ...(typeof params.logger === 'string' ? { logger: params.logger } : {}) });
    else this.log.debug({ upstream: this.ns, level: params.level, data: msg }, 'upstream log');
  }

  /** `key`: the upstream's own key for the question (2026-07-28), reused so a 2026 caller is asked under the same. */
  elicit(params: Record<string, unknown>, key?: string): Promise<Record<string, unknown>> {
    return this.ask('elicitation', (ctx) => ctx.elicit?.(params as ElicitParams, key !== undefined ? { key } : undefined));
  }

  sample(params: Record<string, unknown>, key?: string): Promise<Record<string, unknown>> {
    return this.ask('sampling', (ctx) => ctx.sample?.(params as SampleParams, key !== undefined ? { key } : undefined));
  }

  roots(key?: string): Promise<Record<string, unknown>> {
    return this.ask('roots', (ctx) => ctx.listRoots?.(key !== undefined ? { key } : undefined));
  }

  private async ask(what: string, ask: (ctx: HandlerContext) => Promise<unknown> | undefined): Promise<Record<string, unknown>> {
    const ctx = this.owner();
    if (!ctx) throw new ProtocolError(-32603, `Estate cannot tell which caller this ${what} request is for (${this.inflight.size} calls in flight)`);
    const count = (this.asked.get(ctx) ?? 0) + 1;
    this.asked.set(ctx, count);
    if (count > MAX_QUESTIONS_PER_CALL) throw new ProtocolError(-32603, `Estate relays at most ${MAX_QUESTIONS_PER_CALL} questions to the caller per call`);
    const answer = ask(ctx);
    if (!answer) throw new ProtocolError(-32603, `the caller cannot answer ${what} requests`);
    try {
      return (await answer) as Record<string, unknown>;
    } catch (e) {
      if (e instanceof ClientRequestError && e.reason === 'capability' && !this.undeclared.has(ctx)) this.undeclared.set(ctx, e);
      throw new ProtocolError(-32603, `the caller did not answer: ${e instanceof Error ? e.message : String(e)}`);
    }
  }

  /**
   * Why a call failed, when the upstream asked the caller something the caller never declared it could answer: the
   * upstream judged by Estate's own capabilities (it declares them all, to relay them), so this is the protocol's
   * missing-capability refusal for the CALLER (-32021 on 2026-07-28), not the upstream's failure.
   */
  undeclaredCapability(ctx: HandlerContext): ClientRequestError | undefined {
    return this.undeclared.get(ctx);
  }
}
