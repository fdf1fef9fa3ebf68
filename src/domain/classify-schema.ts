/**
 * The schema half of the change classifier (SPEC §2 "Change classification"). `compareSchemas` walks a baseline and a
 * new schema side by side and says, keyword by keyword, how the set of accepted values moved. Levels come from the
 * rule table in classify-rules.ts, which owns the input/output flip.
 *
 * The comparison is structural, not a full subschema-inclusion decision (that is undecidable in general for JSON
 * Schema); where the structure does not tell, it fails closed with `unmodelled-change`.
 */
import { canonicalJson } from './hash.ts';
import { indexSchemaResources } from './schema-resources.ts';
import { type Direction, schemaReason } from './classify-rules.ts';
import { type CompareCtx, SchemaStep, isObj, omit, same, show } from './classify-step.ts';
import { deref } from './classify-ref.ts';
import { COMBINATORS, collapseSingleBranches, disjunctionOf, lift } from './classify-shape.ts';
import { ANNOTATIONS, LOWER_BOUNDS, UPPER_BOUNDS, addedChangedRemoved, annotations, bounds, enumeration, multipleOf, types, uniqueItems } from './classify-scalars.ts';
import { additionalProperties, dependencies, patternProperties, properties } from './classify-objects.ts';
import { arrays, contains } from './classify-arrays.ts';
import { conjunction, disjunction } from './classify-combinators.ts';
import type { JsonObject, JsonValue, Reason } from './types.ts';

/** Recursive schemas are cut by `active`; this only bounds pathological nesting, failing closed. */
const MAX_DEPTH = 200;
/** Schema-pair comparisons one classification may make before it stops and fails closed (a publish must not hang). */
const MAX_COMPARISONS = 200_000;

/** Keywords compared by a dedicated rule below; any other keyword that differs is `unmodelled-change`. */
const MODELLED = new Set<string>([
  'type', 'enum', 'const', ...LOWER_BOUNDS, ...UPPER_BOUNDS, 'pattern', 'format', 'multipleOf', 'uniqueItems',
  'properties', 'required', 'additionalProperties', 'patternProperties', 'items', 'prefixItems', 'contains',
  'dependentRequired', 'dependentSchemas', ...COMBINATORS, 'not', 'default', ...ANNOTATIONS, '$id',
  // Containers of `$ref` targets: compared where they are referenced, never as text.
  '$defs', 'definitions',
]);

/** Any keyword no family compares: a difference there fails closed. */
const rest = (w: SchemaStep): void => {
  const keys = [...new Set([...Object.keys(w.b), ...Object.keys(w.a)])].sort();
  for (const k of keys) if (!MODELLED.has(k) && !same(w.b[k], w.a[k])) w.unmodelled(k);
};

const compareObjects = (b0: JsonObject, a0: JsonObject, path: string, ctx: CompareCtx): Reason[] => {
  let b = collapseSingleBranches(b0);
  let a = collapseSingleBranches(a0);
  const out: Reason[] = [];

  const bd = disjunctionOf(b);
  const ad = disjunctionOf(a);
  if (bd !== undefined && ad !== undefined && bd !== ad) {
    // A value matching two branches is refused by oneOf and accepted by anyOf.
    const many = Math.max((b[bd] as JsonValue[]).length, (a[ad] as JsonValue[]).length) > 1;
    if (many) out.push(schemaReason(ad === 'anyOf' ? 'combinator-loosened' : 'combinator-tightened', ctx.direction, path, `${bd} -> ${ad}`));
    b = { ...omit(b, bd), [ad]: b[bd] as JsonValue };
  } else if (bd === undefined && ad !== undefined && !('oneOf' in b) && !('anyOf' in b)) b = lift(b, a, ad);
  else if (ad === undefined && bd !== undefined && !('oneOf' in a) && !('anyOf' in a)) a = lift(a, b, bd);
  if ('allOf' in a && !('allOf' in b)) b = lift(b, a, 'allOf');
  else if ('allOf' in b && !('allOf' in a)) a = lift(a, b, 'allOf');

  const w = new SchemaStep(ctx, path, b, a);
  types(w);
  enumeration(w);
  addedChangedRemoved(w, 'const', 'const');
  bounds(w);
  addedChangedRemoved(w, 'pattern', 'pattern');
  addedChangedRemoved(w, 'format', 'format');
  multipleOf(w);
  uniqueItems(w);
  properties(w);
  patternProperties(w);
  additionalProperties(w);
  arrays(w);
  contains(w);
  dependencies(w);
  for (const kind of ['oneOf', 'anyOf'] as const) if (!same(b[kind], a[kind])) disjunction(w, kind);
  if (!same(b.allOf, a.allOf)) conjunction(w);
  // Complements are easy to get wrong and rare in tool contracts: any change to `not` is MAJOR (SPEC §2).
  if (!same(b.not, a.not)) w.add('not-changed', path, `not: ${show(b.not)} -> ${show(a.not)}`);
  addedChangedRemoved(w, 'default', 'default');
  annotations(w);
  rest(w);
  return [...out, ...w.out];
};

const compareResolved = (b: JsonValue, a: JsonValue, path: string, ctx: CompareCtx): Reason[] => {
  const bs = b === true ? {} : b;
  const as = a === true ? {} : a;
  if (bs === false && as === false) return [];
  if (bs === false) return [schemaReason('type-widened', ctx.direction, path, 'schema false (accepts nothing) -> accepts values')];
  if (as === false) return [schemaReason('type-narrowed', ctx.direction, path, 'schema now false: accepts nothing')];
  if (!isObj(bs) || !isObj(as)) {
    return same(bs, as) ? [] : [schemaReason('unmodelled-change', ctx.direction, path, 'a schema that is neither an object nor a boolean changed')];
  }
  return compareObjects(bs, as, path, ctx);
};

const compare = (b: JsonValue, a: JsonValue, path: string, ctx: CompareCtx): Reason[] => {
  if (--ctx.budget < 0) {
    ctx.exhausted = true;
    return [];
  }
  if (ctx.depth >= MAX_DEPTH) {
    return same(b, a) ? [] : [schemaReason('unmodelled-change', ctx.direction, path, `nested deeper than ${MAX_DEPTH} levels; fails closed`)];
  }
  const db = deref(b, ctx.beforeRoot);
  const da = deref(a, ctx.afterRoot);
  ctx.depth++;
  try {
    if (db.ref === undefined && da.ref === undefined) return compareResolved(db.schema, da.schema, path, ctx);
    const key = `${db.ref ?? canonicalJson(b)}\u0000${da.ref ?? canonicalJson(a)}`;
    if (ctx.active.has(key)) return [];
    ctx.active.add(key);
    try {
      return compareResolved(db.schema, da.schema, path, ctx);
    } finally {
      ctx.active.delete(key);
    }
  } finally {
    ctx.depth--;
  }
};

/**
 * A schema as the classifier compares it. One using `$id` resources, `$anchor`, `$dynamicAnchor`/`$dynamicRef` (or a
 * reference by URI into its own resources) is compared in the normalised form the validator compiles (every reference
 * a `#/$defs/...` pointer, one copy per dynamic scope; src/domain/schema-resources.ts), so what a reference means is
 * decided the same way for both. `undecided` when it cannot be normalised (a published schema always can): the caller
 * then fails closed.
 */
const forComparison = (schema: JsonObject): { schema: JsonObject; identifiers: string[]; undecided?: string } => {
  try {
    const index = indexSchemaResources(schema);
    if (!index.usesIdentifiers) return { schema, identifiers: [] };
    return { schema: index.normalise({ ajvFixes: false }) as JsonObject, identifiers: index.identifiers };
  } catch (e) {
    return { schema, identifiers: [], undecided: e instanceof Error ? e.message : String(e) };
  }
};

/** Reasons, unsorted and possibly repeated, for moving from `before` to `after`; each schema's `$ref`s resolve in its own root. */
export const compareSchemas = (before0: JsonObject, after0: JsonObject, direction: Direction, basePath: string): Reason[] => {
  // The same schema (as JCS text: key order aside) is no change; a version that changes only its wording, the common
  // patch, then costs no resource index and no walk.
  if (same(before0, after0)) return [];
  const b = forComparison(before0);
  const a = forComparison(after0);
  const undecided = b.undecided ?? a.undecided;
  if (undecided !== undefined) {
    return [schemaReason('unmodelled-change', direction, basePath, `references not resolvable (${undecided}); fails closed`)];
  }
  const before = b.schema;
  const after = a.schema;
  const ctx: CompareCtx = { beforeRoot: before, afterRoot: after, direction, active: new Set(), depth: 0, budget: MAX_COMPARISONS, exhausted: false, compare };
  const reasons = compare(before, after, basePath, ctx);
  // `$id` and anchors only name (their effect on references is compared above, through the normalised form).
  if (!same(b.identifiers, a.identifiers)) {
    reasons.push(schemaReason('id-changed', direction, basePath, `identifiers: ${show(b.identifiers)} -> ${show(a.identifiers)}`));
  }
  // Reported at the top, not where it ran out: that spot may have been a discarded branch pairing.
  if (ctx.exhausted) reasons.push(schemaReason('unmodelled-change', direction, basePath, `more than ${MAX_COMPARISONS} schema comparisons (nested combinators); fails closed`));
  return reasons;
};
