/**
 * Events read back from a store are checked with zod before any projection sees them: a store shared by several
 * versions of Estate (or written by hand) must not crash a replica with a malformed row.
 */
import { z } from 'zod';
import type { CatalogueEvent, ToolCallStarted, ToolCalled } from '../domain/events.ts';
import { CLASSIFICATIONS, SIDE_EFFECTS, type JsonObject } from '../domain/types.ts';
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
  outcome: z.enum(['ok', 'tool_error', 'output_invalid', 'timeout', 'cancelled']),
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

const firstIssue = (e: z.ZodError): string => {
  const i = e.issues[0];
  return i ? `${i.path.join('.') || '(root)'}: ${i.message}` : 'invalid';
};

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

export const decodeToolCallStarted = (stored: StoredEvent): ToolCallStarted => {
  const r = toolCallStarted.safeParse(stored.data);
  if (!r.success) throw new CorruptEventError(stored, firstIssue(r.error));
  return { type: 'ToolCallStarted', data: r.data };
};
