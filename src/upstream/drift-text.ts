/** The upstream registry's (registry.ts) words about a target and a drift: how a target is shown, the next pinned
 * version for a drift level, and the text diff a reviewer reads. */
import { createTwoFilesPatch } from 'diff';
import { DomainError } from '#domain/errors';
import type { UpstreamCandidate, UpstreamTarget } from '#domain/events';
import { canonicalJson } from '#domain/hash';
import { parseVersion } from '#domain/semver';
import type { ToolDefinition } from '#domain/types';
import type { DriftData } from '#projections/upstreams';

/** The stored target in words; a `--query` parameter shows the variable it is read from, never a value. */
export const describeTarget = (t: UpstreamTarget): string =>
  t.transport === 'http'
    ? `${t.url}${Object.entries(t.query ?? {}).map(([name, variable], i) => `${i === 0 && !t.url.includes('?') ? '?' : '&'}${name}=env:${variable}`).join('')}`
    : [t.command, ...t.args].map((a) => (/^[\w@%+=:,./-]+$/.test(a) ? a : JSON.stringify(a))).join(' ');

/**
 * JSON Schema's annotation keywords (the meta-data and content vocabularies, and `$comment`): text a model may read, not
 * a rule.
 */
const SCHEMA_TEXT = new Set(['title', 'description', 'default', 'examples', 'deprecated', 'readOnly', 'writeOnly', '$comment', 'contentMediaType', 'contentEncoding']);
/** Keywords whose value is a map of subschemas by name (the names are not keywords: a property may be `description`). */
const SCHEMA_MAPS = new Set(['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas']);
/** Keywords whose value is a subschema, or an array of them. */
const SCHEMA_VALUES = new Set([
  'items', 'prefixItems', 'additionalProperties', 'unevaluatedProperties', 'unevaluatedItems', 'contains', 'propertyNames',
  'not', 'if', 'then', 'else', 'allOf', 'anyOf', 'oneOf', 'contentSchema',
]);

/**
 * The text inside a schema, one line per annotation keyword at its JSON pointer (`/properties/x/description: "..."`),
 * in document order. A model reads a property's description as much as the tool's: an upstream that rewrites one is
 * changing text, which the classifier calls a patch (`annotation-changed`) and auto-approval must never publish.
 */
const schemaText = (schema: unknown, at = ''): string[] => {
  if (typeof schema !== 'object' || schema === null) return [];
  if (Array.isArray(schema)) return schema.flatMap((s, i) => schemaText(s, `${at}/${i}`));
  const out: string[] = [];
  for (const [key, value] of Object.entries(schema)) {
    const path = `${at}/${key.replaceAll('~', '~0').replaceAll('/', '~1')}`;
    if (SCHEMA_TEXT.has(key)) out.push(`${path}: ${canonicalJson(value)}`);
    else if (SCHEMA_VALUES.has(key)) out.push(...schemaText(value, path));
    else if (SCHEMA_MAPS.has(key) && typeof value === 'object' && value !== null && !Array.isArray(value)) {
      for (const [name, sub] of Object.entries(value)) out.push(...schemaText(sub, `${path}/${name.replaceAll('~', '~0').replaceAll('/', '~1')}`));
    }
  }
  return out;
};

const schemasText = (d: { inputSchema: unknown; outputSchema?: unknown }): string[] => [
  ...schemaText(d.inputSchema).map((l) => `inputSchema${l}`),
  ...(d.outputSchema === undefined ? [] : schemaText(d.outputSchema).map((l) => `outputSchema${l}`)),
];

/**
 * schema-minor's test (SPEC §7: "text is never auto-approved"): title, description and annotations byte-identical to
 * the pinned version's, and so is every piece of text inside its input and output schemas.
 */
export const sameText = (pinned: ToolDefinition, c: UpstreamCandidate): boolean =>
  pinned.title === c.title &&
  pinned.description === c.description &&
  canonicalJson(pinned.annotations ?? null) === canonicalJson(c.annotations ?? null) &&
  schemasText(pinned).join('\n') === schemasText(c).join('\n');

export const nextVersion = (pinned: string | undefined, level: DriftData['level']): string => {
  const p = pinned ? parseVersion(pinned) : null;
  if (!p || level === 'initial') return '1.0.0';
  if (level === 'major') return `${p.major + 1}.0.0`;
  if (level === 'minor') return `${p.major}.${p.minor + 1}.0`;
  return `${p.major}.${p.minor}.${p.patch + 1}`;
};

const textOf = (d: { title?: string | undefined; description: string; annotations?: unknown; inputSchema: unknown; outputSchema?: unknown }): string =>
  [`title: ${d.title ?? ''}`, 'description:', d.description, `annotations: ${d.annotations === undefined ? '' : canonicalJson(d.annotations)}`, ...schemasText(d)].join('\n') + '\n';

/**
 * A unified line diff of the text a model reads (title, description, annotations, and the text inside the schemas, a
 * line per annotation keyword); undefined when it did not change. A tool never approved is diffed against no text: its
 * whole text is shown, the first approval being the one a poisoned upstream most wants waved through.
 */
export const textDiff = (pinned: ToolDefinition | undefined, c: UpstreamCandidate): string | undefined => {
  const a = pinned ? textOf(pinned) : '';
  const b = textOf(c);
  if (a === b) return undefined;
  const patch = createTwoFilesPatch(pinned ? `${pinned.name}@${pinned.version}` : `${c.name} (never approved)`, `${c.name} (upstream)`, a, b, undefined, undefined, { context: 2 });
  // Drop the "Index"/separator preamble: keep from the first ---.
  return patch.slice(patch.indexOf('---'));
};

/**
 * A reviewer decides on the candidate they were shown: if the upstream changed it again since (a second drift), the
 * decision is refused rather than applied to text nobody read.
 */
export const stillTheCandidate = (tool: string, pending: string, shown: string | undefined): void => {
  if (shown !== undefined && shown !== pending) {
    throw new DomainError('conflict', 'drift-changed', `the pending candidate for ${tool} changed since it was shown (now ${pending.slice(0, 12)}): review the new one`);
  }
};
