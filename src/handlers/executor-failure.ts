/**
 * How an executor that is not a module handler (an upstream proxy, SPEC §7) ends a call with an outcome of its own.
 * A module handler throws any Error and the run becomes `tool_error`; an executor throws this to say which outcome
 * the call record gets (`upstream_error`, `upstream_unavailable`) and whether a repeat could help. Whether a repeat is
 * ALLOWED is still the side-effect policy's (RETRYABLE): `retryable` can only narrow it.
 */
import type { CallOutcome } from '#domain/events';

export class ExecutorFailure extends Error {
  constructor(
    readonly outcome: CallOutcome,
    message: string,
    /** A repeat could succeed (the request never reached, or may be resent to, the upstream). */
    readonly retryable: boolean,
  ) {
    super(message);
    this.name = 'ExecutorFailure';
  }
}

/** An executor may say what a deadline means for it (an upstream that did not answer in time is unavailable). */
export interface ExecutorTraits {
  timeoutFailure?: (timeoutMs: number) => ExecutorFailure;
}
