/**
 * Step 3 of tools/call: run the executor. A store known not to take writes refuses the call before anything runs;
 * a non_idempotent call runs only once its intent is durable (no side effect without a trace, SPEC §4). An
 * input-required round that is not the last runs the executor again, so each round writes its own intent.
 */
import { randomUUID } from 'node:crypto';
import type { CallRecorder } from '#app/call-recorder';
import { traceStore } from '#app/tracing';
import type { Principal } from '#domain/types';
import type { HandlerContext } from '#handlers/types';
import type { CatalogueVersion } from '#projections/catalogue';
import { publicReason } from '#ops/store-health';
import { storeUnavailable } from '../error-map.ts';
import type { Cancel } from '../cancellation.ts';
import type { HandlerRun, RunOptions } from '../run-handler.ts';
import type { ToolExecutor } from './executor.ts';
import { subjectOf } from '../subject-counts.ts';

export interface Execution {
  callId: string;
  started: number;
  run: HandlerRun;
}

export interface ExecuteDeps {
  recorder: CallRecorder;
  now: () => number;
  storeRefusal?: () => string | null;
  /** Told the store's own words when it refused a call's intent or record (the server's log; never the caller). */
  storeFailed?: StoreFailed;
  /** Counts a call that ended here (`store_unavailable`). */
  observe: (outcome: string, since: number) => void;
}

export interface ExecuteCall {
  v: CatalogueVersion;
  executor: ToolExecutor;
  args: Record<string, unknown>;
  principal: Principal;
  runId: string;
  argsHash: string;
  context: Omit<HandlerContext, 'signal'>;
  withSignal: NonNullable<RunOptions['withSignal']>;
  cancel?: Cancel;
  onExecution?: RunOptions['onExecution'];
}

/** A short, bounded reason from a store failure (no stack), for the server's log. */
export const storeReason = (e: unknown): string => {
  const m = e instanceof Error ? e.message : String(e);
  const line = (m.split('\n')[0] ?? '').trim() || 'store error';
  return line.length > 160 ? `${line.slice(0, 160)}...` : line;
};

/** A call the store refused, as the server logs it: who, what, and the driver's words. */
export type StoreFailed = (fields: { callId: string; runId: string; tenant: string; subject: string; tool: string; version: string; ran: boolean; reason: string }) => void;

/** StoreFailed's fields for a call (its intent: `ran` false; its record: true) and the store's error. */
export const storeFailure = (call: { callId: string; runId: string; principal: Principal; v: CatalogueVersion }, ran: boolean, e: unknown): Parameters<StoreFailed>[0] => ({
  callId: call.callId,
  runId: call.runId,
  tenant: call.principal.tenant,
  subject: subjectOf(call.principal),
  tool: call.v.name,
  version: call.v.version,
  ran,
  reason: storeReason(e),
});

/**
 * What the caller is told when the store refused a write. The driver's words can name a host and port, a database, a
 * user or a file path (as `/readyz`'s reason could, src/ops/store-health.ts): they go to the server's log, beside the
 * call id the caller is given to quote.
 */
export const storeRefusedWrite = (callId: string): string => `the store did not take the write; the server's log has the reason (call ${callId})`;

export const executeCall = async (deps: ExecuteDeps, c: ExecuteCall): Promise<Execution> => {
  const refusal = deps.storeRefusal?.() ?? null;
  if (refusal !== null) {
    deps.observe('store_unavailable', deps.now());
    // Logged in full when the probe found it (src/compose/serve.ts); the caller gets its fixed part.
    throw storeUnavailable(false, publicReason(refusal));
  }
  const started = deps.now();
  const callId = randomUUID();
  const { v, principal } = c;
  if (v.sideEffect === 'non_idempotent') {
    try {
      const intent = { callId, runId: c.runId, subject: subjectOf(principal), tenant: principal.tenant, tool: v.name, version: v.version, argsHash: c.argsHash, at: new Date(started).toISOString() };
      await traceStore('append', 'ToolCallStarted', () => deps.recorder.start(intent));
    } catch (e) {
      deps.observe('store_unavailable', started);
      deps.storeFailed?.(storeFailure({ callId, runId: c.runId, principal, v }, false, e));
      throw storeUnavailable(false, storeRefusedWrite(callId));
    }
  }
  const run = await c.executor.execute({
    args: c.args,
    context: c.context,
    sideEffect: v.sideEffect,
    timeoutMs: v.timeoutMs,
    withSignal: c.withSignal,
    ...(c.cancel ? { cancel: c.cancel } : {}),
    ...(c.onExecution ? { onExecution: c.onExecution } : {}),
  });
  return { callId, started, run };
};
