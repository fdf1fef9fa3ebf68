/**
 * The executor port: what the tools/call pipeline runs once a call's arguments are admitted. Two implementations:
 * the local executor runs a module handler (src/handlers/), the proxy executor sends the call to an upstream MCP
 * server (src/upstream/, SPEC §7). Both share the run rules of run-handler.ts (a deadline per attempt, cancellation,
 * retries only where the side-effect policy allows, an ExecutorFailure's own outcome); they differ in what running
 * the call AGAIN means, which is what the stateless input-required rounds must know.
 */
import type { SideEffect } from '#domain/types';
import { RETRYABLE } from '#domain/types';
import type { HandlerMap, ToolHandler } from '#handlers/types';
import { parseUpstreamHandler } from '#upstream/candidate';
import { runHandler, type HandlerRun, type RunOptions } from '../run-handler.ts';

/** What an executor is given for one call: the run options of run-handler.ts, less the handler it picks itself. */
export type ExecuteRequest = Omit<RunOptions, 'handler' | 'backoffMs'>;

export interface ToolExecutor {
  /**
   * What running the call again, from the start, does. `replays`: a module handler is deterministic up to each
   * question and does nothing with a side effect before its last one (its contract, docs/decisions.md), so a re-run
   * repeats nothing. `resends`: a proxy sends the whole call to the upstream again — a server that made no such
   * promise — which only the side-effect policy may allow (a non_idempotent call is never sent twice).
   */
  readonly rerun: 'replays' | 'resends';
  execute(req: ExecuteRequest): Promise<HandlerRun>;
}

/** Handler name → executor; undefined: not bound in this process (the caller answers Unknown tool). */
export type ExecutorLookup = (handlerName: string) => ToolExecutor | undefined;

/** Whether an unanswered question may end this run and the client's follow-up run the call again from the start. */
export const mayRunAgain = (executor: ToolExecutor, sideEffect: SideEffect): boolean => executor.rerun === 'replays' || RETRYABLE[sideEffect];

export const localExecutor = (handler: ToolHandler): ToolExecutor => ({ rerun: 'replays', execute: (r) => runHandler({ handler, ...r }) });

/** An upstream proxy shaped as a handler (src/upstream/pool.ts), run under the same rules. */
export const proxyExecutor = (proxy: ToolHandler): ToolExecutor => ({ rerun: 'resends', execute: (r) => runHandler({ handler: proxy, ...r }) });

/**
 * The executors a handler map binds. The map is read on every lookup (the upstream pool resolves `upstream:<ns>/<t>`
 * names on demand), and an own-property check keeps a tool's handler name from finding Object.prototype's members.
 * A name of the `upstream:` form is a proxy whatever object serves it: the catalogue says what the tool is.
 */
export const executorsFrom = (handlers: HandlerMap): ExecutorLookup => {
  // By name, not by function: one function bound under a module name and an upstream name is two executors.
  const made = new Map<string, { handler: ToolHandler; executor: ToolExecutor }>();
  return (name) => {
    if (!Object.prototype.hasOwnProperty.call(handlers, name)) return undefined;
    const handler = handlers[name];
    if (typeof handler !== 'function') return undefined;
    const hit = made.get(name);
    if (hit?.handler === handler) return hit.executor;
    const executor = parseUpstreamHandler(name) ? proxyExecutor(handler) : localExecutor(handler);
    made.set(name, { handler, executor });
    return executor;
  };
};
