/**
 * Running a bound handler: a deadline per attempt (the version's `timeoutMs`), cancellation from the client, and
 * retries with backoff only where the side-effect policy says a repeat is harmless (RETRYABLE). A handler that throws
 * or times out becomes an `isError` result — the model sees an observation, never a protocol error.
 */
import { RETRYABLE, type SideEffect } from '#domain/types';
import type { CallOutcome } from '#domain/events';
import type { CallToolResult, HandlerContext, ToolHandler } from '#handlers/types';
import { ExecutorFailure, type ExecutorTraits } from '#handlers/executor-failure';
import { Cancellation, type Cancel } from './cancellation.ts';
import { ClientRequestError } from './client-requests.ts';
import { errorResult } from './error-map.ts';

export const MAX_RETRIES = 2;

export interface HandlerRun {
  result: CallToolResult;
  outcome: CallOutcome;
  attempts: number;
  /** The client refusal the handler did not catch, when that is how the run ended. */
  refusal?: ClientRequestError;
}

/** How a handler asks its client something (elicitation, sampling, roots). */
export type Askers = Pick<HandlerContext, 'elicit' | 'sample' | 'listRoots'>;

export interface RunOptions {
  handler: ToolHandler;
  args: Record<string, unknown>;
  context: Omit<HandlerContext, 'signal'>;
  sideEffect: SideEffect;
  timeoutMs: number;
  /** Aborted when the client cancels the request. */
  cancel?: Cancel;
  /**
   * Context members bound to one attempt's signal (the client requests a handler makes end with its attempt). The
   * signal is read only when used: making it costs more than most calls' handlers. `asked` is called when a question
   * is put to the client (its user or model), so that attempt is not repeated.
   */
  withSignal?: (signal: () => AbortSignal, asked: () => void) => Askers;
  /** Backoff before retry n (1-based). */
  backoffMs?: (retry: number) => number;
  /**
   * Told of each execution of the handler still running when its attempt gave up (its deadline, the client's cancel),
   * with a promise that settles when it ends: such an attempt answers at once, a handler that does not watch its signal
   * runs on, and what counts running calls must count it until then.
   */
  onExecution?: (ended: Promise<void>) => void;
}

class Timeout extends Error {}
class Cancelled extends Error {}

const defaultBackoff = (retry: number): number => 50 * 2 ** (retry - 1);

const isCallToolResult = (v: unknown): v is CallToolResult =>
  typeof v === 'object' && v !== null && Array.isArray((v as CallToolResult).content);

/** Whether an attempt has put a question to the client (its user or model). */
interface Asked {
  any: boolean;
}

/** The fields contextOf copies, besides `signal`. */
type Copied = 'principal' | 'runId' | 'tool' | 'log' | 'progress' | 'elicit' | 'sample' | 'listRoots' | 'clientCapabilities';
/** A field added to HandlerContext fails to compile here until contextOf copies it (and Copied names it). */
export const EVERY_CONTEXT_FIELD_COPIED: [Exclude<keyof HandlerContext, Copied | 'signal'>] extends [never] ? true : never = true;

/**
 * The handler's context: `signal` is made when the handler first reads it (cancellation.ts). Built field by field: a
 * literal that spreads objects and defines a getter costs ~3 µs per call (a dictionary-mode object), this ~0.1 µs.
 */
const contextOf = (o: RunOptions, attempt: Cancellation, asked: Asked): HandlerContext => {
  const c = o.context;
  const askers = o.withSignal?.(
    () => attempt.signal,
    () => (asked.any = true),
  );
  return {
    principal: c.principal,
    runId: c.runId,
    tool: c.tool,
    log: c.log,
    progress: c.progress,
    elicit: askers?.elicit ?? c.elicit,
    sample: askers?.sample ?? c.sample,
    listRoots: askers?.listRoots ?? c.listRoots,
    clientCapabilities: c.clientCapabilities,
    get signal() {
      return attempt.signal;
    },
  };
};

/** One attempt: its answer, and whether its handler is still running (it may run on after the attempt gave up). */
interface Attempt {
  result: Promise<CallToolResult>;
  running(): boolean;
}

const attempt = (o: RunOptions, asked: Asked): Attempt => {
  const ac = new Cancellation();
  let running = false;
  const result = new Promise<CallToolResult>((resolve, reject) => {
    /** How the handler's own promise ended, once it has. */
    let how = '';
    /**
     * The attempt gives up (its deadline, the client's cancel). A handler still running then may run on, unwatched by its
     * signal: its execution is told (onExecution) until it ends, and its end said in the handler log with the run and
     * the tool, so an effect no record shows can be found. Only here: a handler that ends first costs nothing more.
     */
    const giveUp = (why: Error): void => {
      ac.abort(why);
      reject(why);
      if (!running) return;
      const at = Date.now();
      // Said at warn when the handler went on to a result (it finished its work, which no record shows); one that threw
      // on its signal, as a handler should, at debug.
      o.onExecution?.(
        chain.then(() => {
          const fields = { endedWith: how, afterMs: Date.now() - at };
          if (how === 'an exception') o.context.log.debug('handler ended after its call was given up', fields);
          else o.context.log.warn('handler ended after its call was given up', fields);
        }),
      );
    };
    const onCancel = () => giveUp(new Cancelled('cancelled'));
    const timer = setTimeout(() => giveUp(new Timeout('timeout')), o.timeoutMs);
    if (o.cancel?.aborted) {
      clearTimeout(timer);
      return reject(new Cancelled('cancelled'));
    }
    const offCancel = o.cancel?.onAbort(onCancel);
    const done = () => {
      running = false;
      clearTimeout(timer);
      offCancel?.();
    };
    running = true;
    /** The handler's own promise, settled (read by giveUp, which runs only after this line). */
    const chain = Promise.resolve()
      .then(() => o.handler(o.args, contextOf(o, ac, asked)))
      .then(
        (r) => {
          done();
          how = isCallToolResult(r) ? (r.isError === true ? 'an error result' : 'a result') : 'something that is not a result';
          if (isCallToolResult(r)) resolve(r);
          else reject(new Error('the handler returned something that is not a CallToolResult'));
        },
        (e: unknown) => {
          done();
          how = 'an exception';
          reject(e instanceof Error ? e : new Error(String(e)));
        },
      );
  });
  return { result, running: () => running };
};

const sleep = (ms: number, cancel?: Cancel): Promise<void> =>
  new Promise((resolve) => {
    const off = cancel?.onAbort(() => (clearTimeout(t), resolve()));
    const t = setTimeout(() => (off?.(), resolve()), ms);
  });

export const runHandler = async (o: RunOptions): Promise<HandlerRun> => {
  const maxAttempts = RETRYABLE[o.sideEffect] ? 1 + MAX_RETRIES : 1;
  const backoff = o.backoffMs ?? defaultBackoff;
  let attempts = 0;
  for (;;) {
    attempts++;
    const asked: Asked = { any: false };
    const current = attempt(o, asked);
    try {
      const result = await current.result;
      return { result, outcome: result.isError ? 'tool_error' : 'ok', attempts };
    } catch (e) {
      if (e instanceof Cancelled || o.cancel?.aborted) return { result: errorResult('Tool call cancelled'), outcome: 'cancelled', attempts };
      // The client refused or could not be asked: asking again would only repeat the question to its user or model.
      if (e instanceof ClientRequestError) return { result: errorResult(`Tool failed: ${e.message}`), outcome: 'tool_error', attempts, refusal: e };
      const timedOut = e instanceof Timeout;
      // An executor's own outcome (an upstream proxy): retried only when it says a repeat could help.
      const failure = e instanceof ExecutorFailure ? e : timedOut ? (o.handler as ExecutorTraits).timeoutFailure?.(o.timeoutMs) : undefined;
      // An attempt that asked the client something is not repeated either, even if it then failed in a way that
      // could be retried (an upstream that went quiet after its question): its user or model would be asked again.
      const again = attempts < maxAttempts && !asked.any;
      const final: HandlerRun = failure
        ? { result: errorResult(failure.message), outcome: failure.outcome, attempts }
        : timedOut
          ? { result: errorResult(`Tool timed out after ${o.timeoutMs} ms`), outcome: 'timeout', attempts }
          : { result: errorResult(`Tool failed: ${(e as Error).message}`), outcome: 'tool_error', attempts };
      if (!again || (failure && !failure.retryable)) return final;
      o.context.log.warn('handler failed; retrying', { attempt: attempts, timedOut, error: (failure ?? (e as Error)).message });
      await sleep(backoff(attempts), o.cancel);
      if (o.cancel?.aborted) return { result: errorResult('Tool call cancelled'), outcome: 'cancelled', attempts };
      // Nor one whose handler still runs after the backoff (it does not watch its signal): a repeat would run beside it,
      // the two doing the work twice, and each repeat one more execution the caller's bound must count until it ends.
      if (current.running()) return final;
    }
  }
};
