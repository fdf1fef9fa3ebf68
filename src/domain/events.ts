/**
 * Every event Estate writes (SPEC §4, §7), declared ONCE: a zod schema per payload, and the TypeScript types derived
 * from it (`z.infer`), so the shape a writer builds and the shape a reader accepts cannot drift apart. The schemas are
 * applied in one place, `src/app/event-codec.ts`, when an event leaves the store; the change topic's message is
 * declared here too, beside the events it announces. Stream names: `tool-<name>` per tool, `run-<runId>` per run,
 * `upstream-<ns>` per upstream.
 */
import { z } from 'zod';
import { sha256Hex } from './hash.ts';
import { isStrictSemver } from './semver.ts';
import { NAME_PATTERN } from './tool-definition.ts';
import { CLASSIFICATIONS, SIDE_EFFECTS, type JsonObject, type ToolDefinition } from './types.ts';

export const toolStream = (name: string): string => `tool-${name}`;

/**
 * One event named by its stream and revision: what a projection snapshot ends at, so that a process restoring it can
 * check that its store's log holds that very event at the snapshot's position (positions are per store).
 */
export interface EventAnchor {
  streamId: string;
  revision: number;
}

/** A run id (docs/security.md): 1-128 characters of [A-Za-z0-9._:-], starting with a letter or digit. */
export const RUN_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;
export const isRunId = (s: unknown): s is string => typeof s === 'string' && RUN_ID_PATTERN.test(s);

/** Who a run belongs to: the tenant and subject that recorded into it. */
export interface RunOwner {
  tenant: string;
  subject: string;
}

/** Owner keys already computed: one caller's every call would hash the same pair again (a sha256 per call record). */
const ownerKeys = new Map<string, string>();
const OWNER_KEYS_KEPT = 4096;

/** 128 bits of sha256 over an unambiguous encoding of the owner: a fixed-length, store-safe stream name part. */
export const runOwnerKey = (o: RunOwner): string => {
  const encoded = JSON.stringify([o.tenant, o.subject]);
  let key = ownerKeys.get(encoded);
  if (key === undefined) {
    key = sha256Hex(encoded).slice(0, 32);
    // Bounded: many distinct callers only cost the hash again, never memory.
    if (ownerKeys.size >= OWNER_KEYS_KEPT) ownerKeys.clear();
    ownerKeys.set(encoded, key);
  }
  return key;
};

/**
 * The stream of a run: keyed by run id AND owner (docs/decisions.md "Run ids"). Two callers naming the same run id
 * write to two different streams, so nobody can add to another's run, and no answer differs with whether another
 * owner's run of that id exists. `@` is outside the run id alphabet, so `run-<id>@` is a prefix of exactly that id's runs.
 * Without an owner: the stream name records written before runs were keyed by owner.
 */
export const runStream = (runId: string, owner?: RunOwner): string => (owner ? `run-${runId}@${runOwnerKey(owner)}` : `run-${runId}`);
export const runStreamPrefix = (runId: string): string => `run-${runId}@`;
export const TOOL_STREAM_PREFIX = 'tool-';

// ───────────────────────────── shared parts ─────────────────────────────

/**
 * Loose on purpose where the tool-definition parser (tool-definition.ts) is strict: an event was judged when it was
 * written, possibly by another Estate version, and a reader must not refuse history over a rule added since.
 */
const jsonObject = z.custom<JsonObject>((v) => typeof v === 'object' && v !== null && !Array.isArray(v));
const level = z.enum(['major', 'minor', 'patch']);
const reason = z.object({ level, path: z.string(), rule: z.string(), detail: z.string() });
/** 'initial' for a name's first version (no baseline). */
const levelOrInitial = z.enum(['major', 'minor', 'patch', 'initial']);
const access = z.object({ requiredScopes: z.array(z.string()), tenants: z.array(z.string()), classification: z.enum(CLASSIFICATIONS) });

const definitionSchema = z.object({
  name: z.string(),
  version: z.string(),
  title: z.string().optional(),
  description: z.string(),
  inputSchema: jsonObject,
  outputSchema: jsonObject.optional(),
  annotations: jsonObject.optional(),
  access,
  sideEffect: z.enum(SIDE_EFFECTS),
  handler: z.string(),
  timeoutMs: z.number(),
}) satisfies z.ZodType<ToolDefinition>;

const lifecycle = z.object({ name: z.string(), version: z.string(), reason: z.string(), by: z.string(), at: z.string() });

// ───────────────────────────── the catalogue (tool-<name>) ─────────────────────────────

const toolVersionPublished = z.object({
  definition: definitionSchema,
  /** sha256 hex of the RFC 8785 canonical JSON of inputSchema. */
  schemaHash: z.string(),
  /** sha256 hex of the RFC 8785 canonical JSON of the whole definition. */
  definitionHash: z.string(),
  level: levelOrInitial,
  reasons: z.array(reason),
  /** The version it was classified against, if any. */
  baseline: z.string().optional(),
  by: z.string(),
  at: z.string(),
});

// ───────────────────────────── call records (run-<runId>) ─────────────────────────────

export const CALL_OUTCOMES = ['ok', 'tool_error', 'output_invalid', 'timeout', 'cancelled', 'upstream_error', 'upstream_unavailable'] as const;
export type CallOutcome = (typeof CALL_OUTCOMES)[number];

const toolCalled = z.object({
  runId: z.string(),
  subject: z.string(),
  tenant: z.string(),
  client: z.object({ name: z.string(), version: z.string() }).nullable(),
  protocolVersion: z.string(),
  tool: z.string(),
  version: z.string(),
  schemaHash: z.string(),
  /** sha256 hex of the canonical JSON of the arguments as received. */
  argsHash: z.string(),
  repaired: z.boolean(),
  repairs: z.array(z.object({ path: z.string(), action: z.enum(['dropped', 'coerced', 'defaulted']) })),
  outcome: z.enum(CALL_OUTCOMES),
  attempts: z.number(),
  durationMs: z.number(),
  at: z.string(),
  /** Pairs the record with its `ToolCallStarted` intent (absent on records written before intents existed). */
  callId: z.string().optional(),
});

/**
 * The durable intent of a non_idempotent call (SPEC §4 "No side effect without a trace"): committed to the run's stream
 * BEFORE the handler runs. A started call with no `ToolCalled` of the same `callId` ran (or may have run) without an
 * outcome on record; `estate calls` shows it as `started`.
 */
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

// ───────────────────────────── upstreams (SPEC §7, upstream-<ns>) ─────────────────────────────

export const upstreamStream = (ns: string): string => `upstream-${ns}`;
export const UPSTREAM_STREAM_PREFIX = 'upstream-';

/**
 * Where an upstream lives. Secrets are never here: `env`, `headers` and `query` map a name to the NAME of an environment
 * variable of the serving process (`--env TOKEN=env:GITHUB_TOKEN` is stored as `{TOKEN: 'GITHUB_TOKEN'}`). `query`:
 * parameters added to the URL's query when connecting, for an upstream that takes its key only there (absent when
 * none; a process older than it reads the target without them).
 */
const envNames = z.record(z.string(), z.string());
const upstreamTarget = z.discriminatedUnion('transport', [
  z.object({ transport: z.literal('stdio'), command: z.string(), args: z.array(z.string()), cwd: z.string().optional(), env: envNames }),
  z.object({ transport: z.literal('http'), url: z.string(), headers: envNames, query: envNames.optional() }),
]);
export type UpstreamTarget = z.infer<typeof upstreamTarget>;

const autoApprove = z.enum(['none', 'schema-minor']);
export type AutoApprove = z.infer<typeof autoApprove>;

/** A candidate definition mapped from an upstream tool: everything but the version, which approval decides. */
const upstreamCandidate = definitionSchema.omit({ version: true });
export type UpstreamCandidate = z.infer<typeof upstreamCandidate>;

const upstreamRegistered = z.object({ ns: z.string(), target: upstreamTarget, access, autoApprove, by: z.string(), at: z.string() });
const upstreamDriftDetected = z.object({
  ns: z.string(),
  /** The catalogue name `<ns>.<t'>`. */
  tool: z.string(),
  upstreamTool: z.string(),
  level: levelOrInitial,
  reasons: z.array(reason),
  candidate: upstreamCandidate,
  /** sha256 hex of the canonical JSON of `candidate`: the identity "once per distinct candidate" keys on. */
  candidateHash: z.string(),
  /** The pinned version it was compared with, if any. */
  pinned: z.string().optional(),
  at: z.string(),
});
const upstreamToolVanished = z.object({ ns: z.string(), tool: z.string(), upstreamTool: z.string(), pinned: z.string().optional(), at: z.string() });
const upstreamDriftRejected = z.object({ ns: z.string(), tool: z.string(), candidateHash: z.string(), reason: z.string(), by: z.string(), at: z.string() });
const upstreamRemoved = z.object({ ns: z.string(), reason: z.string(), retired: z.array(z.string()), by: z.string(), at: z.string() });

// ───────────────────────────── the table every reader decodes with ─────────────────────────────

/** The payload schema of every event type, by type: the only declaration of what an event holds. */
export const EVENT_DATA = {
  ToolVersionPublished: toolVersionPublished,
  ToolVersionDeprecated: lifecycle,
  ToolVersionRetired: lifecycle,
  ToolCalled: toolCalled,
  ToolCallStarted: toolCallStarted,
  UpstreamRegistered: upstreamRegistered,
  UpstreamDriftDetected: upstreamDriftDetected,
  UpstreamToolVanished: upstreamToolVanished,
  UpstreamDriftRejected: upstreamDriftRejected,
  UpstreamRemoved: upstreamRemoved,
} as const;

export type EventType = keyof typeof EVENT_DATA;
/** The event of one type: `{type, data}` with the payload its schema yields. */
export type EventOf<K extends EventType> = K extends EventType ? { type: K; data: z.infer<(typeof EVENT_DATA)[K]> } : never;

export const CATALOGUE_EVENT_TYPES = ['ToolVersionPublished', 'ToolVersionDeprecated', 'ToolVersionRetired'] as const satisfies readonly EventType[];
export const UPSTREAM_EVENT_TYPES = [
  'UpstreamRegistered',
  'UpstreamDriftDetected',
  'UpstreamToolVanished',
  'UpstreamDriftRejected',
  'UpstreamRemoved',
] as const satisfies readonly EventType[];

export type ToolVersionPublished = EventOf<'ToolVersionPublished'>;
export type ToolVersionDeprecated = EventOf<'ToolVersionDeprecated'>;
export type ToolVersionRetired = EventOf<'ToolVersionRetired'>;
export type CatalogueEvent = EventOf<(typeof CATALOGUE_EVENT_TYPES)[number]>;
export type ToolCalled = EventOf<'ToolCalled'>;
export type ToolCallStarted = EventOf<'ToolCallStarted'>;
export type UpstreamRegistered = EventOf<'UpstreamRegistered'>;
export type UpstreamDriftDetected = EventOf<'UpstreamDriftDetected'>;
export type UpstreamToolVanished = EventOf<'UpstreamToolVanished'>;
export type UpstreamDriftRejected = EventOf<'UpstreamDriftRejected'>;
export type UpstreamRemoved = EventOf<'UpstreamRemoved'>;
export type UpstreamEvent = EventOf<(typeof UPSTREAM_EVENT_TYPES)[number]>;
export type EstateEvent = EventOf<EventType>;

export const isEventType = (type: string): type is EventType => Object.hasOwn(EVENT_DATA, type);

// ───────────────────────────── the change topic's message (SPEC §4) ─────────────────────────────

/**
 * One catalogue change as carried on the bus: `{"type":"catalogue.changed","position","tool","version","event","at"}`.
 * Read back with this schema wherever it arrives (the topic is shared with other producers and Estate versions).
 * Every field is bounded: a consumer keeps the changes it has seen (10,000 of them, to deduplicate), and a megabyte
 * position in each of those would be 10 GB. Estate's own fields are far shorter: a store's position (a number, or
 * two), a tool name (at most 128 characters), a strict semver version, an ISO time.
 */
/**
 * What a change message's text fields may hold beyond their lengths: a store's position and a time are printable ASCII
 * (a number, `xid:seq`, an ISO time), a tool a tool's name, a version strict semver. The topic is anyone's who can write
 * to it, and what a message says reaches logs and `estate watch`'s output: escape sequences, bidirectional overrides or
 * tag characters have no business there.
 */
const PRINTABLE = /^[\x21-\x7e]+$/;

export const catalogueChangeSchema = z.object({
  type: z.literal('catalogue.changed'),
  position: z.string().min(1).max(256).regex(PRINTABLE, 'not a store position (printable ASCII, no spaces)'),
  tool: z.string().min(1).max(128).regex(NAME_PATTERN, 'not a tool name'),
  version: z.string().min(1).max(64).refine(isStrictSemver, 'not a strict semver version'),
  event: z.enum(CATALOGUE_EVENT_TYPES),
  at: z.string().min(1).max(64).regex(PRINTABLE, 'not a time (printable ASCII, no spaces)'),
});
export type CatalogueChange = z.infer<typeof catalogueChangeSchema>;

/** The change a catalogue event at `position` announces: derived from the decoded event, never decoded again. */
export const changeOfEvent = (position: string, event: CatalogueEvent): CatalogueChange => {
  const { name, version } = event.type === 'ToolVersionPublished' ? event.data.definition : event.data;
  return { type: 'catalogue.changed', position, tool: name, version, event: event.type, at: event.data.at };
};
