/**
 * Waiting for a locked SQLite file without holding the thread. better-sqlite3 is synchronous, and SQLite's own busy
 * handler (busy_timeout) sleeps inside the call: a lock held by another process (`sqlite3` in `BEGIN EXCLUSIVE`, a
 * backup, another Estate's long write) froze the whole server for the 30 s of the timeout, every session's `ping`
 * included, for the sake of one call's record. So Estate's connections wait inside SQLite only briefly
 * (`BUSY_SPIN_MS`, which outlasts a peer's ordinary commit), and a statement that still finds the database locked is
 * run again from a timer, backing off from 1 ms to 50 ms, until the same deadline as before; then its last error
 * (SQLITE_BUSY, "database is locked") is the caller's, as it was.
 */

/** The busy_timeout of every connection Estate serves from: at most this long on the thread per attempt. */
export const BUSY_SPIN_MS = 2;
/** How long a statement waits in all for another connection's lock before its error stands (as before: 30 s). */
export const DEFAULT_BUSY_TIMEOUT_MS = 30_000;
const FIRST_DELAY_MS = 1;
const MAX_DELAY_MS = 50;

/** SQLITE_BUSY or SQLITE_LOCKED, with any extended code (SQLITE_BUSY_RECOVERY, SQLITE_BUSY_SNAPSHOT, ...). */
export const isBusy = (e: unknown): boolean => {
  const code = (e as { code?: unknown } | null)?.code;
  return typeof code === 'string' && (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED'));
};

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * `work` again after a timer, while it finds the database locked, until `deadline` (performance.now() ms); `work` has
 * already failed with `busy`. The last busy error is thrown once the deadline has passed; any other at once.
 */
export const retryWhileBusy = async <T>(work: () => T, deadline: number, busy: unknown): Promise<T> => {
  let last = busy;
  for (let delay = FIRST_DELAY_MS; ; delay = Math.min(delay * 2, MAX_DELAY_MS)) {
    const left = deadline - performance.now();
    if (left <= 0) throw last;
    await sleep(Math.min(delay, left));
    try {
      return work();
    } catch (e) {
      if (!isBusy(e)) throw e;
      last = e;
    }
  }
};

/**
 * `work` now (synchronously, as a direct call would: no turn is lost when the database is free); if it finds the
 * database locked, again from timers until `timeoutMs` have passed. Errors become rejections.
 */
export const whenFree = <T>(work: () => T, timeoutMs: number): Promise<T> => {
  const started = performance.now();
  try {
    return Promise.resolve(work());
  } catch (e) {
    return isBusy(e) ? retryWhileBusy(work, started + timeoutMs, e) : Promise.reject(e as Error);
  }
};

interface Waiting {
  work: () => unknown;
  deadline: number;
  /** The busy error of its first attempt; undefined when it has not run yet. */
  busy: unknown;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

/**
 * A connection's writes, in the order they were asked for. A write runs at once while none is waiting; once one finds
 * the database locked, it and every later write of this queue wait their turn (each until its own deadline, counted
 * from when it was asked for, or from `since` when its caller says it was asked for earlier: a call recorder's batch
 * that gathered while the batch before it waited), so no later append of this process commits ahead of an earlier one. A write that
 * fails is retried whole: `work` must be one transaction (a failed one leaves nothing behind).
 */
export const writeQueue = (timeoutMs: number) => {
  const waiting: Waiting[] = [];
  let draining: Promise<void> | null = null;

  const drain = async (): Promise<void> => {
    for (let next = waiting[0]; next !== undefined; next = waiting[0]) {
      try {
        next.resolve(next.busy === undefined ? await whenFree(next.work, Math.max(0, next.deadline - performance.now())) : await retryWhileBusy(next.work, next.deadline, next.busy));
      } catch (e) {
        next.reject(e);
      }
      waiting.shift();
    }
    draining = null;
  };

  const enqueue = <T>(work: () => T, deadline: number, busy: unknown): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      waiting.push({ work, deadline, busy, resolve: resolve as (value: unknown) => void, reject });
      draining ??= drain();
    });

  return {
    /** `since`: when the write was asked for, if before now (performance.now() ms): its deadline counts from then. */
    run<T>(work: () => T, since?: number): Promise<T> {
      const started = Math.min(since ?? Infinity, performance.now());
      if (waiting.length > 0) return enqueue(work, started + timeoutMs, undefined);
      try {
        return Promise.resolve(work());
      } catch (e) {
        return isBusy(e) ? enqueue(work, started + timeoutMs, e) : Promise.reject(e as Error);
      }
    },
    /** Resolves once every write asked for so far has committed or failed. */
    idle: (): Promise<void> => draining ?? Promise.resolve(),
  };
};
