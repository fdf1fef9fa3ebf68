/**
 * What a running handler may tell the client about its request: progress (when the request carried a
 * `progressToken`) and log messages (when the client asked for a log level: `logging/setLevel` on a session, or
 * `_meta["io.modelcontextprotocol/logLevel"]` on a 2026-07-28 request). Nothing is sent that the client did not ask
 * for. The notifications travel on the request's own stream (its SSE response, or the stdio pipe).
 */
import { handlerLogTo } from '#handlers/handler-log';
import type { HandlerLog } from '#handlers/types';
import type { JsonRpcNotification } from './jsonrpc.ts';

/** MCP (syslog) levels, least severe first. */
export const MCP_LOG_LEVELS = ['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency'] as const;
export const LOG_LEVEL_META = 'io.modelcontextprotocol/logLevel';

const rank = (level: string): number => (MCP_LOG_LEVELS as readonly string[]).indexOf(level);
export const isMcpLogLevel = (level: unknown): level is string => typeof level === 'string' && rank(level) >= 0;

export interface ClientChannel {
  /** Sends one notification related to the request. */
  notify(n: JsonRpcNotification): void;
  /** The least severe level the client wants; undefined: no log messages. */
  logLevel?: string;
  progressToken?: string | number;
}

/**
 * What one call may send its client and the server log, whoever writes it: a handler module, or an upstream relayed
 * through Estate (src/upstream/relay.ts), which is hostile input. Past a bound the rest is dropped (one warning says
 * so), so a flooding upstream costs its own caller a bounded stream and no one else anything.
 */
export const MAX_LOG_LINES_PER_CALL = 1000;
export const MAX_PROGRESS_PER_CALL = 10_000;
/** Longer log messages are cut here (UTF-16 code units), with a marker saying how long they were. */
export const MAX_LOG_MESSAGE_CHARS = 8192;

const cut = (msg: string): string =>
  msg.length > MAX_LOG_MESSAGE_CHARS ? `${msg.slice(0, MAX_LOG_MESSAGE_CHARS)}… (cut by Estate: ${msg.length} characters)` : msg;

export const progressReporter = (channel: ClientChannel | undefined) => {
  let sent = 0;
  return (progress: number, total?: number, message?: string): void => {
    if (!channel || channel.progressToken === undefined || !Number.isFinite(progress)) return;
    if (++sent > MAX_PROGRESS_PER_CALL) return;
    channel.notify({
      jsonrpc: '2.0',
      method: 'notifications/progress',
      params: { progressToken: channel.progressToken, progress, ...(total !== undefined ? { total } : {}), ...(message !== undefined ? { message: cut(message) } : {}) },
    });
  };
};

/** The server log, plus the client's copy of what passes its level; at most MAX_LOG_LINES_PER_CALL lines of each. */
export const teeLog = (server: HandlerLog, channel: ClientChannel | undefined, logger: string): HandlerLog => {
  const threshold = channel?.logLevel !== undefined ? rank(channel.logLevel) : -1;
  let lines = 0;
  const toClient = (level: string, data: unknown): void => {
    if (!channel || threshold < 0 || rank(level) < threshold) return;
    channel.notify({ jsonrpc: '2.0', method: 'notifications/message', params: { level, logger, data } });
  };
  return handlerLogTo(({ level, msg, fields }) => {
    if (++lines > MAX_LOG_LINES_PER_CALL) {
      if (lines === MAX_LOG_LINES_PER_CALL + 1) {
        const note = `Estate drops this call's further log lines: more than ${MAX_LOG_LINES_PER_CALL}`;
        server.warn(note);
        toClient('warning', note);
      }
      return;
    }
    const text = cut(msg);
    server[level](text, fields);
    toClient(level === 'warn' ? 'warning' : level, fields ? { message: text, ...fields } : text);
  });
};
