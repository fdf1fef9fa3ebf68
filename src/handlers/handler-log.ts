/**
 * A handler's `ctx.log` over the logger port. Its type says message first (src/handlers/types.ts), but a JavaScript
 * handler written in pino's order (`info({ id }, 'done')`) is read the same way rather than logging an object as its
 * message. Every line reaches the port fields first.
 */
import type { Log } from '#app/log';
import type { HandlerLog } from './types.ts';

export type HandlerLogLevel = 'debug' | 'info' | 'warn' | 'error';

export interface HandlerLogLine {
  level: HandlerLogLevel;
  msg: string;
  fields?: Record<string, unknown>;
}

const lineOf = (level: HandlerLogLevel, a: unknown, b: unknown): HandlerLogLine => {
  const [msg, fields] = typeof a === 'string' ? [a, b] : [b, a];
  const f = typeof fields === 'object' && fields !== null ? (fields as Record<string, unknown>) : undefined;
  return { level, msg: typeof msg === 'string' ? msg : '', ...(f ? { fields: f } : {}) };
};

/** A handler log whose every line goes to `write`, in whichever order the handler wrote it. */
export const handlerLogTo = (write: (line: HandlerLogLine) => void): HandlerLog => {
  const fn =
    (level: HandlerLogLevel) =>
    (a: unknown, b?: unknown): void =>
      write(lineOf(level, a, b));
  return { debug: fn('debug'), info: fn('info'), warn: fn('warn'), error: fn('error') };
};

/** `ctx.log` over the logger port: fields first, and no empty message. */
export const handlerLogOver = (log: Log): HandlerLog =>
  handlerLogTo(({ level, msg, fields }) => (msg === '' ? log[level](fields ?? {}) : log[level](fields ?? {}, msg)));
