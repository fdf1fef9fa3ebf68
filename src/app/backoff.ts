/**
 * The one backoff rule for "it failed, try again later" loops (the relay's publish retry, an upstream child's
 * restart): the delay before retry n (1-based) is initialMs·factor^(n-1), capped at maxMs. Doubling spaces retries
 * out quickly while a dependency is down; the cap bounds how late a loop notices that it is back.
 */
export interface BackoffOptions {
  initialMs: number;
  maxMs: number;
  /** Default 2. */
  factor?: number;
}

export const exponentialBackoff =
  ({ initialMs, maxMs, factor = 2 }: BackoffOptions) =>
  (retry: number): number =>
    // Math.max: a caller's 0 or negative count still waits the first step; a huge one caps instead of overflowing.
    Math.min(maxMs, initialMs * factor ** Math.max(0, retry - 1));
