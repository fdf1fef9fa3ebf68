/** The call log of one run, folded from its `run-<runId>` stream (SPEC §5 `estate calls`). */
import type { ToolCalled } from '../src/domain/events.ts';

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
