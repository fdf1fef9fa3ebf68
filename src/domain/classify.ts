/**
 * The change classifier (SPEC §2 "Change classification"): the level of a new version against its baseline is the
 * highest level of any reason, and every reason is listed. All MAJOR and MINOR conditions are always evaluated, never
 * short-circuited: adding an optional field and narrowing an enum in one edit must report both, and be MAJOR.
 */
import { classificationRank } from './access.ts';
import { canonicalJson } from './hash.ts';
import { compareReasons, type Direction } from './classify-rules.ts';
import { compareSchemas } from './classify-schema.ts';
import { LEVEL_RANK, type Classified, type JsonObject, type Level, type Reason, type ToolDefinition } from './types.ts';

const sortUnique = (reasons: Reason[]): Reason[] => {
  const seen = new Set<string>();
  const out: Reason[] = [];
  for (const r of [...reasons].sort(compareReasons)) {
    const key = `${r.path}\u0000${r.rule}\u0000${r.detail}\u0000${r.level}`;
    if (!seen.has(key)) {
      seen.add(key);
      out.push(r);
    }
  }
  return out;
};

/** Reasons for a schema change. direction 'input': the tool reads the caller's arguments; 'output': the caller reads the result (opposite direction). basePath prefixes every reason path, e.g. 'inputSchema'. */
export function classifySchemaChange(before: JsonObject, after: JsonObject, direction: Direction, basePath: string): Reason[] {
  return sortUnique(compareSchemas(before, after, direction, basePath));
}

const levelOf = (reasons: readonly Reason[]): Level =>
  reasons.reduce<Level>((max, r) => (LEVEL_RANK[r.level] > LEVEL_RANK[max] ? r.level : max), 'patch');

const reason = (level: Level, path: string, rule: string, detail: string): Reason => ({ level, path, rule, detail });

const differs = (a: unknown, b: unknown): boolean =>
  a === undefined || b === undefined ? a !== b : canonicalJson(a) !== canonicalJson(b);

const show = (v: unknown): string => (v === undefined ? 'absent' : JSON.stringify(v));

const accessReasons = (before: ToolDefinition, after: ToolDefinition): Reason[] => {
  const out: Reason[] = [];
  // Empty means every tenant: going from [] to [a] takes the tool away from everyone but a.
  const bt = new Set(before.access.tenants);
  const at = new Set(after.access.tenants);
  const lost = bt.size === 0 ? (at.size > 0 ? ['every other tenant'] : []) : at.size === 0 ? [] : [...bt].filter((t) => !at.has(t)).sort();
  const gained = at.size === 0 ? (bt.size > 0 ? ['every tenant'] : []) : bt.size === 0 ? [] : [...at].filter((t) => !bt.has(t)).sort();
  if (lost.length > 0) out.push(reason('major', 'access.tenants', 'tenants-narrowed', `tenants ${show([...bt])} -> ${show([...at])}: lost ${lost.join(', ')}`));
  if (gained.length > 0) out.push(reason('minor', 'access.tenants', 'tenants-widened', `tenants ${show([...bt])} -> ${show([...at])}: gained ${gained.join(', ')}`));

  const bs = new Set(before.access.requiredScopes);
  const as = new Set(after.access.requiredScopes);
  const added = [...as].filter((s) => !bs.has(s)).sort();
  const removed = [...bs].filter((s) => !as.has(s)).sort();
  if (added.length > 0) out.push(reason('major', 'access.requiredScopes', 'scopes-added', `required scopes added: ${added.join(', ')}`));
  if (removed.length > 0) out.push(reason('minor', 'access.requiredScopes', 'scopes-removed', `required scopes removed: ${removed.join(', ')}`));

  // classificationRank raises on an unknown classification: it must never pass as a harmless change.
  const bc = classificationRank(before.access.classification);
  const ac = classificationRank(after.access.classification);
  const detail = `classification ${before.access.classification} -> ${after.access.classification}`;
  if (ac > bc) out.push(reason('major', 'access.classification', 'classification-raised', detail));
  if (ac < bc) out.push(reason('minor', 'access.classification', 'classification-lowered', detail));
  return out;
};

/** The whole definition: schemas, access, sideEffect, and the PATCH-level descriptive fields. `name` and `version` are the identity, not the change. */
export function classifyDefinition(before: ToolDefinition, after: ToolDefinition): Classified {
  const reasons: Reason[] = [...compareSchemas(before.inputSchema, after.inputSchema, 'input', 'inputSchema')];

  if (before.outputSchema && after.outputSchema) reasons.push(...compareSchemas(before.outputSchema, after.outputSchema, 'output', 'outputSchema'));
  else if (after.outputSchema) reasons.push(reason('minor', 'outputSchema', 'output-schema-added', 'outputSchema added: results now carry a checked structuredContent'));
  else if (before.outputSchema) reasons.push(reason('major', 'outputSchema', 'output-schema-removed', 'outputSchema removed: callers lose the guaranteed structuredContent shape'));

  if (before.sideEffect !== after.sideEffect) {
    reasons.push(reason('major', 'sideEffect', 'side-effect-changed', `sideEffect ${before.sideEffect} -> ${after.sideEffect}`));
  }
  reasons.push(...accessReasons(before, after));

  const patch: Array<[string, string, unknown, unknown]> = [
    ['title', 'title-changed', before.title, after.title],
    ['description', 'description-changed', before.description, after.description],
    ['annotations', 'annotations-changed', before.annotations, after.annotations],
    ['handler', 'handler-changed', before.handler, after.handler],
    ['timeoutMs', 'timeout-changed', before.timeoutMs, after.timeoutMs],
  ];
  for (const [path, rule, b, a] of patch) if (differs(b, a)) reasons.push(reason('patch', path, rule, `${path}: ${show(b)} -> ${show(a)}`));

  const sorted = sortUnique(reasons);
  return { level: levelOf(sorted), reasons: sorted };
}
