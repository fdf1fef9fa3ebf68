/**
 * Event payloads (SPEC §4). Stream names: `tool-<name>` per tool, `run-<runId>` per run.
 * Events read back from a store are parsed with the zod schemas in `src/app/event-codec.ts`.
 */
import type { Classified, ToolDefinition } from './types.ts';

export const toolStream = (name: string): string => `tool-${name}`;
export const runStream = (runId: string): string => `run-${runId}`;
export const TOOL_STREAM_PREFIX = 'tool-';

export interface ToolVersionPublished {
  type: 'ToolVersionPublished';
  data: {
    definition: ToolDefinition;
    /** sha256 hex of the RFC 8785 canonical JSON of inputSchema. */
    schemaHash: string;
    /** sha256 hex of the RFC 8785 canonical JSON of the whole definition. */
    definitionHash: string;
    /** 'initial' for a name's first version (no baseline). */
    level: Classified['level'] | 'initial';
    reasons: Classified['reasons'];
    /** The version it was classified against, if any. */
    baseline?: string;
    by: string;
    at: string;
  };
}

export interface ToolVersionDeprecated {
  type: 'ToolVersionDeprecated';
  data: { name: string; version: string; reason: string; by: string; at: string };
}

export interface ToolVersionRetired {
  type: 'ToolVersionRetired';
  data: { name: string; version: string; reason: string; by: string; at: string };
}

export type CatalogueEvent = ToolVersionPublished | ToolVersionDeprecated | ToolVersionRetired;

export type CallOutcome = 'ok' | 'tool_error' | 'output_invalid' | 'timeout' | 'cancelled';

export interface ToolCalled {
  type: 'ToolCalled';
  data: {
    runId: string;
    subject: string;
    tenant: string;
    client: { name: string; version: string } | null;
    protocolVersion: string;
    tool: string;
    version: string;
    schemaHash: string;
    /** sha256 hex of the canonical JSON of the arguments as received. */
    argsHash: string;
    repaired: boolean;
    repairs: { path: string; action: 'dropped' | 'coerced' | 'defaulted' }[];
    outcome: CallOutcome;
    attempts: number;
    durationMs: number;
    at: string;
  };
}

export type EstateEvent = CatalogueEvent | ToolCalled;
