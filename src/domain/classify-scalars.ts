/** Keyword families of the schema classifier that constrain a value itself: type, enum, const, bounds, pattern,
 * format, multipleOf, uniqueItems, default and annotations. */
import { canonicalJson } from './hash.ts';
import { type SchemaStep, same, show } from './classify-step.ts';
import type { JsonValue } from './types.ts';

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

export const LOWER_BOUNDS = ['minimum', 'exclusiveMinimum', 'minLength', 'minItems', 'minProperties', 'minContains'] as const;
export const UPPER_BOUNDS = ['maximum', 'exclusiveMaximum', 'maxLength', 'maxItems', 'maxProperties', 'maxContains'] as const;
export const ANNOTATIONS = ['title', 'description', 'examples', '$comment'] as const;

const isMultiple = (x: number, of: number): boolean => {
  if (of === 0) return false;
  const q = x / of;
  return Math.abs(q - Math.round(q)) < 1e-9;
};

export const types = (w: SchemaStep): void => {
  const bt = typeSet(w.b.type);
  const at = typeSet(w.a.type);
  if (bt === 'invalid' || at === 'invalid') {
    if (!same(w.b.type, w.a.type)) w.unmodelled('type');
    return;
  }
  const narrower = subsetOf(at, bt);
  const wider = subsetOf(bt, at);
  if (narrower && wider) return;
  const detail = `type ${showTypes(bt)} -> ${showTypes(at)}`;
  w.add(narrower ? 'type-narrowed' : wider ? 'type-widened' : 'type-changed', w.path, detail);
};

export const enumeration = (w: SchemaStep): void => {
  const { b, a } = w;
  if (same(b.enum, a.enum)) return;
  if (b.enum === undefined) return w.add('enum-added', w.path, `enum ${show(a.enum)} added`);
  if (a.enum === undefined) return w.add('enum-removed', w.path, `enum ${show(b.enum)} removed`);
  if (!Array.isArray(b.enum) || !Array.isArray(a.enum)) return w.unmodelled('enum');
  const before = new Map(b.enum.map((v) => [canonicalJson(v), v]));
  const after = new Map(a.enum.map((v) => [canonicalJson(v), v]));
  const removed = [...before].filter(([k]) => !after.has(k)).map(([, v]) => v);
  const added = [...after].filter(([k]) => !before.has(k)).map(([, v]) => v);
  if (removed.length > 0) w.add('enum-value-removed', w.path, `enum values removed: ${JSON.stringify(removed)}`);
  if (added.length > 0) w.add('enum-value-added', w.path, `enum values added: ${JSON.stringify(added)}`);
};

export const addedChangedRemoved = (w: SchemaStep, keyword: string, prefix: 'const' | 'pattern' | 'format' | 'default'): void => {
  const bv = w.b[keyword];
  const av = w.a[keyword];
  if (same(bv, av)) return;
  const kind = bv === undefined ? 'added' : av === undefined ? 'removed' : 'changed';
  w.add(`${prefix}-${kind}`, w.path, `${keyword}: ${show(bv)} -> ${show(av)}`);
};

export const bounds = (w: SchemaStep): void => {
  for (const [keywords, sentinel] of [[LOWER_BOUNDS, -Infinity], [UPPER_BOUNDS, Infinity]] as const) {
    for (const k of keywords) {
      const bv = w.b[k];
      const av = w.a[k];
      if (same(bv, av)) continue;
      if ((bv !== undefined && typeof bv !== 'number') || (av !== undefined && typeof av !== 'number')) {
        w.unmodelled(k);
        continue;
      }
      // Absent = the infinity on its side: adding `minimum: 0` is a tightening, not a loosening from 0.
      const before = bv ?? sentinel;
      const after = av ?? sentinel;
      const tighter = sentinel < 0 ? after > before : after < before;
      const detail = `${k}: ${show(bv)} -> ${show(av)}`;
      if (tighter) w.add(sentinel < 0 ? 'lower-bound-tightened' : 'upper-bound-tightened', w.path, detail);
      else if (after !== before) w.add('bound-loosened', w.path, detail);
    }
  }
};

export const multipleOf = (w: SchemaStep): void => {
  const bv = w.b.multipleOf;
  const av = w.a.multipleOf;
  if (same(bv, av)) return;
  const detail = `multipleOf: ${show(bv)} -> ${show(av)}`;
  if (bv === undefined) return w.add('multiple-of-added', w.path, detail);
  if (av === undefined) return w.add('multiple-of-removed', w.path, detail);
  if (typeof bv !== 'number' || typeof av !== 'number') return w.unmodelled('multipleOf');
  // Every multiple of the old value is a multiple of the new one exactly when the new one divides the old.
  if (isMultiple(bv, av)) w.add('multiple-of-loosened', w.path, detail);
  else if (isMultiple(av, bv)) w.add('multiple-of-tightened', w.path, detail);
  else w.add('multiple-of-changed', w.path, detail);
};

export const uniqueItems = (w: SchemaStep): void => {
  const { b, a } = w;
  if (same(b.uniqueItems, a.uniqueItems)) return;
  const valid = (v: JsonValue | undefined): boolean => v === undefined || typeof v === 'boolean';
  if (!valid(b.uniqueItems) || !valid(a.uniqueItems)) return w.unmodelled('uniqueItems');
  const before = b.uniqueItems === true;
  const after = a.uniqueItems === true;
  if (before !== after) w.add(after ? 'unique-items-added' : 'unique-items-removed', w.path, `uniqueItems: ${before} -> ${after}`);
};

export const annotations = (w: SchemaStep): void => {
  for (const k of ANNOTATIONS) {
    if (!same(w.b[k], w.a[k])) w.add('annotation-changed', w.path, `${k}: ${show(w.b[k])} -> ${show(w.a[k])}`);
  }
  // A schema with `$id` is compared in its normalised form (see forComparison), where no `$id` is left; this
  // only sees one in a schema compared as is.
  if (!same(w.b.$id, w.a.$id)) w.add('id-changed', w.path, `$id: ${show(w.b.$id)} -> ${show(w.a.$id)}`);
};
