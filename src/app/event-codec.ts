/**
 * Events read back from a store are checked with zod before any projection sees them: a store shared by several
 * versions of Estate (or written by hand) must not crash a replica with a malformed row.
 */
import { z } from 'zod';
import type { CatalogueEvent, ToolCallStarted, ToolCalled, UpstreamEvent } from '../domain/events.ts';
import { CLASSIFICATIONS, SIDE_EFFECTS, type JsonObject } from '../domain/types.ts';
import { firstIssue } from '../domain/zod-issues.ts';
import type { StoredEvent } from './ports.ts';

const jsonObject = z.custom<JsonObject>((v) => typeof v === 'object' && v !== null && !Array.isArray(v));
const level = z.enum(['major', 'minor', 'patch']);
const reason = z.object({ level, path: z.string(), rule: z.string(), detail: z.string() });

const definition = z.object({
  name: z.string(),
  version: z.string(),
  title: z.string().optional(),
  description: z.string(),
  inputSchema: jsonObject,
  outputSchema: jsonObject.optional(),
  annotations: jsonObject.optional(),
  access: z.object({
    requiredScopes: z.array(z.string()),
    tenants: z.array(z.string()),
    classification: z.enum(CLASSIFICATIONS),
  }),
  sideEffect: z.enum(SIDE_EFFECTS),
  handler: z.string(),
  timeoutMs: z.number(),
});

const lifecycleData = z.object({ name: z.string(), version: z.string(), reason: z.string(), by: z.string(), at: z.string() });

const published = z.object({
  definition,
  schemaHash: z.string(),
  definitionHash: z.string(),
  level: z.union([level, z.literal('initial')]),
  reasons: z.array(reason),
  baseline: z.string().optional(),
  by: z.string(),
  at: z.string(),
});

const toolCalled = z.object({
  runId: z.string(),
  subject: z.string(),
  tenant: z.string(),
  client: z.object({ name: z.string(), version: z.string() }).nullable(),
  protocolVersion: z.string(),
  tool: z.string(),
  version: z.string(),
  schemaHash: z.string(),
  argsHash: z.string(),
  repaired: z.boolean(),
  repairs: z.array(z.object({ path: z.string(), action: z.enum(['dropped', 'coerced', 'defaulted']) })),
  outcome: z.enum(['ok', 'tool_error', 'output_invalid', 'timeout', 'cancelled', 'upstream_error', 'upstream_unavailable']),
  attempts: z.number(),
  durationMs: z.number(),
  at: z.string(),
  callId: z.string().optional(),
});

const toolCallStarted = z.object({
  callId: z.string(),
  runId: z.string(),
  subject: z.string(),
  tenant: z.string(),
  tool: z.string(),
  version: z.string(),
  argsHash: z.string(),
  at: z.string(),
});

export class CorruptEventError extends Error {
  constructor(stored: StoredEvent, detail: string) {
    super(`event at ${stored.position} (${stored.streamId}@${stored.revision}, ${stored.type}) is malformed: ${detail}`);
    this.name = 'CorruptEventError';
  }
}

/** Decode a stored catalogue event; returns null for event types that are not catalogue events. */
export const decodeCatalogueEvent = (stored: StoredEvent): CatalogueEvent | null => {
  switch (stored.type) {
    case 'ToolVersionPublished': {
      const r = published.safeParse(stored.data);
      if (!r.success) throw new CorruptEventError(stored, firstIssue(r.error));
      return { type: 'ToolVersionPublished', data: r.data } as CatalogueEvent;
    }
    case 'ToolVersionDeprecated':
    case 'ToolVersionRetired': {
      const r = lifecycleData.safeParse(stored.data);
      if (!r.success) throw new CorruptEventError(stored, firstIssue(r.error));
      return { type: stored.type, data: r.data };
    }
    default:
      return null;
  }
};

export const decodeToolCalled = (stored: StoredEvent): ToolCalled => {
  const r = toolCalled.safeParse(stored.data);
  if (!r.success) throw new CorruptEventError(stored, firstIssue(r.error));
  return { type: 'ToolCalled', data: r.data };
};

// ───────────────────────────── upstreams (SPEC §7) ─────────────────────────────

const envNames = z.record(z.string(), z.string());
const target = z.discriminatedUnion('transport', [
  z.object({ transport: z.literal('stdio'), command: z.string(), args: z.array(z.string()), cwd: z.string().optional(), env: envNames }),
  z.object({ transport: z.literal('http'), url: z.string(), headers: envNames }),
]);
const access = definition.shape.access;
const candidate = definition.omit({ version: true });

const upstreamSchemas = {
  UpstreamRegistered: z.object({ ns: z.string(), target, access, autoApprove: z.enum(['none', 'schema-minor']), by: z.string(), at: z.string() }),
  UpstreamDriftDetected: z.object({
    ns: z.string(),
    tool: z.string(),
    upstreamTool: z.string(),
    level: z.union([level, z.literal('initial')]),
    reasons: z.array(reason),
    candidate,
    candidateHash: z.string(),
    pinned: z.string().optional(),
    at: z.string(),
  }),
  UpstreamToolVanished: z.object({ ns: z.string(), tool: z.string(), upstreamTool: z.string(), pinned: z.string().optional(), at: z.string() }),
  UpstreamDriftRejected: z.object({ ns: z.string(), tool: z.string(), candidateHash: z.string(), reason: z.string(), by: z.string(), at: z.string() }),
  UpstreamRemoved: z.object({ ns: z.string(), reason: z.string(), retired: z.array(z.string()), by: z.string(), at: z.string() }),
} as const;

/** Decode a stored upstream event; returns null for event types that are not upstream events. */
export const decodeUpstreamEvent = (stored: StoredEvent): UpstreamEvent | null => {
  const schema = (upstreamSchemas as Record<string, z.ZodType>)[stored.type];
  if (!schema) return null;
  const r = schema.safeParse(stored.data);
  if (!r.success) throw new CorruptEventError(stored, firstIssue(r.error));
  return { type: stored.type, data: r.data } as UpstreamEvent;
};

export const decodeToolCallStarted = (stored: StoredEvent): ToolCallStarted => {
  const r = toolCallStarted.safeParse(stored.data);
  if (!r.success) throw new CorruptEventError(stored, firstIssue(r.error));
  return { type: 'ToolCallStarted', data: r.data };
};
