/**
 * Event payloads (SPEC §4). Stream names: `tool-<name>` per tool, `run-<runId>` per run.
 * Events read back from a store are parsed with the zod schemas in `src/app/event-codec.ts`.
 */
import { sha256Hex } from './hash.ts';
import type { Classified, ToolDefinition } from './types.ts';

export const toolStream = (name: string): string => `tool-${name}`;

/** A run id (docs/security.md): 1-128 characters of [A-Za-z0-9._:-], starting with a letter or digit. */
export const RUN_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;
export const isRunId = (s: unknown): s is string => typeof s === 'string' && RUN_ID_PATTERN.test(s);

/** Who a run belongs to: the tenant and subject that recorded into it. */
export interface RunOwner {
  tenant: string;
  subject: string;
}

/** 128 bits of sha256 over an unambiguous encoding of the owner: a fixed-length, store-safe stream name part. */
export const runOwnerKey = (o: RunOwner): string => sha256Hex(JSON.stringify([o.tenant, o.subject])).slice(0, 32);

/**
 * The stream of a run: keyed by run id AND owner (docs/decisions.md "Run ids"). Two callers naming the same run id
 * write to two different streams, so nobody can add to another's run, and no answer differs with whether another
 * owner's run of that id exists. `@` is outside the run id alphabet, so `run-<id>@` is a prefix of exactly that id's runs.
 * Without an owner: the stream name records written before runs were keyed by owner.
 */
export const runStream = (runId: string, owner?: RunOwner): string => (owner ? `run-${runId}@${runOwnerKey(owner)}` : `run-${runId}`);
export const runStreamPrefix = (runId: string): string => `run-${runId}@`;
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

export type CallOutcome = 'ok' | 'tool_error' | 'output_invalid' | 'timeout' | 'cancelled' | 'upstream_error' | 'upstream_unavailable';

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
    /** Pairs the record with its `ToolCallStarted` intent (absent on records written before intents existed). */
    callId?: string;
  };
}

// ───────────────────────────── upstreams (SPEC §7) ─────────────────────────────

export const upstreamStream = (ns: string): string => `upstream-${ns}`;
export const UPSTREAM_STREAM_PREFIX = 'upstream-';

/**
 * Where an upstream lives. Secrets are never here: `env` and `headers` map a name to the NAME of an environment
 * variable of the serving process (`--env TOKEN=env:GITHUB_TOKEN` is stored as `{TOKEN: 'GITHUB_TOKEN'}`).
 */
export type UpstreamTarget =
  | { transport: 'stdio'; command: string; args: string[]; cwd?: string; env: Record<string, string> }
  | { transport: 'http'; url: string; headers: Record<string, string> };

export type AutoApprove = 'none' | 'schema-minor';

/** A candidate definition mapped from an upstream tool: everything but the version, which approval decides. */
export type UpstreamCandidate = Omit<ToolDefinition, 'version'>;

export interface UpstreamRegistered {
  type: 'UpstreamRegistered';
  data: {
    ns: string;
    target: UpstreamTarget;
    access: ToolDefinition['access'];
    autoApprove: AutoApprove;
    by: string;
    at: string;
  };
}

export interface UpstreamDriftDetected {
  type: 'UpstreamDriftDetected';
  data: {
    ns: string;
    /** The catalogue name `<ns>.<t'>`. */
    tool: string;
    upstreamTool: string;
    level: Classified['level'] | 'initial';
    reasons: Classified['reasons'];
    candidate: UpstreamCandidate;
    /** sha256 hex of the canonical JSON of `candidate`: the identity "once per distinct candidate" keys on. */
    candidateHash: string;
    /** The pinned version it was compared with, if any. */
    pinned?: string;
    at: string;
  };
}

/**
 * The durable intent of a non_idempotent call (SPEC §4 "No side effect without a trace"): committed to the run's stream
 * BEFORE the handler runs. A started call with no `ToolCalled` of the same `callId` ran (or may have run) without an
 * outcome on record; `estate calls` shows it as `started`.
 */
export interface ToolCallStarted {
  type: 'ToolCallStarted';
  data: {
    callId: string;
    runId: string;
    subject: string;
    tenant: string;
    tool: string;
    version: string;
    argsHash: string;
    at: string;
  };
}

export interface UpstreamToolVanished {
  type: 'UpstreamToolVanished';
  data: { ns: string; tool: string; upstreamTool: string; pinned?: string; at: string };
}

export interface UpstreamDriftRejected {
  type: 'UpstreamDriftRejected';
  data: { ns: string; tool: string; candidateHash: string; reason: string; by: string; at: string };
}

export interface UpstreamRemoved {
  type: 'UpstreamRemoved';
  data: { ns: string; reason: string; retired: string[]; by: string; at: string };
}

export type UpstreamEvent = UpstreamRegistered | UpstreamDriftDetected | UpstreamToolVanished | UpstreamDriftRejected | UpstreamRemoved;

export type EstateEvent = CatalogueEvent | ToolCalled | ToolCallStarted | UpstreamEvent;
