/**
 * The one logger port. Fields first, then the message: pino's order, so the composition root hands pino's Logger
 * (src/compose/logger.ts) straight to anything that logs, and tests hand `silentLog` or a recording object.
 * A handler's `ctx.log` (src/handlers/types.ts) is a view of this port that also takes the message first.
 */
export interface Log {
  debug(fields: object, msg?: string): void;
  info(fields: object, msg?: string): void;
  warn(fields: object, msg?: string): void;
  error(fields: object, msg?: string): void;
}

/** A Log that can hand out a child carrying fixed fields on every line (pino's `child`). */
export interface RootLog extends Log {
  child(fields: Record<string, unknown>): RootLog;
}

const nothing = (): void => undefined;

export const silentLog: Log = { debug: nothing, info: nothing, warn: nothing, error: nothing };

/**
 * A warning logged at most once per 10 s, with how many times it was raised since the last line (as `countAs`:
 * `refused` by default): an attack (refused connections, bodies, upstream answers) must be visible in the log without
 * flooding it.
 */
export const throttledWarning = (log: Log, msg: string, countAs = 'refused'): ((fields: Record<string, unknown>) => void) => {
  let unwarned = 0;
  let warnedAt = Number.NEGATIVE_INFINITY;
  return (fields) => {
    unwarned++;
    if (Date.now() - warnedAt < 10_000) return;
    log.warn({ ...fields, [countAs]: unwarned }, msg);
    warnedAt = Date.now();
    unwarned = 0;
  };
};
