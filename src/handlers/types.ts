/**
 * What a handler module provides (SPEC §6): `{ [handlerName]: async (args, ctx) => CallToolResult }`. A published
 * version names its handler; a process offers only the versions whose handler it binds.
 */
import type { Principal } from '#domain/types';

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

/**
 * `ctx.log`: the server log (src/app/log.ts) as a handler sees it, message first. Estate's own port takes the fields
 * first (pino's order); src/handlers/handler-log.ts adapts, and also accepts a handler that writes pino's order.
 */
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
  /**
   * Ask the client's user for input (`elicitation/create`), when the client declared the `elicitation` capability.
   * On a 2025 session the request is sent mid-call. On a stateless 2026-07-28 call nothing is sent: an unanswered
   * question ends the run and the call answers an InputRequiredResult (SEP-2322); the client's follow-up call runs the
   * handler again from the start and this resolves with the recorded answer — so a handler must ask the same questions
   * in the same order until it has its answers (no side effect before the last question). Rejects (an Error a handler
   * may turn into an `isError` result) when the client did not declare the capability, when the call is cancelled or
   * times out, and when the client answers with an error. Always set by Estate.
   */
  elicit?(params: ElicitParams, options?: AskOptions): Promise<ElicitResult>;
  /** Ask the client's model for a completion (`sampling/createMessage`); as `elicit`, for `sampling`. */
  sample?(params: SampleParams, options?: AskOptions): Promise<SampleResult>;
  /** Ask the client for its roots (`roots/list`); as `elicit`, for `roots`. */
  listRoots?(options?: AskOptions): Promise<ListRootsResult>;
  /**
   * What the client declared it can answer, on a stateless 2026-07-28 call (declared per request); absent on a 2025
   * session. An upstream proxy tells a 2026-07-28 upstream these instead of Estate's own, so the upstream asks only
   * what the caller can answer.
   */
  clientCapabilities?: Readonly<Record<string, unknown>>;
}

export interface AskOptions {
  /**
   * The question's key in a 2026-07-28 InputRequiredResult (`inputRequests` / `inputResponses`); by default the
   * method and the question's position in the run (`elicit-1`, `sample-2`, ...). Ignored on 2025 sessions.
   */
  key?: string;
}

export interface ListRootsResult {
  roots: { uri: string; name?: string; [key: string]: unknown }[];
  [key: string]: unknown;
}

/** `elicitation/create` params: the message shown to the user and a flat object schema of what to ask for. */
export interface ElicitParams {
  message: string;
  requestedSchema: Record<string, unknown>;
  [key: string]: unknown;
}

export interface ElicitResult {
  action: 'accept' | 'decline' | 'cancel';
  content?: Record<string, unknown>;
  [key: string]: unknown;
}

export interface SamplingMessage {
  role: 'user' | 'assistant';
  content: ContentBlock | ContentBlock[];
  [key: string]: unknown;
}

/** `sampling/createMessage` params. */
export interface SampleParams {
  messages: SamplingMessage[];
  maxTokens: number;
  [key: string]: unknown;
}

export interface SampleResult {
  role: 'user' | 'assistant';
  content: ContentBlock | ContentBlock[];
  model: string;
  stopReason?: string;
  [key: string]: unknown;
}

export type ToolHandler = (args: Record<string, unknown>, ctx: HandlerContext) => Promise<CallToolResult> | CallToolResult;

export type HandlerMap = Readonly<Record<string, ToolHandler>>;
