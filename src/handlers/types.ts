/**
 * What a handler module provides (SPEC §6): `{ [handlerName]: async (args, ctx) => CallToolResult }`. A published
 * version names its handler; a process offers only the versions whose handler it binds.
 */
import type { Principal } from '../domain/types.ts';

export interface ContentBlock {
  type: string;
  [key: string]: unknown;
}

export interface CallToolResult {
  content: ContentBlock[];
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
  _meta?: Record<string, unknown>;
  [key: string]: unknown;
}

export interface HandlerLog {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

export interface HandlerContext {
  principal: Principal;
  runId: string;
  tool: { name: string; version: string; schemaHash: string };
  /** Aborted on timeout or `notifications/cancelled`. */
  signal: AbortSignal;
  /** Server log (stderr); also sent to the client as `notifications/message` when it asked for a log level. */
  log: HandlerLog;
  /** Report progress to the client if the request carried a `progressToken`; a no-op otherwise. Always set by Estate. */
  progress?(progress: number, total?: number, message?: string): void;
}

export type ToolHandler = (args: Record<string, unknown>, ctx: HandlerContext) => Promise<CallToolResult> | CallToolResult;

export type HandlerMap = Readonly<Record<string, ToolHandler>>;
