/**
 * Step 5 of tools/call: the durable call record (ToolCalled), written before the client gets its answer. A record
 * the store refuses is -32050 with `ran: true`: the caller learns the tool ran and its outcome is not on record.
 */
import type { CallRecorder } from '#app/call-recorder';
import { traceStore } from '#app/tracing';
import type { CallOutcome } from '#domain/events';
import type { Principal } from '#domain/types';
import type { CatalogueVersion } from '#projections/catalogue';
import { storeUnavailable } from '../error-map.ts';
import type { Repair } from './admit.ts';
import { storeFailure, storeRefusedWrite, type StoreFailed } from './execute.ts';
import { subjectOf } from '../subject-counts.ts';

export interface CallFacts {
  v: CatalogueVersion;
  /** The version's schemaHash (from its details, read with its schemas). */
  schemaHash: string;
  principal: Principal;
  runId: string;
  client: { name: string; version: string } | null;
  protocolVersion: string;
  argsHash: string;
  repairs: Repair[];
  outcome: CallOutcome;
  attempts: number;
  callId: string;
  started: number;
  finished: number;
}

export const recordCall = async (recorder: CallRecorder, f: CallFacts, storeFailed?: StoreFailed): Promise<void> => {
  try {
    const record = {
      runId: f.runId,
      subject: subjectOf(f.principal),
      tenant: f.principal.tenant,
      client: f.client,
      protocolVersion: f.protocolVersion,
      tool: f.v.name,
      version: f.v.version,
      schemaHash: f.schemaHash,
      argsHash: f.argsHash,
      repaired: f.repairs.length > 0,
      repairs: f.repairs,
      outcome: f.outcome,
      attempts: f.attempts,
      durationMs: Math.max(0, f.finished - f.started),
      at: new Date(f.started).toISOString(),
      callId: f.callId,
    };
    // The wait for the group commit (src/app/call-recorder.ts) that makes this record durable.
    await traceStore('append', 'ToolCalled', () => recorder.record(record));
  } catch (e) {
    storeFailed?.(storeFailure(f, true, e));
    throw storeUnavailable(true, storeRefusedWrite(f.callId));
  }
};
