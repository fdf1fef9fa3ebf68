/**
 * The tools/call pipeline's dependencies (fixed per server) and one call's request (per call).
 */
import type { CallRecorder } from '#app/call-recorder';
import type { CatalogueReader } from '#app/catalogue-reader';
import type { Principal } from '#domain/types';
import type { CallToolResult, HandlerLog } from '#handlers/types';
import type { CatalogueVersion } from '#projections/catalogue';
import type { Cancel } from '../cancellation.ts';
import type { ClientAsk } from '../client-requests.ts';
import type { CompiledSchemaCache } from '../compiled-schemas.ts';
import type { InputRequiredResult } from '../input-required.ts';
import type { JsonRpcNotification } from '../jsonrpc.ts';
import type { StoreFailed } from './execute.ts';
import type { ExecutorLookup } from './executor.ts';

export interface ToolCallDeps {
  reader: CatalogueReader;
  /** Handler name → executor (executor.ts): module handlers and upstream proxies. */
  executors: ExecutorLookup;
  schemas: CompiledSchemaCache;
  recorder: CallRecorder;
  /** The requestState key (input-required.ts); absent: the per-process default. */
  stateKey?: Buffer;
  /** How long a call's requestStates are good for after its first was issued (ESTATE_STATE_TTL_MS), by `now`. */
  stateTtlMs: number;
  isOffered: (v: CatalogueVersion) => boolean;
  /** A logger for handler code, bound to the call. */
  handlerLog: (fields: Record<string, unknown>) => HandlerLog;
  now?: () => number;
  /** Why no call may run now (the store cannot write); null or absent: run them. */
  storeRefusal?: () => string | null;
  /** Told the store's own words when it refused a call's intent or record (for the server's log). */
  storeFailed?: StoreFailed;
  /** Told each finished call (metrics); `store_unavailable` when its intent or record could not be written. */
  observe?: (o: { tool: string; version: string; outcome: string; seconds: number }) => void;
}

export interface ToolCallRequest {
  params: Record<string, unknown>;
  principal: Principal;
  /** Run id when the request does not name one. */
  defaultRunId: string;
  protocolVersion: string;
  client: { name: string; version: string } | null;
  /** The session's last listing: name → version. */
  listed?: ReadonlyMap<string, string>;
  cancel?: Cancel;
  /** The request's channel to the client (progress, log messages); absent where none can be delivered. */
  notify?: (n: JsonRpcNotification) => void;
  /** The log level the client asked for, if any. */
  logLevel?: string;
  /** Requests to the client (elicitation, sampling) about this call; absent on stateless requests. */
  ask?: ClientAsk;
  /**
   * A stateless 2026-07-28 call: the handler's questions are answered from `inputResponses` and `requestState`, and an
   * unanswered one makes the call answer an InputRequiredResult. `capabilities`: what this request declares.
   */
  inputRequired?: { capabilities: Record<string, unknown> };
  /**
   * Told of each execution of the handler that runs on after the call gave up on it (its deadline, a cancel), with a
   * promise that settles when it has ended: the per-subject bound holds the call's slot until then (ServerCore.callTool).
   */
  onExecution?: (ended: Promise<void>) => void;
}

export interface ToolCallPipeline {
  call(req: ToolCallRequest): Promise<CallToolResult | InputRequiredResult>;
}
