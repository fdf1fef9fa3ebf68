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
