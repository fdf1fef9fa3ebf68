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
import { type Direction, type SchemaRule, indexPath, keyPath, schemaReason } from './classify-rules.ts';
import { LEVEL_RANK, type JsonObject, type JsonValue, type Reason } from './types.ts';

interface Ctx {
  readonly beforeRoot: JsonValue;
  readonly afterRoot: JsonValue;
  readonly direction: Direction;
  /** (before, after) pairs being compared through a `$ref`: meeting one again means a cycle, assumed equal (co-induction). */
  readonly active: Set<string>;
  depth: number;
  /** Branch pairing compares every old branch with every new one, so nested combinators multiply the work. */
  budget: number;
  exhausted: boolean;
}

/** Recursive schemas are cut by `active`; this only bounds pathological nesting, failing closed. */
const MAX_DEPTH = 200;
/** Schema-pair comparisons one classification may make before it stops and fails closed (a publish must not hang). */
const MAX_COMPARISONS = 200_000;

const isObj = (v: JsonValue | undefined): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);

const same = (a: JsonValue | undefined, b: JsonValue | undefined): boolean =>
  a === undefined || b === undefined ? a === b : canonicalJson(a) === canonicalJson(b);

const show = (v: JsonValue | undefined): string => (v === undefined ? 'absent' : JSON.stringify(v));

const omit = (s: JsonObject, key: string): JsonObject => {
  const out: JsonObject = {};
  for (const [k, v] of Object.entries(s)) if (k !== key) out[k] = v;
  return out;
};

const maxRank = (reasons: readonly Reason[]): number => reasons.reduce((m, r) => Math.max(m, LEVEL_RANK[r.level]), 0);

// ---------------------------------------------------------------- $ref

const resolvePointer = (root: JsonValue, ref: string): JsonValue | undefined => {
  if (!ref.startsWith('#')) return undefined;
  let fragment: string;
  try {
    fragment = decodeURIComponent(ref.slice(1));
  } catch {
    return undefined;
  }
  if (fragment === '') return root;
  if (!fragment.startsWith('/')) return undefined; // `#anchor` forms are not resolved: compared as opaque text
  let cur: JsonValue | undefined = root;
  for (const raw of fragment.slice(1).split('/')) {
    const token = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (Array.isArray(cur)) cur = /^(0|[1-9][0-9]*)$/.test(token) ? cur[Number(token)] : undefined;
    else if (isObj(cur)) cur = Object.prototype.hasOwnProperty.call(cur, token) ? cur[token] : undefined;
    else cur = undefined;
    if (cur === undefined) return undefined;
  }
  return cur;
};

/**
 * Replaces a local `$ref` by its target. In 2020-12 `$ref` beside other keywords is a conjunction, so siblings are
 * merged into the target when no keyword conflicts, else the target becomes an `allOf` branch.
 */
const deref = (schema: JsonValue, root: JsonValue): { schema: JsonValue; ref: string | undefined } => {
  let cur = schema;
  let first: string | undefined;
  for (let hops = 0; hops < 32 && isObj(cur) && typeof cur.$ref === 'string'; hops++) {
    const ref: string = cur.$ref;
    const target = resolvePointer(root, ref);
    if (target === undefined) break;
    first ??= ref;
    const siblings = omit(cur, '$ref');
    if (target === false) return { schema: false, ref: first };
    if (target === true || (isObj(target) && Object.keys(target).length === 0)) {
      cur = Object.keys(siblings).length === 0 ? true : siblings;
      continue;
    }
    if (!isObj(target)) break;
    const conflict = Object.keys(target).some((k) => k in siblings && !same(siblings[k], target[k]));
    cur = conflict ? { ...siblings, allOf: [...(Array.isArray(siblings.allOf) ? siblings.allOf : []), target] } : { ...target, ...siblings };
  }
  return { schema: cur, ref: first };
};

// ---------------------------------------------------------------- shape normalisation

const COMBINATORS = ['allOf', 'anyOf', 'oneOf'] as const;
/** Keywords that never move into a lifted branch: they identify or describe, they do not constrain. */
const META = new Set(['$schema', '$id', '$defs', 'definitions', 'title', 'description', '$comment', 'examples', 'default']);

/** `{allOf|anyOf|oneOf: [X]}` means X: merged into the parent when no keyword conflicts, so `oneOf: [{type: string}]` equals `type: string`. */
const collapseSingleBranches = (schema: JsonObject): JsonObject => {
  let cur = schema;
  for (let round = 0; round < 16; round++) {
    let changed = false;
    for (const k of COMBINATORS) {
      const branches = cur[k];
      if (!Array.isArray(branches) || branches.length !== 1) continue;
      const only = branches[0];
      const rest = omit(cur, k);
      if (only === true || (isObj(only) && Object.keys(only).length === 0)) {
        cur = rest;
        changed = true;
      } else if (isObj(only) && Object.keys(only).every((key) => !(key in rest) || same(rest[key], only[key]))) {
        cur = { ...rest, ...only };
        changed = true;
      }
    }
    if (!changed) break;
  }
  return cur;
};

/**
 * When only the other side has combinator `key`, this side's constraining keywords that the other side lacks become
 * its single branch, so `type: string` -> `oneOf: [number, string]` compares branch against branches.
 */
const lift = (schema: JsonObject, other: JsonObject, key: string): JsonObject => {
  const base: JsonObject = {};
  const branch: JsonObject = {};
  for (const [k, v] of Object.entries(schema)) {
    if (META.has(k) || k in other) base[k] = v;
    else branch[k] = v;
  }
  return { ...base, [key]: [branch] };
};

const disjunctionOf = (s: JsonObject): 'oneOf' | 'anyOf' | undefined =>
  'oneOf' in s === 'anyOf' in s ? undefined : 'oneOf' in s ? 'oneOf' : 'anyOf';

// ---------------------------------------------------------------- keyword tables

type TypeSet = readonly string[] | null; // null: any type

const typeSet = (v: JsonValue | undefined): TypeSet | 'invalid' => {
  if (v === undefined) return null;
  if (typeof v === 'string') return [v];
  if (Array.isArray(v) && v.every((t) => typeof t === 'string')) return v as string[];
  return 'invalid';
};
/** `integer` ⊂ `number`. */
const covers = (set: TypeSet, t: string): boolean => set === null || set.includes(t) || (t === 'integer' && set.includes('number'));
const subsetOf = (a: TypeSet, b: TypeSet): boolean => b === null || (a !== null && a.every((t) => covers(b, t)));
const showTypes = (t: TypeSet): string => (t === null ? 'any' : t.join('|'));

const LOWER_BOUNDS = ['minimum', 'exclusiveMinimum', 'minLength', 'minItems', 'minProperties', 'minContains'] as const;
const UPPER_BOUNDS = ['maximum', 'exclusiveMaximum', 'maxLength', 'maxItems', 'maxProperties', 'maxContains'] as const;
const ANNOTATIONS = ['title', 'description', 'examples', '$comment'] as const;

/** Keywords compared by a dedicated rule below; any other keyword that differs is `unmodelled-change`. */
const MODELLED = new Set<string>([
  'type', 'enum', 'const', ...LOWER_BOUNDS, ...UPPER_BOUNDS, 'pattern', 'format', 'multipleOf', 'uniqueItems',
  'properties', 'required', 'additionalProperties', 'patternProperties', 'items', 'prefixItems', 'contains',
  'dependentRequired', 'dependentSchemas', ...COMBINATORS, 'not', 'default', ...ANNOTATIONS, '$id',
  // Containers of `$ref` targets: compared where they are referenced, never as text.
  '$defs', 'definitions',
]);

const isMultiple = (x: number, of: number): boolean => {
  if (of === 0) return false;
  const q = x / of;
  return Math.abs(q - Math.round(q)) < 1e-9;
};

const patternMatches = (pattern: string, name: string): boolean => {
  try {
    return new RegExp(pattern, 'u').test(name);
  } catch {
    return false;
  }
};

/** Open (`true`, `{}` or absent), closed (`false`), or a schema every extra property must satisfy. */
type Openness = { kind: 'open' } | { kind: 'closed' } | { kind: 'schema'; schema: JsonObject } | { kind: 'invalid' };
const openness = (v: JsonValue | undefined): Openness => {
  if (v === undefined || v === true) return { kind: 'open' };
  if (v === false) return { kind: 'closed' };
  if (isObj(v)) return Object.keys(v).length === 0 ? { kind: 'open' } : { kind: 'schema', schema: v };
  return { kind: 'invalid' };
};
/** `unevaluatedProperties` stands in for `additionalProperties` when only it closes the object. */
const extraProperties = (s: JsonObject): Openness => openness(s.additionalProperties ?? s.unevaluatedProperties);

const objectOrEmpty = (v: JsonValue | undefined): JsonObject => (isObj(v) ? v : {});
const stringList = (v: JsonValue | undefined): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);

// ---------------------------------------------------------------- the walk

class Walk {
  readonly out: Reason[] = [];
  readonly ctx: Ctx;
  readonly path: string;
  readonly b: JsonObject;
  readonly a: JsonObject;
  constructor(ctx: Ctx, path: string, b: JsonObject, a: JsonObject) {
    this.ctx = ctx;
    this.path = path;
    this.b = b;
    this.a = a;
  }

  add(rule: SchemaRule, path: string, detail: string): void {
    this.out.push(schemaReason(rule, this.ctx.direction, path, detail));
  }
  sub(b: JsonValue, a: JsonValue, path: string): void {
    this.out.push(...compare(b, a, path, this.ctx));
  }
  unmodelled(keyword: string): void {
    this.add('unmodelled-change', this.path, `${keyword}: ${show(this.b[keyword])} -> ${show(this.a[keyword])}; not modelled, so it fails closed`);
  }

  types(): void {
    const bt = typeSet(this.b.type);
    const at = typeSet(this.a.type);
    if (bt === 'invalid' || at === 'invalid') {
      if (!same(this.b.type, this.a.type)) this.unmodelled('type');
      return;
    }
    const narrower = subsetOf(at, bt);
    const wider = subsetOf(bt, at);
    if (narrower && wider) return;
    const detail = `type ${showTypes(bt)} -> ${showTypes(at)}`;
    this.add(narrower ? 'type-narrowed' : wider ? 'type-widened' : 'type-changed', this.path, detail);
  }

  enumeration(): void {
    const { b, a } = this;
    if (same(b.enum, a.enum)) return;
    if (b.enum === undefined) return this.add('enum-added', this.path, `enum ${show(a.enum)} added`);
    if (a.enum === undefined) return this.add('enum-removed', this.path, `enum ${show(b.enum)} removed`);
    if (!Array.isArray(b.enum) || !Array.isArray(a.enum)) return this.unmodelled('enum');
    const before = new Map(b.enum.map((v) => [canonicalJson(v), v]));
    const after = new Map(a.enum.map((v) => [canonicalJson(v), v]));
    const removed = [...before].filter(([k]) => !after.has(k)).map(([, v]) => v);
    const added = [...after].filter(([k]) => !before.has(k)).map(([, v]) => v);
    if (removed.length > 0) this.add('enum-value-removed', this.path, `enum values removed: ${JSON.stringify(removed)}`);
    if (added.length > 0) this.add('enum-value-added', this.path, `enum values added: ${JSON.stringify(added)}`);
  }

  addedChangedRemoved(keyword: string, prefix: 'const' | 'pattern' | 'format' | 'default'): void {
    const bv = this.b[keyword];
    const av = this.a[keyword];
    if (same(bv, av)) return;
    const kind = bv === undefined ? 'added' : av === undefined ? 'removed' : 'changed';
    this.add(`${prefix}-${kind}`, this.path, `${keyword}: ${show(bv)} -> ${show(av)}`);
  }

  bounds(): void {
    for (const [keywords, sentinel] of [[LOWER_BOUNDS, -Infinity], [UPPER_BOUNDS, Infinity]] as const) {
      for (const k of keywords) {
        const bv = this.b[k];
        const av = this.a[k];
        if (same(bv, av)) continue;
        if ((bv !== undefined && typeof bv !== 'number') || (av !== undefined && typeof av !== 'number')) {
          this.unmodelled(k);
          continue;
        }
        // Absent = the infinity on its side: adding `minimum: 0` is a tightening, not a loosening from 0.
        const before = bv ?? sentinel;
        const after = av ?? sentinel;
        const tighter = sentinel < 0 ? after > before : after < before;
        const detail = `${k}: ${show(bv)} -> ${show(av)}`;
        if (tighter) this.add(sentinel < 0 ? 'lower-bound-tightened' : 'upper-bound-tightened', this.path, detail);
        else if (after !== before) this.add('bound-loosened', this.path, detail);
      }
    }
  }

  multipleOf(): void {
    const bv = this.b.multipleOf;
    const av = this.a.multipleOf;
    if (same(bv, av)) return;
    const detail = `multipleOf: ${show(bv)} -> ${show(av)}`;
    if (bv === undefined) return this.add('multiple-of-added', this.path, detail);
    if (av === undefined) return this.add('multiple-of-removed', this.path, detail);
    if (typeof bv !== 'number' || typeof av !== 'number') return this.unmodelled('multipleOf');
    // Every multiple of the old value is a multiple of the new one exactly when the new one divides the old.
    if (isMultiple(bv, av)) this.add('multiple-of-loosened', this.path, detail);
    else if (isMultiple(av, bv)) this.add('multiple-of-tightened', this.path, detail);
    else this.add('multiple-of-changed', this.path, detail);
  }

  uniqueItems(): void {
    const { b, a } = this;
    if (same(b.uniqueItems, a.uniqueItems)) return;
    const valid = (v: JsonValue | undefined): boolean => v === undefined || typeof v === 'boolean';
    if (!valid(b.uniqueItems) || !valid(a.uniqueItems)) return this.unmodelled('uniqueItems');
    const before = b.uniqueItems === true;
    const after = a.uniqueItems === true;
    if (before !== after) this.add(after ? 'unique-items-added' : 'unique-items-removed', this.path, `uniqueItems: ${before} -> ${after}`);
  }

  annotations(): void {
    for (const k of ANNOTATIONS) {
      if (!same(this.b[k], this.a[k])) this.add('annotation-changed', this.path, `${k}: ${show(this.b[k])} -> ${show(this.a[k])}`);
    }
    // A schema with `$id` is compared in its normalised form (see forComparison), where no `$id` is left; this
    // only sees one in a schema compared as is.
    if (!same(this.b.$id, this.a.$id)) this.add('id-changed', this.path, `$id: ${show(this.b.$id)} -> ${show(this.a.$id)}`);
  }

  properties(): void {
    const { b, a } = this;
    for (const k of ['properties', 'patternProperties'] as const) {
      if ((b[k] !== undefined && !isObj(b[k])) || (a[k] !== undefined && !isObj(a[k]))) {
        if (!same(b[k], a[k])) this.unmodelled(k);
        return;
      }
    }
    const bp = objectOrEmpty(b.properties);
    const ap = objectOrEmpty(a.properties);
    const base = keyPath(this.path, 'properties');
    const names = [...new Set([...Object.keys(bp), ...Object.keys(ap)])].sort();
    for (const name of names) {
      const path = keyPath(base, name);
      const bs = bp[name];
      const as = ap[name];
      if (bs !== undefined && as !== undefined) this.sub(bs, as, path);
      else if (bs !== undefined) this.propertyRemoved(name, bs, path);
      else if (as !== undefined) this.propertyAdded(name, as, path);
    }
    const breq = new Set(stringList(b.required));
    const areq = new Set(stringList(a.required));
    for (const name of [...areq].filter((n) => !breq.has(n)).sort()) this.add('required-added', keyPath(base, name), `'${name}' is now required`);
    for (const name of [...breq].filter((n) => !areq.has(n)).sort()) this.add('required-removed', keyPath(base, name), `'${name}' is no longer required`);
  }

  /** The schemas (besides `properties`) that govern a property name in `s`: matching patternProperties, else additionalProperties. */
  private governing(s: JsonObject, name: string): { patterns: JsonValue[]; extra: Openness } {
    const patterns = Object.entries(objectOrEmpty(s.patternProperties))
      .filter(([p]) => patternMatches(p, name))
      .map(([, v]) => v);
    return { patterns, extra: extraProperties(s) };
  }

  private propertyRemoved(name: string, bs: JsonValue, path: string): void {
    if (bs === false) return this.add('forbidden-property-removed', path, `'${name}' (schema false: never allowed) removed from properties`);
    const { patterns, extra } = this.governing(this.a, name);
    const constraining = patterns.filter((p) => p !== true && !(isObj(p) && Object.keys(p).length === 0));
    const covers: JsonValue[] = patterns.length > 0 ? constraining : extra.kind === 'schema' ? [extra.schema] : [];
    if (covers.length === 0) {
      // Even from an open object: the caller's argument would be silently ignored (SPEC §2).
      return this.add('property-removed', path, `property '${name}' removed`);
    }
    // Still validated, by patternProperties or an additionalProperties schema: compare against what now governs it.
    this.add('property-removed-covered', path, `property '${name}' removed from properties; still governed by ${patterns.length > 0 ? 'patternProperties' : 'additionalProperties'}`);
    for (const cover of covers) this.sub(bs, cover, path);
  }

  private propertyAdded(name: string, as: JsonValue, path: string): void {
    this.add('property-added', path, `property '${name}' added`);
    const { patterns, extra } = this.governing(this.b, name);
    if (patterns.length > 0) return; // the same patterns keep applying beside `properties`; their changes are compared on their own
    if (extra.kind === 'schema') this.sub(extra.schema, as, path);
    else if (extra.kind === 'open' && as === false) this.sub(true, false, path);
  }

  patternProperties(): void {
    const bp = objectOrEmpty(this.b.patternProperties);
    const ap = objectOrEmpty(this.a.patternProperties);
    const base = keyPath(this.path, 'patternProperties');
    const bClosed = extraProperties(this.b).kind === 'closed';
    const aClosed = extraProperties(this.a).kind === 'closed';
    for (const p of [...new Set([...Object.keys(bp), ...Object.keys(ap)])].sort()) {
      const bs = bp[p];
      const as = ap[p];
      const path = keyPath(base, p);
      if (bs !== undefined && as !== undefined) this.sub(bs, as, path);
      // In a closed object a new pattern admits names that were refused; in an open one it constrains names that were free.
      else if (as !== undefined) this.add(bClosed ? 'pattern-property-added-to-closed' : 'pattern-property-added', path, `patternProperties '${p}' added`);
      else this.add(aClosed ? 'pattern-property-removed-from-closed' : 'pattern-property-removed', path, `patternProperties '${p}' removed`);
    }
  }

  additionalProperties(): void {
    const { b, a } = this;
    if (same(b.additionalProperties, a.additionalProperties)) return;
    const before = openness(b.additionalProperties);
    const after = openness(a.additionalProperties);
    const path = keyPath(this.path, 'additionalProperties');
    const detail = `additionalProperties: ${show(b.additionalProperties)} -> ${show(a.additionalProperties)}`;
    if (before.kind === 'invalid' || after.kind === 'invalid') return this.unmodelled('additionalProperties');
    if (before.kind === after.kind && before.kind === 'open') return;
    if (after.kind === 'closed') return this.add('additional-properties-closed', path, detail);
    if (before.kind === 'closed') return this.add('additional-properties-opened', path, detail);
    if (before.kind === 'open') return this.add('additional-properties-narrowed', path, detail);
    if (before.kind === 'schema') this.sub(before.schema, after.kind === 'schema' ? after.schema : true, path);
  }

  arrays(): void {
    const { b, a } = this;
    if (Array.isArray(b.items) || Array.isArray(a.items) || b.additionalItems !== undefined || a.additionalItems !== undefined) {
      // The draft-07 tuple form is not 2020-12 (Estate refuses it at publish): compare it as text, failing closed.
      if (!same(b.items, a.items)) this.unmodelled('items');
      if (!same(b.additionalItems, a.additionalItems)) this.unmodelled('additionalItems');
      if (!same(b.prefixItems, a.prefixItems)) this.unmodelled('prefixItems');
      return;
    }
    if ((b.prefixItems !== undefined && !Array.isArray(b.prefixItems)) || (a.prefixItems !== undefined && !Array.isArray(a.prefixItems))) {
      if (!same(b.prefixItems, a.prefixItems)) this.unmodelled('prefixItems');
      return;
    }
    const bPrefix = Array.isArray(b.prefixItems) ? b.prefixItems : [];
    const aPrefix = Array.isArray(a.prefixItems) ? a.prefixItems : [];
    // Beyond its prefix, a position is governed by `items` (or, failing that, `unevaluatedItems`).
    const bTail = b.items ?? b.unevaluatedItems ?? true;
    const aTail = a.items ?? a.unevaluatedItems ?? true;
    const base = keyPath(this.path, 'prefixItems');
    for (let i = 0; i < Math.max(bPrefix.length, aPrefix.length); i++) this.sub(bPrefix[i] ?? bTail, aPrefix[i] ?? aTail, indexPath(base, i));
    if (b.items !== undefined || a.items !== undefined) this.sub(b.items ?? true, a.items ?? true, keyPath(this.path, 'items'));
  }

  contains(): void {
    const { b, a } = this;
    if (same(b.contains, a.contains)) return;
    if (b.contains !== undefined && a.contains !== undefined) this.sub(b.contains, a.contains, keyPath(this.path, 'contains'));
    else this.unmodelled('contains');
  }

  dependencies(): void {
    const { b, a } = this;
    if (!same(b.dependentRequired, a.dependentRequired)) {
      const bd = objectOrEmpty(b.dependentRequired);
      const ad = objectOrEmpty(a.dependentRequired);
      const base = keyPath(this.path, 'dependentRequired');
      for (const k of [...new Set([...Object.keys(bd), ...Object.keys(ad)])].sort()) {
        const before = new Set(stringList(bd[k]));
        const after = new Set(stringList(ad[k]));
        const added = [...after].filter((n) => !before.has(n));
        const removed = [...before].filter((n) => !after.has(n));
        if (added.length > 0) this.add('dependent-required-added', keyPath(base, k), `when '${k}' is present, now also required: ${added.join(', ')}`);
        if (removed.length > 0) this.add('dependent-required-removed', keyPath(base, k), `when '${k}' is present, no longer required: ${removed.join(', ')}`);
      }
    }
    if (!same(b.dependentSchemas, a.dependentSchemas)) {
      const bd = objectOrEmpty(b.dependentSchemas);
      const ad = objectOrEmpty(a.dependentSchemas);
      const base = keyPath(this.path, 'dependentSchemas');
      for (const k of [...new Set([...Object.keys(bd), ...Object.keys(ad)])].sort()) {
        const bs = bd[k];
        const as = ad[k];
        if (bs !== undefined && as !== undefined) this.sub(bs, as, keyPath(base, k));
        else if (as !== undefined) this.add('dependent-schema-added', keyPath(base, k), `dependentSchemas '${k}' added`);
        else this.add('dependent-schema-removed', keyPath(base, k), `dependentSchemas '${k}' removed`);
      }
    }
  }

  /** oneOf/anyOf: every old branch must still be accepted by some new branch. */
  disjunction(kind: 'oneOf' | 'anyOf'): void {
    const bBranches = Array.isArray(this.b[kind]) ? this.b[kind] : [true];
    const aBranches = Array.isArray(this.a[kind]) ? this.a[kind] : [true];
    const rule = kind === 'oneOf' ? 'one-of' : 'any-of';
    const base = keyPath(this.path, kind);
    const { pairs, unpaired, unused } = this.pairBranches(bBranches, aBranches, base, 'old-in-new');
    for (const reasons of pairs) this.out.push(...reasons);
    const spare = [...unused];
    for (const i of unpaired) {
      const j = spare.includes(i) ? i : spare[0];
      if (j !== undefined) {
        spare.splice(spare.indexOf(j), 1);
        this.add(`${rule}-branch-changed`, indexPath(base, j), `${kind} branch ${i} changed: no new branch accepts all it accepted`);
      } else this.add(`${rule}-branch-removed`, indexPath(base, i), `${kind} branch ${i} removed`);
    }
    for (const j of spare) this.add(`${rule}-branch-added`, indexPath(base, j), `${kind} branch ${j} added`);
  }

  /** allOf: every new branch must be implied by some old branch. */
  conjunction(): void {
    const bBranches = Array.isArray(this.b.allOf) ? this.b.allOf : [true];
    const aBranches = Array.isArray(this.a.allOf) ? this.a.allOf : [true];
    const base = keyPath(this.path, 'allOf');
    const { pairs, unpaired, unused } = this.pairBranches(aBranches, bBranches, base, 'new-implied-by-old');
    for (const reasons of pairs) this.out.push(...reasons);
    const spare = [...unused];
    for (const j of unpaired) {
      const i = spare.includes(j) ? j : spare[0];
      if (i !== undefined) {
        spare.splice(spare.indexOf(i), 1);
        this.add('all-of-branch-changed', indexPath(base, j), `allOf branch ${j} changed: no old branch implies it`);
      } else this.add('all-of-branch-added', indexPath(base, j), `allOf branch ${j} added`);
    }
    for (const i of spare) this.add('all-of-branch-removed', indexPath(base, i), `allOf branch ${i} removed`);
  }

  /**
   * For each branch of `from`, the branch of `to` it compares best with (fewest, lowest reasons; the same index on a
   * tie). A pairing whose worst reason is MAJOR is no pairing. `from` is old for disjunctions, new for conjunctions.
   */
  private pairBranches(
    from: JsonValue[],
    to: JsonValue[],
    base: string,
    mode: 'old-in-new' | 'new-implied-by-old',
  ): { pairs: Reason[][]; unpaired: number[]; unused: number[] } {
    const pairs: Reason[][] = [];
    const unpaired: number[] = [];
    const used = new Set<number>();
    from.forEach((f, i) => {
      let best: { j: number; reasons: Reason[]; cost: number } | undefined;
      to.forEach((t, j) => {
        const reasons =
          mode === 'old-in-new' ? compare(f, t, indexPath(base, j), this.ctx) : compare(t, f, indexPath(base, i), this.ctx);
        const cost = maxRank(reasons) * 1000 + reasons.length;
        if (best === undefined || cost < best.cost || (cost === best.cost && j === i)) best = { j, reasons, cost };
      });
      if (best !== undefined && best.cost < LEVEL_RANK.major * 1000) {
        pairs.push(best.reasons);
        used.add(best.j);
      } else unpaired.push(i);
    });
    const unused = to.map((_, j) => j).filter((j) => !used.has(j));
    return { pairs, unpaired, unused };
  }

  rest(): void {
    const keys = [...new Set([...Object.keys(this.b), ...Object.keys(this.a)])].sort();
    for (const k of keys) if (!MODELLED.has(k) && !same(this.b[k], this.a[k])) this.unmodelled(k);
  }
}

const compareObjects = (b0: JsonObject, a0: JsonObject, path: string, ctx: Ctx): Reason[] => {
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

  const w = new Walk(ctx, path, b, a);
  w.types();
  w.enumeration();
  w.addedChangedRemoved('const', 'const');
  w.bounds();
  w.addedChangedRemoved('pattern', 'pattern');
  w.addedChangedRemoved('format', 'format');
  w.multipleOf();
  w.uniqueItems();
  w.properties();
  w.patternProperties();
  w.additionalProperties();
  w.arrays();
  w.contains();
  w.dependencies();
  for (const kind of ['oneOf', 'anyOf'] as const) if (!same(b[kind], a[kind])) w.disjunction(kind);
  if (!same(b.allOf, a.allOf)) w.conjunction();
  // Complements are easy to get wrong and rare in tool contracts: any change to `not` is MAJOR (SPEC §2).
  if (!same(b.not, a.not)) w.add('not-changed', path, `not: ${show(b.not)} -> ${show(a.not)}`);
  w.addedChangedRemoved('default', 'default');
  w.annotations();
  w.rest();
  return [...out, ...w.out];
};

const compareResolved = (b: JsonValue, a: JsonValue, path: string, ctx: Ctx): Reason[] => {
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

const compare = (b: JsonValue, a: JsonValue, path: string, ctx: Ctx): Reason[] => {
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
  const b = forComparison(before0);
  const a = forComparison(after0);
  const undecided = b.undecided ?? a.undecided;
  if (undecided !== undefined) {
    return same(before0, after0) ? [] : [schemaReason('unmodelled-change', direction, basePath, `references not resolvable (${undecided}); fails closed`)];
  }
  const before = b.schema;
  const after = a.schema;
  const ctx: Ctx = { beforeRoot: before, afterRoot: after, direction, active: new Set(), depth: 0, budget: MAX_COMPARISONS, exhausted: false };
  const reasons = compare(before, after, basePath, ctx);
  // `$id` and anchors only name (their effect on references is compared above, through the normalised form).
  if (!same(b.identifiers, a.identifiers)) {
    reasons.push(schemaReason('id-changed', direction, basePath, `identifiers: ${show(b.identifiers)} -> ${show(a.identifiers)}`));
  }
  // Reported at the top, not where it ran out: that spot may have been a discarded branch pairing.
  if (ctx.exhausted) reasons.push(schemaReason('unmodelled-change', direction, basePath, `more than ${MAX_COMPARISONS} schema comparisons (nested combinators); fails closed`));
  return reasons;
};
