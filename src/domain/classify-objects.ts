/** Keyword families of the schema classifier for objects: properties, required, patternProperties,
 * additionalProperties, dependentRequired and dependentSchemas. */
import { keyPath } from './classify-rules.ts';
import { type SchemaStep, isObj, objectOrEmpty, same, show, stringList } from './classify-step.ts';
import type { JsonObject, JsonValue } from './types.ts';

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

export const properties = (w: SchemaStep): void => {
  const { b, a } = w;
  for (const k of ['properties', 'patternProperties'] as const) {
    if ((b[k] !== undefined && !isObj(b[k])) || (a[k] !== undefined && !isObj(a[k]))) {
      if (!same(b[k], a[k])) w.unmodelled(k);
      return;
    }
  }
  const bp = objectOrEmpty(b.properties);
  const ap = objectOrEmpty(a.properties);
  const base = keyPath(w.path, 'properties');
  const names = [...new Set([...Object.keys(bp), ...Object.keys(ap)])].sort();
  for (const name of names) {
    const path = keyPath(base, name);
    const bs = bp[name];
    const as = ap[name];
    if (bs !== undefined && as !== undefined) w.sub(bs, as, path);
    else if (bs !== undefined) propertyRemoved(w, name, bs, path);
    else if (as !== undefined) propertyAdded(w, name, as, path);
  }
  const breq = new Set(stringList(b.required));
  const areq = new Set(stringList(a.required));
  for (const name of [...areq].filter((n) => !breq.has(n)).sort()) w.add('required-added', keyPath(base, name), `'${name}' is now required`);
  for (const name of [...breq].filter((n) => !areq.has(n)).sort()) w.add('required-removed', keyPath(base, name), `'${name}' is no longer required`);
};

/** The schemas (besides `properties`) that govern a property name in `s`: matching patternProperties, else additionalProperties. */
const governing = (w: SchemaStep, s: JsonObject, name: string): { patterns: JsonValue[]; extra: Openness } => {
  const patterns = Object.entries(objectOrEmpty(s.patternProperties))
    .filter(([p]) => patternMatches(p, name))
    .map(([, v]) => v);
  return { patterns, extra: extraProperties(s) };
};

const propertyRemoved = (w: SchemaStep, name: string, bs: JsonValue, path: string): void => {
  if (bs === false) return w.add('forbidden-property-removed', path, `'${name}' (schema false: never allowed) removed from properties`);
  const { patterns, extra } = governing(w, w.a, name);
  const constraining = patterns.filter((p) => p !== true && !(isObj(p) && Object.keys(p).length === 0));
  const covers: JsonValue[] = patterns.length > 0 ? constraining : extra.kind === 'schema' ? [extra.schema] : [];
  if (covers.length === 0) {
    // Even from an open object: the caller's argument would be silently ignored (SPEC §2).
    return w.add('property-removed', path, `property '${name}' removed`);
  }
  // Still validated, by patternProperties or an additionalProperties schema: compare against what now governs it.
  w.add('property-removed-covered', path, `property '${name}' removed from properties; still governed by ${patterns.length > 0 ? 'patternProperties' : 'additionalProperties'}`);
  for (const cover of covers) w.sub(bs, cover, path);
};

const propertyAdded = (w: SchemaStep, name: string, as: JsonValue, path: string): void => {
  w.add('property-added', path, `property '${name}' added`);
  const { patterns, extra } = governing(w, w.b, name);
  if (patterns.length > 0) return; // the same patterns keep applying beside `properties`; their changes are compared on their own
  if (extra.kind === 'schema') w.sub(extra.schema, as, path);
  else if (extra.kind === 'open' && as === false) w.sub(true, false, path);
};

export const patternProperties = (w: SchemaStep): void => {
  const bp = objectOrEmpty(w.b.patternProperties);
  const ap = objectOrEmpty(w.a.patternProperties);
  const base = keyPath(w.path, 'patternProperties');
  const bClosed = extraProperties(w.b).kind === 'closed';
  const aClosed = extraProperties(w.a).kind === 'closed';
  for (const p of [...new Set([...Object.keys(bp), ...Object.keys(ap)])].sort()) {
    const bs = bp[p];
    const as = ap[p];
    const path = keyPath(base, p);
    if (bs !== undefined && as !== undefined) w.sub(bs, as, path);
    // In a closed object a new pattern admits names that were refused; in an open one it constrains names that were free.
    else if (as !== undefined) w.add(bClosed ? 'pattern-property-added-to-closed' : 'pattern-property-added', path, `patternProperties '${p}' added`);
    else w.add(aClosed ? 'pattern-property-removed-from-closed' : 'pattern-property-removed', path, `patternProperties '${p}' removed`);
  }
};

export const additionalProperties = (w: SchemaStep): void => {
  const { b, a } = w;
  if (same(b.additionalProperties, a.additionalProperties)) return;
  const before = openness(b.additionalProperties);
  const after = openness(a.additionalProperties);
  const path = keyPath(w.path, 'additionalProperties');
  const detail = `additionalProperties: ${show(b.additionalProperties)} -> ${show(a.additionalProperties)}`;
  if (before.kind === 'invalid' || after.kind === 'invalid') return w.unmodelled('additionalProperties');
  if (before.kind === after.kind && before.kind === 'open') return;
  if (after.kind === 'closed') return w.add('additional-properties-closed', path, detail);
  if (before.kind === 'closed') return w.add('additional-properties-opened', path, detail);
  if (before.kind === 'open') return w.add('additional-properties-narrowed', path, detail);
  if (before.kind === 'schema') w.sub(before.schema, after.kind === 'schema' ? after.schema : true, path);
};

export const dependencies = (w: SchemaStep): void => {
  const { b, a } = w;
  if (!same(b.dependentRequired, a.dependentRequired)) {
    const bd = objectOrEmpty(b.dependentRequired);
    const ad = objectOrEmpty(a.dependentRequired);
    const base = keyPath(w.path, 'dependentRequired');
    for (const k of [...new Set([...Object.keys(bd), ...Object.keys(ad)])].sort()) {
      const before = new Set(stringList(bd[k]));
      const after = new Set(stringList(ad[k]));
      const added = [...after].filter((n) => !before.has(n));
      const removed = [...before].filter((n) => !after.has(n));
      if (added.length > 0) w.add('dependent-required-added', keyPath(base, k), `when '${k}' is present, now also required: ${added.join(', ')}`);
      if (removed.length > 0) w.add('dependent-required-removed', keyPath(base, k), `when '${k}' is present, no longer required: ${removed.join(', ')}`);
    }
  }
  if (!same(b.dependentSchemas, a.dependentSchemas)) {
    const bd = objectOrEmpty(b.dependentSchemas);
    const ad = objectOrEmpty(a.dependentSchemas);
    const base = keyPath(w.path, 'dependentSchemas');
    for (const k of [...new Set([...Object.keys(bd), ...Object.keys(ad)])].sort()) {
      const bs = bd[k];
      const as = ad[k];
      if (bs !== undefined && as !== undefined) w.sub(bs, as, keyPath(base, k));
      else if (as !== undefined) w.add('dependent-schema-added', keyPath(base, k), `dependentSchemas '${k}' added`);
      else w.add('dependent-schema-removed', keyPath(base, k), `dependentSchemas '${k}' removed`);
    }
  }
};
