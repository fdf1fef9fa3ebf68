/** The call log of one run, folded from its `run-<runId>` stream (SPEC §5 `estate calls`). */
import type { ToolCallStarted, ToolCalled } from '#domain/events';

export interface CallRecordView {
  tool: string;
  version: string;
  schemaHash: string;
  argsHash: string;
  repaired: boolean;
  outcome: ToolCalled['data']['outcome'];
  durationMs: number;
  at: string;
  subject: string;
  tenant: string;
  attempts: number;
  protocolVersion: string;
  client: ToolCalled['data']['client'];
  repairs: ToolCalled['data']['repairs'];
}

export const callRecords = (events: readonly ToolCalled[]): CallRecordView[] =>
  events.map(({ data: d }) => ({
    tool: d.tool,
    version: d.version,
    schemaHash: d.schemaHash,
    argsHash: d.argsHash,
    repaired: d.repaired,
    outcome: d.outcome,
    durationMs: d.durationMs,
    at: d.at,
    subject: d.subject,
    tenant: d.tenant,
    attempts: d.attempts,
    protocolVersion: d.protocolVersion,
    client: d.client,
    repairs: d.repairs,
  }));

/** A call whose intent is on record but whose outcome is not (SPEC §4): it ran, or may have run, unrecorded. */
export interface StartedCallView {
  callId: string;
  tool: string;
  version: string;
  argsHash: string;
  outcome: 'started';
  at: string;
  subject: string;
  tenant: string;
}

/**
 * A run's calls from its stream in order: each `ToolCalled`, and each `ToolCallStarted` that no `ToolCalled` of the same
 * `callId` finished, shown where the intent was written.
 */
export const runCalls = (events: readonly (ToolCalled | ToolCallStarted)[]): (CallRecordView | StartedCallView)[] => {
  const finished = new Set(events.flatMap((e) => (e.type === 'ToolCalled' && e.data.callId !== undefined ? [e.data.callId] : [])));
  const out: (CallRecordView | StartedCallView)[] = [];
  for (const e of events) {
    if (e.type === 'ToolCalled') out.push(...callRecords([e]));
    else if (!finished.has(e.data.callId)) {
      const d = e.data;
      out.push({ callId: d.callId, tool: d.tool, version: d.version, argsHash: d.argsHash, outcome: 'started', at: d.at, subject: d.subject, tenant: d.tenant });
    }
  }
  return out;
};
