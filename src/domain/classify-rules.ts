/**
 * The rule table of the change classifier (SPEC §2 "Change classification"): every rule's level when the tool READS
 * the schema (inputSchema) and when the caller reads it (outputSchema). Keeping both columns in one table makes the
 * direction flip auditable in one place instead of scattered `direction === 'output' ?` checks.
 */
import type { Level, Reason } from './types.ts';

export type Direction = 'input' | 'output';

/** [input level, output level]. A tightening of what is accepted is MAJOR for a reader of arguments and MINOR for a reader of results. */
const RULES = {
  // properties and required
  'property-removed': ['major', 'major'],
  'property-removed-covered': ['minor', 'major'],
  'forbidden-property-removed': ['minor', 'major'],
  'property-added': ['minor', 'minor'],
  'required-added': ['major', 'minor'],
  'required-removed': ['minor', 'major'],
  // types, enum, const
  'type-narrowed': ['major', 'minor'],
  'type-widened': ['minor', 'major'],
  'type-changed': ['major', 'major'],
  'enum-added': ['major', 'minor'],
  'enum-removed': ['minor', 'major'],
  'enum-value-removed': ['major', 'minor'],
  'enum-value-added': ['minor', 'major'],
  'const-added': ['major', 'minor'],
  'const-changed': ['major', 'major'],
  'const-removed': ['minor', 'major'],
  // bounds and string/number/array assertions
  'lower-bound-tightened': ['major', 'minor'],
  'upper-bound-tightened': ['major', 'minor'],
  'bound-loosened': ['minor', 'major'],
  'pattern-added': ['major', 'minor'],
  'pattern-changed': ['major', 'major'],
  'pattern-removed': ['minor', 'major'],
  'format-added': ['major', 'minor'],
  'format-changed': ['major', 'major'],
  'format-removed': ['minor', 'major'],
  'multiple-of-added': ['major', 'minor'],
  'multiple-of-tightened': ['major', 'minor'],
  'multiple-of-loosened': ['minor', 'major'],
  'multiple-of-changed': ['major', 'major'],
  'multiple-of-removed': ['minor', 'major'],
  'unique-items-added': ['major', 'minor'],
  'unique-items-removed': ['minor', 'major'],
  // open/closed content
  'additional-properties-closed': ['major', 'minor'],
  'additional-properties-narrowed': ['major', 'minor'],
  // Opening cannot break a caller who sends arguments (PATCH, the deep dive's one-directional rule); a caller reading
  // results may now receive properties it never saw, which is the loosening the output direction calls MAJOR.
  'additional-properties-opened': ['patch', 'major'],
  'pattern-property-added': ['major', 'minor'],
  'pattern-property-added-to-closed': ['minor', 'major'],
  'pattern-property-removed': ['minor', 'major'],
  'pattern-property-removed-from-closed': ['major', 'minor'],
  'dependent-required-added': ['major', 'minor'],
  'dependent-required-removed': ['minor', 'major'],
  'dependent-schema-added': ['major', 'minor'],
  'dependent-schema-removed': ['minor', 'major'],
  // combinators
  'one-of-branch-removed': ['major', 'minor'],
  'one-of-branch-added': ['minor', 'major'],
  'one-of-branch-changed': ['major', 'major'],
  'any-of-branch-removed': ['major', 'minor'],
  'any-of-branch-added': ['minor', 'major'],
  'any-of-branch-changed': ['major', 'major'],
  'all-of-branch-added': ['major', 'minor'],
  'all-of-branch-removed': ['minor', 'major'],
  'all-of-branch-changed': ['major', 'major'],
  'combinator-loosened': ['minor', 'major'],
  'combinator-tightened': ['major', 'minor'],
  'not-changed': ['major', 'major'],
  // defaults and annotations
  'default-added': ['minor', 'minor'],
  'default-changed': ['minor', 'minor'],
  'default-removed': ['minor', 'minor'],
  'annotation-changed': ['patch', 'patch'],
  'id-changed': ['patch', 'patch'],
  // fail closed
  'unmodelled-change': ['major', 'major'],
} as const satisfies Record<string, readonly [Level, Level]>;

export type SchemaRule = keyof typeof RULES;

export const ruleLevel = (rule: SchemaRule, direction: Direction): Level => RULES[rule][direction === 'input' ? 0 : 1];

export const schemaReason = (rule: SchemaRule, direction: Direction, path: string, detail: string): Reason => ({
  level: ruleLevel(rule, direction),
  path,
  rule,
  detail,
});

/** Plain code-unit order (SPEC §2): never localeCompare, whose order depends on the ICU build. */
const cmp = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

export const compareReasons = (a: Reason, b: Reason): number =>
  cmp(a.path, b.path) || cmp(a.rule, b.rule) || cmp(a.detail, b.detail) || cmp(a.level, b.level);

/** Path segments follow the validation paths of SPEC §2: `.name` for identifiers, `["key"]` otherwise, `[i]` for indices. */
export const keyPath = (base: string, key: string): string =>
  /^[A-Za-z_][A-Za-z0-9_]*$/.test(key) ? `${base}.${key}` : `${base}[${JSON.stringify(key)}]`;

export const indexPath = (base: string, i: number): string => `${base}[${i}]`;
