/**
 * Mapping an upstream tool to a candidate definition (SPEC §7): name `<ns>.<t'>`, the upstream's own title,
 * description, schemas and annotations, `handler: upstream:<ns>/<t>`, access from the upstream's defaults (or the
 * pinned version's, which an approver may have changed), sideEffect from the annotations. A candidate the definition
 * rules of SPEC §1 refuse is reported with its reason and never offered.
 */
import { DomainError } from '#domain/errors';
import type { UpstreamCandidate } from '#domain/events';
import { canonicalHash } from '#domain/hash';
import { DEFAULT_TIMEOUT_MS, MAX_DEFINITION_BYTES } from '#domain/tool-definition';
import type { JsonObject, SideEffect, ToolAccess, ToolDefinition } from '#domain/types';

/**
 * Most tools one upstream may list. Each becomes a candidate that is checked, classified and recorded, and each
 * change of one a drift event: an upstream listing 100,000 tools took a sync 38 s and wrote 100,000 events (61 MB) at
 * once (probed), and could write as many again on each sync by changing them. Real servers list tens. Past it the
 * listing is not read further and nothing of it is recorded.
 */
export const MAX_UPSTREAM_TOOLS = 1000;

export const tooManyTools = (ns: string, listed: number): DomainError =>
  new DomainError('invalid-definition', 'too-many-tools', `upstream ${ns} lists ${listed} tools or more, past the ${MAX_UPSTREAM_TOOLS} a sync takes: nothing of its listing is recorded`);

/**
 * One page of an upstream's tools/list, read leniently: only the envelope is checked here (`tools` an array,
 * `nextCursor` a string or absent). Each tool is left as the upstream gave it and judged on its own by the mapping
 * below, so one malformed tool is refused with its reasons and the others are still compared with their pinned
 * versions. Read strictly (the SDK's schema), one tool without an inputSchema failed the whole listing, and with it
 * the detection of every other tool's change: an upstream could hide a rug pull behind one broken tool.
 */
export interface ListingPage {
  tools: UpstreamTool[];
  nextCursor?: string;
}

/** Entries of a listing that were not JSON objects, kept as an empty object (the registry reads `name` off each) and what they were. */
const notObjects = new WeakMap<object, string>();

const kindOf = (v: unknown): string => (v === null ? 'null' : Array.isArray(v) ? 'an array' : typeof v === 'object' ? 'an object' : `a ${typeof v}`);

/** One page's result → the page, or why it is not one (the envelope only; a bad tool is its candidate's refusal). */
export const listingPageOf = (result: unknown): ListingPage | string => {
  if (typeof result !== 'object' || result === null || Array.isArray(result)) return `the result is ${kindOf(result)}, not an object`;
  const { tools, nextCursor } = result as { tools?: unknown; nextCursor?: unknown };
  if (!Array.isArray(tools)) return `tools: expected an array, got ${tools === undefined ? 'nothing' : kindOf(tools)}`;
  if (nextCursor !== undefined && typeof nextCursor !== 'string') return `nextCursor: expected a string or nothing, got ${kindOf(nextCursor)}`;
  const entries = tools.map((t: unknown): UpstreamTool => {
    if (typeof t === 'object' && t !== null && !Array.isArray(t)) return t as UpstreamTool;
    const kept = {} as UpstreamTool;
    notObjects.set(kept, kindOf(t));
    return kept;
  });
  return { tools: entries, ...(nextCursor !== undefined ? { nextCursor } : {}) };
};

/** What an upstream's tools/list gives for one tool (the fields Estate reads; any of them may be missing or wrong). */
export interface UpstreamTool {
  name: string;
  title?: string;
  description?: string;
  inputSchema: Record<string, unknown>;
  outputSchema?: Record<string, unknown>;
  annotations?: Record<string, unknown>;
  [key: string]: unknown;
}

export const NS_PATTERN = /^[a-z][a-z0-9_-]*$/;

/** `t` lower-cased, every character outside [a-z0-9_-] replaced by `_`. */
export const mapToolName = (ns: string, upstreamTool: string): string => `${ns}.${upstreamTool.toLowerCase().replace(/[^a-z0-9_-]/g, '_')}`;

export const upstreamHandler = (ns: string, upstreamTool: string): string => `upstream:${ns}/${upstreamTool}`;

/** `upstream:<ns>/<t>` → {ns, tool}; null for any other handler name. */
export const parseUpstreamHandler = (handler: string): { ns: string; tool: string } | null => {
  if (!handler.startsWith('upstream:')) return null;
  const rest = handler.slice('upstream:'.length);
  const slash = rest.indexOf('/');
  if (slash <= 0 || slash === rest.length - 1) return null;
  return { ns: rest.slice(0, slash), tool: rest.slice(slash + 1) };
};

/** readOnlyHint → none, else idempotentHint → idempotent, else non_idempotent. */
export const sideEffectOf = (annotations: Record<string, unknown> | undefined): SideEffect =>
  annotations?.readOnlyHint === true ? 'none' : annotations?.idempotentHint === true ? 'idempotent' : 'non_idempotent';

/**
 * The content that identifies a candidate: everything the upstream decides. `access` and `timeoutMs` are Estate's
 * decisions (defaults at add time, or the approver's), so they never make a drift of their own.
 */
export const contentHash = (def: UpstreamCandidate | ToolDefinition): string => {
  const { access: _a, timeoutMs: _t, ...rest } = def as ToolDefinition;
  const { version: _v, ...content } = rest;
  return canonicalHash(content);
};

export interface CandidateRefusal {
  upstreamTool: string;
  tool: string;
  code: string;
  message: string;
}

export type MappedTool = { ok: true; upstreamTool: string; candidate: UpstreamCandidate } | { ok: false; refusal: CandidateRefusal };

/**
 * MCP defines `idempotentHint` and `destructiveHint` as meaningful only when `readOnlyHint` is false, and a
 * `destructiveHint: false` asserts nothing a none/idempotent side-effect class does not already say. Servers built on
 * the SDKs send them anyway (server-everything marks every read-only tool `destructiveHint: false`); kept as given,
 * SPEC §1's annotation rule would refuse every such tool. Only hints that carry no meaning are dropped; a real
 * contradiction (`destructiveHint: true` on an idempotent tool) is kept and refused.
 */
export const meaningfulAnnotations = (a: JsonObject | undefined): JsonObject | undefined => {
  if (!a) return a;
  const out: JsonObject = { ...a };
  if (out.readOnlyHint === true) {
    delete out.idempotentHint;
    if (out.destructiveHint === false) delete out.destructiveHint;
  } else if (out.idempotentHint === true && out.destructiveHint === false) delete out.destructiveHint;
  return out;
};

const DRAFT_07 = /^https?:\/\/json-schema\.org\/draft-0[67]\/schema#?$/;
/** Keywords whose meaning differs between draft-07 and 2020-12: a schema using them cannot simply be re-read. */
const DRAFT_SPECIFIC = ['additionalItems', 'dependencies', '$recursiveRef', '$recursiveAnchor'];

/**
 * Servers built on the v1 SDKs declare draft-07 (`$schema: .../draft-07/schema#`). Estate's contracts are 2020-12.
 * A draft-07 schema that uses no keyword whose meaning changed between the drafts (array-form `items`,
 * `additionalItems`, `dependencies`) means the same under 2020-12 once `definitions` is spelled `$defs`: that one is
 * re-read (and the upstream's text kept byte for byte elsewhere). Any other draft-07 schema is left as it is and
 * refused by the definition rules, with their reason. Deterministic, so the same upstream schema maps to the same
 * candidate on every sync.
 */
export const asDraft2020 = (schema: Record<string, unknown>): Record<string, unknown> => {
  if (typeof schema.$schema !== 'string' || !DRAFT_07.test(schema.$schema)) return schema;
  let portable = true;
  const rewrite = (v: unknown, key?: string): unknown => {
    if (Array.isArray(v)) return v.map((x) => rewrite(x));
    if (typeof v !== 'object' || v === null) return key === '$ref' && typeof v === 'string' ? v.replace(/^#\/definitions\//, '#/$defs/') : v;
    const o = v as Record<string, unknown>;
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(o)) {
      if (DRAFT_SPECIFIC.includes(k) || (k === 'items' && Array.isArray(x))) portable = false;
      // Inside `properties` (and `$defs`) the keys are names, not keywords.
      if (k === 'properties' || k === 'patternProperties' || k === 'definitions' || k === '$defs') {
        const named: Record<string, unknown> = {};
        for (const [n, sub] of Object.entries((x ?? {}) as Record<string, unknown>)) named[n] = rewrite(sub);
        out[k === 'definitions' ? '$defs' : k] = named;
      } else out[k] = rewrite(x, k);
    }
    return out;
  };
  const { $schema: _s, ...rest } = schema;
  const converted = rewrite(rest) as Record<string, unknown>;
  return portable ? converted : schema;
};

const asObject = (v: unknown): JsonObject | undefined => (typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as JsonObject) : undefined);

/**
 * SPEC §1's validation of one definition: in a serving process, the definition checker's worker under the schema budget
 * (an upstream's schemas are as hostile as a publisher's).
 */
export type CheckDefinition = (raw: unknown) => Promise<ToolDefinition>;

/**
 * Map every listed tool. `pinnedOf(name)` gives the pinned definition, whose access and timeout the candidate keeps.
 * Two upstream tools mapping to one name are both refused (neither could be told apart from the other by a client).
 */
export const mapCandidates = async (
  ns: string,
  tools: readonly UpstreamTool[],
  defaults: ToolAccess,
  check: CheckDefinition,
  pinnedOf: (name: string) => ToolDefinition | undefined,
): Promise<MappedTool[]> => {
  const byName = new Map<string, UpstreamTool[]>();
  const out: MappedTool[] = [];
  tools.forEach((t, i) => {
    if (typeof t.name === 'string' && t.name.length > 0) {
      const name = mapToolName(ns, t.name);
      byName.set(name, [...(byName.get(name) ?? []), t]);
      return;
    }
    // No name to map (nor to collide with another's): refused on its own, named by its place in the listing.
    const at = `#${i + 1}`;
    const what = notObjects.get(t);
    const message =
      what !== undefined
        ? `the listing's entry ${at} is ${what}, not a tool`
        : t.name === undefined
          ? `the listing's entry ${at} has no name`
          : `the listing's entry ${at} has a name that is ${t.name === '' ? 'empty' : `${kindOf(t.name)}, not a string`}`;
    out.push({ ok: false, refusal: { upstreamTool: at, tool: `${ns}.${at}`, code: 'invalid-name', message } });
  });
  for (const [name, group] of [...byName.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    if (group.length > 1) {
      const names = group.map((t) => `'${String(t.name)}'`).join(', ');
      for (const t of group) {
        out.push({ ok: false, refusal: { upstreamTool: String(t.name), tool: name, code: 'name-collision', message: `upstream tools ${names} all map to ${name}; both are refused` } });
      }
      continue;
    }
    const t = group[0] as UpstreamTool & { name: string };
    out.push(await mapOne(ns, name, t, defaults, check, pinnedOf(name)));
  }
  return out;
};

/** One tool with a name (mapCandidates refused the others). */
const mapOne = async (ns: string, name: string, t: UpstreamTool & { name: string }, defaults: ToolAccess, check: CheckDefinition, pinned: ToolDefinition | undefined): Promise<MappedTool> => {
  const upstreamTool = t.name;
  const annotations = meaningfulAnnotations(asObject(t.annotations));
  const raw: Record<string, unknown> = {
    name,
    version: '1.0.0',
    ...(t.title !== undefined ? { title: t.title } : {}),
    description: t.description ?? '',
    inputSchema: asObject(t.inputSchema) ? asDraft2020(t.inputSchema) : t.inputSchema,
    ...(t.outputSchema !== undefined ? { outputSchema: asObject(t.outputSchema) ? asDraft2020(t.outputSchema) : t.outputSchema } : {}),
    // Annotations that are not an object are given to the definition rules as they are, to be refused with the reason.
    ...(annotations !== undefined ? { annotations } : t.annotations !== undefined ? { annotations: t.annotations } : {}),
    access: pinned?.access ?? defaults,
    sideEffect: sideEffectOf(annotations),
    handler: upstreamHandler(ns, t.name),
    timeoutMs: pinned?.timeoutMs ?? DEFAULT_TIMEOUT_MS,
  };
  // A definition is at most 1 MiB, whoever writes it (a file, the publishing API): an upstream's 4 MiB description was
  // recorded in a drift event at every change and published. Measured as the JSON the store would keep.
  let bytes: number;
  try {
    bytes = Buffer.byteLength(JSON.stringify(raw));
  } catch {
    // Nested past what the stack holds (the definition rules allow 128 levels): refused as the rules would refuse it.
    return { ok: false, refusal: { upstreamTool, tool: name, code: 'schema-invalid', message: `upstream tool '${upstreamTool.slice(0, 200)}': its definition is nested too deeply to be read` } };
  }
  if (bytes > MAX_DEFINITION_BYTES) {
    return { ok: false, refusal: { upstreamTool, tool: name, code: 'too-large', message: `upstream tool '${upstreamTool.slice(0, 200)}': its definition is ${bytes} bytes, larger than ${MAX_DEFINITION_BYTES} (a definition is at most 1 MiB)` } };
  }
  try {
    const def = await check(raw);
    const { version: _v, ...candidate } = def;
    return { ok: true, upstreamTool, candidate };
  } catch (e) {
    if (e instanceof DomainError) return { ok: false, refusal: { upstreamTool, tool: name, code: e.code, message: e.message } };
    throw e;
  }
};
