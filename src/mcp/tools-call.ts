/**
 * tools/call (SPEC §3), in the order the house data flow gives: resolve the version → limits → validate (and repair
 * where the side-effect policy allows) → handler → output check → call record (durable) → result. Invalid arguments
 * are an `isError` result with the sorted error lines; the handler does not run and nothing is recorded (invariant 2).
 */
import { randomUUID } from 'node:crypto';
import { isRunId } from '../domain/events.ts';
import { canonicalHash } from '../domain/hash.ts';
import { repair } from '../domain/repair.ts';
import type { Principal } from '../domain/types.ts';
import { checkArgumentLimits, formatErrors, type ValidationError } from '../domain/validate.ts';
import type { CallRecorder } from '../app/call-recorder.ts';
import type { CatalogueReader } from '../app/catalogue-reader.ts';
import type { CallToolResult, HandlerLog, HandlerMap } from '../handlers/types.ts';
import type { CatalogueVersion } from '../../projections/catalogue.ts';
import type { CompiledSchemaCache } from './compiled-schemas.ts';
import { errorResult, invalidParams, missingCapability, storeUnavailable, unknownTool } from './error-map.ts';
import { progressReporter, teeLog, type ClientChannel } from './client-channel.ts';
import { clientAskers, type ClientAsk } from './client-requests.ts';
import { InputRound, openState, parseInputResponses, type CallIdentity, type InputRequiredResult } from './input-required.ts';
import { isPlainObject, type JsonRpcNotification } from './jsonrpc.ts';
import { resolveCallable } from './resolve-tool.ts';
import { runHandler } from './run-handler.ts';
import { hasStructuredContent } from './revisions.ts';
import { DEPRECATED_META, deprecationNotice, REPAIRS_META, RUN_ID_META, VERSION_META } from './tool-projection.ts';

export interface ToolCallDeps {
  reader: CatalogueReader;
  handlers: HandlerMap;
  schemas: CompiledSchemaCache;
  recorder: CallRecorder;
  /** The requestState key (input-required.ts); absent: the per-process default. */
  stateKey?: Buffer;
  isOffered: (v: CatalogueVersion) => boolean;
  /** A logger for handler code, bound to the call. */
  handlerLog: (fields: Record<string, unknown>) => HandlerLog;
  now?: () => number;
  /** Why no call may run now (the store cannot write); null or absent: run them. */
  storeRefusal?: () => string | null;
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
  cancel?: AbortSignal;
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
}

/** What was wrong with a run id, in a bounded message (the id itself may be 900 KB). */
const describeRunId = (v: unknown): string => {
  const rule = `1 to 128 characters of A-Z a-z 0-9 . _ : -, starting with a letter or digit`;
  if (typeof v !== 'string') return `must be a string (${rule})`;
  const shown = JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}...` : v);
  return `${shown}${v.length > 128 ? ` (${v.length} characters)` : ''} is not ${rule}`;
};

const validationResult = (errors: readonly ValidationError[]): CallToolResult => errorResult(formatErrors([...errors]));

/** A short, bounded reason from a store failure (no stack, no connection string). */
const storeReason = (e: unknown): string => {
  const m = e instanceof Error ? e.message : String(e);
  const line = (m.split('\n')[0] ?? '').trim() || 'store error';
  return line.length > 160 ? `${line.slice(0, 160)}...` : line;
};

const metaOf = (params: Record<string, unknown>): Record<string, unknown> => (isPlainObject(params._meta) ? params._meta : {});

export const callTool = async (deps: ToolCallDeps, req: ToolCallRequest): Promise<CallToolResult | InputRequiredResult> => {
  const now = deps.now ?? Date.now;
  const { params, principal } = req;
  if (typeof params.name !== 'string') throw invalidParams('Invalid params: name must be a string');
  const name = params.name;
  const meta = metaOf(params);
  const pinned = meta[VERSION_META];
  if (pinned !== undefined && typeof pinned !== 'string') throw unknownTool(name);
  // Malformed input answers are a protocol error whatever the tool: checked before anything else runs.
  const inputResponses = req.inputRequired ? parseInputResponses(params.inputResponses) : {};
  const requestState = req.inputRequired ? params.requestState : undefined;
  if (requestState !== undefined && typeof requestState !== 'string') throw invalidParams('Invalid params: requestState must be a string');
  const runIdMeta = meta[RUN_ID_META];
  if (runIdMeta !== undefined && !isRunId(runIdMeta)) throw invalidParams(`Invalid run id: ${describeRunId(runIdMeta)}`);
  const runId = runIdMeta ?? req.defaultRunId;

  const listed = pinned === undefined ? req.listed?.get(name) : undefined;
  const v = resolveCallable(deps.reader, deps.isOffered, {
    name,
    principal,
    ...(pinned !== undefined ? { pinned } : {}),
    ...(listed !== undefined ? { listed } : {}),
  });
  const handler = deps.handlers[v.definition.handler];
  if (!handler) throw unknownTool(name);

  const notice = deprecationNotice(v);
  let repairs: { path: string; action: 'dropped' | 'coerced' | 'defaulted' }[] = [];
  const withMeta = (r: CallToolResult): CallToolResult => {
    // A revision without structuredContent (2024-11-05, 2025-03-26) does not get it, as its tools/list gets no outputSchema.
    const { structuredContent, ...rest } = r;
    return {
      ...(hasStructuredContent(req.protocolVersion) && structuredContent !== undefined ? { ...rest, structuredContent } : rest),
      _meta: {
        ...(isPlainObject(r._meta) ? r._meta : {}),
        [VERSION_META]: v.version,
        [RUN_ID_META]: runId,
        ...(notice ? { [DEPRECATED_META]: notice } : {}),
        // What repair changed, so an extra argument silently dropped is not a surprise to the caller.
        ...(repairs.length > 0 ? { [REPAIRS_META]: repairs.map(({ path, action }) => ({ path, action })) } : {}),
      },
    };
  };

  const received: unknown = params.arguments === undefined ? {} : params.arguments;
  const tooBig = checkArgumentLimits(received);
  if (tooBig) return withMeta(validationResult([tooBig]));

  // Compiled ahead of need; a version not ready yet is compiled now, in slices, ahead of the others (compiled-schemas.ts).
  const schemas = await deps.schemas.ready(v);
  let args: unknown = received;
  if (v.definition.sideEffect === 'non_idempotent') {
    // Silently dropping `urgent: true` from a payment is not a repair: every error goes back, nothing runs.
    const errors = schemas.input.validate(received);
    if (errors.length > 0) return withMeta(validationResult(errors));
  } else {
    const r = repair(schemas.input, received);
    if (r.errors.length > 0) return withMeta(validationResult(r.errors));
    args = r.value;
    repairs = r.changes;
  }

  const progressToken = meta.progressToken;
  const channel: ClientChannel | undefined = req.notify && {
    notify: req.notify,
    ...(req.logLevel !== undefined ? { logLevel: req.logLevel } : {}),
    ...(typeof progressToken === 'string' || typeof progressToken === 'number' ? { progressToken } : {}),
  };
  let round: InputRound | undefined;
  let identity: CallIdentity | undefined;
  if (req.inputRequired) {
    identity = { tool: v.name, version: v.version, argsHash: canonicalHash(received) };
    // Answers from the state win over a re-sent one: the run that follows must see what the earlier runs saw.
    const answers = { ...inputResponses, ...(requestState !== undefined ? openState(requestState, identity, deps.stateKey) : {}) };
    round = new InputRound(answers, req.inputRequired.capabilities);
  }
  // A store known not to take writes (read-only file, read-only PostgreSQL, unreachable): refuse before anything runs.
  const refusal = deps.storeRefusal?.() ?? null;
  const observe = (outcome: string, since: number): void => deps.observe?.({ tool: v.name, version: v.version, outcome, seconds: Math.max(0, now() - since) / 1000 });
  if (refusal !== null) {
    observe('store_unavailable', now());
    throw storeUnavailable(false, refusal);
  }
  const started = now();
  const tool = { name: v.name, version: v.version, schemaHash: v.schemaHash };
  const callId = randomUUID();
  const argsHash = canonicalHash(received);
  const subject = principal.subject ?? 'anonymous';
  // No side effect without a trace (SPEC §4): a non_idempotent handler runs only once its intent is durable. An
  // input-required round that is not the last re-runs the handler, so each run gets its own intent.
  if (v.definition.sideEffect === 'non_idempotent') {
    try {
      await deps.recorder.start({ callId, runId, subject, tenant: principal.tenant, tool: v.name, version: v.version, argsHash, at: new Date(started).toISOString() });
    } catch (e) {
      observe('store_unavailable', started);
      throw storeUnavailable(false, storeReason(e));
    }
  }
  const run = await runHandler({
    handler,
    args: args as Record<string, unknown>,
    context: { principal, runId, tool, log: teeLog(deps.handlerLog({ runId, tool: v.name, version: v.version }), channel, v.name), progress: progressReporter(channel) },
    sideEffect: v.definition.sideEffect,
    timeoutMs: v.definition.timeoutMs,
    withSignal: round ? () => round.askers() : clientAskers(req.ask),
    ...(req.cancel ? { cancel: req.cancel } : {}),
  });
  // Not a finished call: nothing is recorded until the run that needs no more input (docs/decisions.md).
  if (round && identity && round.pending.size > 0) {
    const ir = round.result(identity, deps.stateKey);
    return { ...ir, _meta: { [VERSION_META]: v.version, [RUN_ID_META]: runId, ...(notice ? { [DEPRECATED_META]: notice } : {}) } };
  }
  // 2026-07-28: a handler that needs a capability the request did not declare is the protocol's -32021, not a tool
  // failure (SPEC §3's stateless gate, reached at the point the need is known). Nothing ran to completion: no record.
  if (round && run.refusal?.reason === 'capability' && run.refusal.capability) throw missingCapability(run.refusal.capability);
  let { result, outcome } = run;
  if (outcome === 'ok' && schemas.output) {
    const sc = result.structuredContent;
    const errors: ValidationError[] = sc === undefined ? [{ path: '$', message: 'structuredContent is required by the outputSchema' }] : schemas.output.validate(sc);
    if (errors.length > 0) {
      result = errorResult(`Tool output does not match its outputSchema:\n${formatErrors(errors)}`);
      outcome = 'output_invalid';
    }
  }

  try {
    await deps.recorder.record({
      runId,
      subject,
      tenant: principal.tenant,
      client: req.client,
      protocolVersion: req.protocolVersion,
      tool: v.name,
      version: v.version,
      schemaHash: v.schemaHash,
      argsHash,
      repaired: repairs.length > 0,
      repairs,
      outcome,
      attempts: run.attempts,
      durationMs: Math.max(0, now() - started),
      at: new Date(started).toISOString(),
      callId,
    });
  } catch (e) {
    observe('store_unavailable', started);
    throw storeUnavailable(true, storeReason(e));
  }
  observe(outcome, started);
  return withMeta(result);
};
