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

export const progressReporter =
  (channel: ClientChannel | undefined) =>
  (progress: number, total?: number, message?: string): void => {
    if (!channel || channel.progressToken === undefined || !Number.isFinite(progress)) return;
    channel.notify({
      jsonrpc: '2.0',
      method: 'notifications/progress',
      params: { progressToken: channel.progressToken, progress, ...(total !== undefined ? { total } : {}), ...(message !== undefined ? { message } : {}) },
    });
  };

/** The server log, plus the client's copy of what passes its level. */
export const teeLog = (server: HandlerLog, channel: ClientChannel | undefined, logger: string): HandlerLog => {
  const threshold = channel?.logLevel !== undefined ? rank(channel.logLevel) : -1;
  if (!channel || threshold < 0) return server;
  return handlerLogTo(({ level, msg, fields }) => {
    server[level](msg, fields);
    const mcpLevel = level === 'warn' ? 'warning' : level;
    if (rank(mcpLevel) < threshold) return;
    channel.notify({ jsonrpc: '2.0', method: 'notifications/message', params: { level: mcpLevel, logger, data: fields ? { message: msg, ...fields } : msg } });
  });
};
