/**
 * tools/call (SPEC §3) as named steps, built once per server from its dependencies (`createToolCallPipeline`):
 *   read the request (tool-call/read-request.ts) → resolve the version and its executor (resolve.ts) → admit the
 *   arguments: limits, validate or repair (admit.ts), input-required rounds (input-round.ts) → execute (execute.ts,
 *   through the executor port, executor.ts) → check the output (check-output.ts) → record (record.ts) → answer
 *   (answer.ts).
 * Invalid arguments are an `isError` result with the sorted error lines; nothing runs and nothing is recorded
 * (invariant 2). A round that ends in input_required is not a finished call: nothing is recorded either.
 * Traced (src/app/tracing.ts), the call is one span and its gates are events on it: resolved, validated, repaired
 * (when repair changed something), handler, recorded.
 */
import { traceToolCall, type Span } from '#app/tracing';
import type { CallToolResult } from '#handlers/types';
import { argsHashOf } from './tool-call/args-hash.ts';
import { progressReporter, teeLog, type ClientChannel } from './client-channel.ts';
import { clientAskers } from './client-requests.ts';
import { missingCapability } from './error-map.ts';
import type { InputRequiredResult } from './input-required.ts';
import { admitArguments, argumentLimitRefusal } from './tool-call/admit.ts';
import { answer, inputRequiredAnswer } from './tool-call/answer.ts';
import { checkOutput } from './tool-call/check-output.ts';
import { executeCall } from './tool-call/execute.ts';
import { openInputRounds, type StateSettings } from './tool-call/input-round.ts';
import { readCallParams } from './tool-call/read-request.ts';
import { recordCall } from './tool-call/record.ts';
import { resolveCall } from './tool-call/resolve.ts';
import type { ToolCallDeps, ToolCallPipeline, ToolCallRequest } from './tool-call/types.ts';

export type { ToolCallDeps, ToolCallPipeline, ToolCallRequest } from './tool-call/types.ts';

/** The request's channel to the client: progress when it carried a token, log messages at the level it asked for. */
const channelOf = (req: ToolCallRequest, meta: Record<string, unknown>): ClientChannel | undefined => {
  const progressToken = meta.progressToken;
  return (
    req.notify && {
      notify: req.notify,
      ...(req.logLevel !== undefined ? { logLevel: req.logLevel } : {}),
      ...(typeof progressToken === 'string' || typeof progressToken === 'number' ? { progressToken } : {}),
    }
  );
};

export const createToolCallPipeline = (deps: ToolCallDeps): ToolCallPipeline => {
  const now = deps.now ?? Date.now;
  // Copied field by field into each call's deps: `{ ...executeDeps, observe }` would take V8's slow path (answer.ts).
  const executeDeps = { recorder: deps.recorder, now, storeRefusal: deps.storeRefusal, storeFailed: deps.storeFailed };
  // How requestStates are sealed and checked: the key, their TTL, this pipeline's clock (input-round.ts).
  const stateSettings: StateSettings = { ttlMs: deps.stateTtlMs, now, ...(deps.stateKey ? { key: deps.stateKey } : {}) };

  /** One call; `span` is undefined when tracing is off or the trace is not sampled (then no event is even built). */
  const call = async (req: ToolCallRequest, span: Span | undefined): Promise<CallToolResult | InputRequiredResult> => {
    const p = readCallParams(req);
    const { v, executor } = resolveCall(deps, p, req.principal, req.listed);
    if (span) {
      span.updateName(`execute_tool ${v.name}`);
      span.setAttributes({ 'gen_ai.tool.name': v.name, 'estate.tool.version': v.version, 'estate.run_id': p.runId });
      span.addEvent('resolved', { 'estate.tool.version': v.version, 'estate.pinned': p.pinned !== undefined });
    }
    const facts = { v, runId: p.runId, protocolVersion: req.protocolVersion };
    const tooBig = argumentLimitRefusal(p.received);
    if (tooBig) {
      span?.setAttribute('estate.outcome', 'invalid_arguments');
      return answer(facts, tooBig);
    }
    // Warm: the validators are there and nothing is awaited; a version's first call may wait for its own compile.
    const schemas = deps.schemas.compiled(v) ?? (await deps.schemas.ready(v));
    // The hash comes with the schemas: a record does not hold it (it is read with the version's details).
    const schemaHash = schemas.schemaHash;
    span?.setAttribute('estate.tool.schema_hash', schemaHash);
    const admitted = admitArguments(v, schemas, p.received);
    span?.addEvent('validated', { 'estate.admitted': admitted.ok });
    if (!admitted.ok) {
      span?.setAttribute('estate.outcome', 'invalid_arguments');
      return answer({ ...facts, repairs: admitted.repairs }, admitted.refusal);
    }
    if (admitted.repairs.length > 0) span?.addEvent('repaired', { 'estate.repairs': admitted.repairs.length });
    const argsHash = argsHashOf(p.received);
    const rounds = openInputRounds(p, v, executor, argsHash, req.principal, stateSettings);

    const observe = (outcome: string, since: number): void =>
      deps.observe?.({ tool: v.name, version: v.version, outcome, seconds: Math.max(0, now() - since) / 1000 });
    const channel = channelOf(req, p.meta);
    const { callId, started, run } = await executeCall(
      { recorder: executeDeps.recorder, now: executeDeps.now, storeRefusal: executeDeps.storeRefusal, storeFailed: executeDeps.storeFailed, observe },
      {
        v,
        executor,
        args: admitted.args,
        principal: req.principal,
        runId: p.runId,
        argsHash,
        context: {
          principal: req.principal,
          runId: p.runId,
          tool: { name: v.name, version: v.version, schemaHash },
          log: teeLog(deps.handlerLog({ runId: p.runId, tool: v.name, version: v.version }), channel, v.name),
          progress: progressReporter(channel),
          ...(p.input ? { clientCapabilities: p.input.capabilities } : {}),
        },
        withSignal: rounds?.kind === 'rounds' ? () => rounds.round.askers() : rounds?.kind === 'once' ? () => rounds.askers : clientAskers(req.ask),
        ...(req.cancel ? { cancel: req.cancel } : {}),
        ...(req.onExecution ? { onExecution: req.onExecution } : {}),
      },
    );
    span?.addEvent('handler', { 'estate.outcome': run.outcome, 'estate.attempts': run.attempts });

    if (rounds?.kind === 'rounds') {
      // Not a finished call: nothing is recorded until the run that needs no more input (docs/decisions.md).
      if (rounds.round.pending.size > 0) {
        span?.setAttribute('estate.outcome', 'input_required');
        const issue = { principal: req.principal, now: now(), ...(stateSettings.key ? { key: stateSettings.key } : {}) };
        return inputRequiredAnswer(facts, rounds.round.result(rounds.identity, issue));
      }
      // 2026-07-28: a handler that needs a capability the request did not declare is the protocol's -32021, not a
      // tool failure (SPEC §3's stateless gate, reached where the need is known). Nothing finished: no record.
      if (run.refusal?.reason === 'capability' && run.refusal.capability) throw missingCapability(run.refusal.capability);
    }

    const { result, outcome } = checkOutput(schemas.output, run.result, run.outcome);
    try {
      await recordCall(deps.recorder, {
        v,
        schemaHash,
        principal: req.principal,
        runId: p.runId,
        client: req.client,
        protocolVersion: req.protocolVersion,
        argsHash,
        repairs: admitted.repairs,
        outcome,
        attempts: run.attempts,
        callId,
        started,
        finished: now(),
      }, deps.storeFailed);
    } catch (e) {
      observe('store_unavailable', started);
      throw e;
    }
    if (span) {
      span.addEvent('recorded', { 'estate.outcome': outcome });
      span.setAttribute('estate.outcome', outcome);
    }
    observe(outcome, started);
    // A call that ran once and must not run again (a proxied non_idempotent tool) is recorded as it ended, and a
    // question the client never declared it could answer is still the protocol's -32021 to it.
    if (rounds?.kind === 'once' && run.refusal?.reason === 'capability' && run.refusal.capability) throw missingCapability(run.refusal.capability);
    return answer({ v, runId: p.runId, protocolVersion: req.protocolVersion, repairs: admitted.repairs }, result);
  };

  return { call: (req) => traceToolCall((span) => call(req, span)) };
};
