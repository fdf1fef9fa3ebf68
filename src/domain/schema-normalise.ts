/**
 * The normalised copy of a schema document that Ajv compiles (see schema-resources.ts for why): every reference a
 * plain `#/$defs/...` pointer, each subschema reachable by reference emitted once per dynamic scope that can reach it,
 * bounded by MAX_NORMALISED_COPIES, and (unless `ajvFixes: false`) Ajv's known mistakes worked around.
 */
import { isPlainObject } from './json-path.ts';
import {
  ARRAYS,
  DOCUMENT_BASE,
  DROPPED,
  EMPTY_ENUM_KEYWORD,
  MAPS,
  MAX_NORMALISED_COPIES,
  PROTO_PATTERN,
  SINGLES,
  SchemaResourceError,
  hasOwnProto,
  invalid,
  resolveUri,
  type Schema,
} from './schema-resource-parts.ts';
import { UNEVALUATED_ITEMS_KEYWORD } from './unevaluated-items.ts';

/** What indexing a document found, as normalising needs it. */
export interface ResourceIndex {
  readonly root: Record<string, unknown>;
  readonly remote: readonly { keyword: string; ref: unknown; pointer: string }[];
  /** The subschema a reference names from `base`, or undefined when it is not in this document. */
  lookup(ref: unknown, base: string): Schema | undefined;
  /** The resource (base URI) each subschema belongs to. */
  readonly resourceOf: WeakMap<object, string>;
  /** Per resource, its `$dynamicAnchor` names and the subschemas defining them. */
  readonly dynamicAnchors: Map<string, Map<string, Record<string, unknown>>>;
  /** Ajv work-arounds the document needs (see the comment above EMPTY_ENUM_KEYWORD). */
  readonly loneIf: boolean;
  readonly wrapIf: boolean;
}

export const normaliseSchema = (index: ResourceIndex, options: { ajvFixes?: boolean } = {}): Record<string, unknown> => {
  const { root, remote, lookup, resourceOf, dynamicAnchors, loneIf, wrapIf } = index;
  const ajvFixes = options.ajvFixes !== false;
  if (remote.length > 0) {
    const first = remote[0] as { keyword: string; ref: unknown; pointer: string };
    throw new SchemaResourceError('remote-ref', `${first.keyword} ${JSON.stringify(first.ref)} at #${first.pointer} does not resolve inside the schema`);
  }
  /** The dynamic scope that matters: anchor name -> the outermost subschema defining it. */
  type Scope = Map<string, Record<string, unknown>>;
  const ids = new WeakMap<object, number>();
  let nextId = 0;
  const idOf = (o: object): number => {
    let n = ids.get(o);
    if (n === undefined) ids.set(o, (n = nextId++));
    return n;
  };
  // Scopes are interned (one object per distinct content) and their keys and transitions cached: a hostile schema
  // reaches the copy bound in well under a second instead of recomputing them per reference.
  const keys = new WeakMap<Scope, string>();
  const interned = new Map<string, Scope>();
  const transitions = new WeakMap<Scope, Map<string, Scope>>();
  const scopeKey = (scope: Scope): string => {
    let key = keys.get(scope);
    if (key === undefined) {
      key = [...scope.entries()].map(([name, s]) => `${name}=${idOf(s)}`).sort().join(',');
      keys.set(scope, key);
    }
    return key;
  };
  const intern = (scope: Scope): Scope => {
    const key = scopeKey(scope);
    const existing = interned.get(key);
    if (existing !== undefined) return existing;
    interned.set(key, scope);
    return scope;
  };
  const enter = (scope: Scope, resource: string): Scope => {
    let byResource = transitions.get(scope);
    if (byResource === undefined) transitions.set(scope, (byResource = new Map()));
    const known = byResource.get(resource);
    if (known !== undefined) return known;
    const defined = dynamicAnchors.get(resource);
    let next: Scope | undefined;
    for (const [name, s] of defined ?? []) {
      if (scope.has(name)) continue;
      next ??= new Map(scope);
      next.set(name, s);
    }
    const result = next === undefined ? scope : intern(next);
    byResource.set(resource, result);
    return result;
  };
  const defs: Record<string, unknown> = {};
  const memo = new Map<string, string>();
  let copies = 0;

  const refTo = (target: Schema, scope: Scope): string => {
    if (typeof target === 'boolean') {
      const key = `bool:${String(target)}`;
      let name = memo.get(key);
      if (name === undefined) {
        name = `estate-${memo.size}`;
        memo.set(key, name);
        defs[name] = target;
      }
      return `#/$defs/${name}`;
    }
    const resource = resourceOf.get(target) ?? DOCUMENT_BASE;
    const entered = enter(scope, resource);
    const key = `${idOf(target)}|${scopeKey(entered)}`;
    let name = memo.get(key);
    if (name === undefined) {
      if (++copies > MAX_NORMALISED_COPIES) {
        invalid(`resolving its references takes more than ${MAX_NORMALISED_COPIES} subschema copies`);
      }
      name = `estate-${memo.size}`;
      memo.set(key, name);
      // Emitted later, from the queue: following references by recursion could overflow the stack.
      pending.push({ name, target, resource, scope: entered });
    }
    return `#/$defs/${name}`;
  };
  const pending: { name: string; target: Record<string, unknown>; resource: string; scope: Scope }[] = [];

  const emit = (node: unknown, parentResource: string, parentScope: Scope): unknown => {
    if (!isPlainObject(node)) return node;
    const resource = resourceOf.get(node) ?? parentResource;
    const scope = resource === parentResource ? parentScope : enter(parentScope, resource);
    const out: Record<string, unknown> = {};
    const refs: string[] = [];
    for (const [keyword, value] of Object.entries(node)) {
      if (DROPPED.has(keyword)) continue;
      if (keyword === '$ref') {
        refs.push(refTo(lookup(value, resource) as Schema, scope));
      } else if (keyword === '$dynamicRef') {
        const initial = lookup(value, resource) as Schema;
        const fragment = (resolveUri(value as string, resource) as [string, string])[1];
        // Only a fragment that a `$dynamicAnchor` created at the initial target makes the reference dynamic.
        const dynamic = isPlainObject(initial) && fragment !== '' && initial['$dynamicAnchor'] === fragment;
        refs.push(refTo(dynamic ? (scope.get(fragment) ?? initial) : initial, scope));
      } else if (MAPS.has(keyword) && isPlainObject(value)) {
        const map: Record<string, unknown> = {};
        for (const [name, sub] of Object.entries(value)) {
          // defineProperty: a property named `__proto__` must stay a property, not become the map's prototype.
          Object.defineProperty(map, name, { value: emit(sub, resource, scope), enumerable: true, writable: true, configurable: true });
        }
        out[keyword] = map;
      } else if ((ARRAYS.has(keyword) || SINGLES.has(keyword)) && Array.isArray(value)) {
        out[keyword] = value.map((sub) => emit(sub, resource, scope));
      } else if (SINGLES.has(keyword)) {
        out[keyword] = emit(value, resource, scope);
      } else {
        Object.defineProperty(out, keyword, { value, enumerable: true, writable: true, configurable: true });
      }
    }
    if (!ajvFixes) return finishRefs(out, refs);
    const properties = out['properties'];
    if (hasOwnProto(properties)) {
      const { ['__proto__']: protoSchema, ...rest } = Object.fromEntries(Object.entries(properties as object)) as Record<string, unknown>;
      const copy: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(rest)) copy[k] = v;
      out['properties'] = copy;
      const patterns = isPlainObject(out['patternProperties']) ? { ...out['patternProperties'] } : {};
      patterns[PROTO_PATTERN] = patterns[PROTO_PATTERN] === undefined ? protoSchema : { allOf: [patterns[PROTO_PATTERN], protoSchema] };
      out['patternProperties'] = patterns;
    }
    if (out['if'] !== undefined) {
      if (loneIf && out['then'] === undefined && out['else'] === undefined) out['then'] = { not: false };
      if (wrapIf) out['if'] = { anyOf: [out['if']] };
    }
    if (out['unevaluatedItems'] !== undefined) {
      out[UNEVALUATED_ITEMS_KEYWORD] = out['unevaluatedItems'];
      delete out['unevaluatedItems'];
    }
    if (Array.isArray(out['enum']) && out['enum'].length === 0) {
      delete out['enum'];
      out[EMPTY_ENUM_KEYWORD] = true;
    }
    return finishRefs(out, refs);
  };
  const finishRefs = (out: Record<string, unknown>, refs: string[]): Record<string, unknown> => {
    if (refs.length > 0) out['$ref'] = refs[0];
    if (refs.length > 1) {
      const allOf = Array.isArray(out['allOf']) ? out['allOf'] : [];
      out['allOf'] = [...allOf, { $ref: refs[1] }];
    }
    return out;
  };

  const rootResource = resourceOf.get(root) ?? DOCUMENT_BASE;
  const normalised = emit(root, rootResource, enter(intern(new Map()), rootResource)) as Record<string, unknown>;
  for (let i = 0; i < pending.length; i++) {
    const job = pending[i] as (typeof pending)[number];
    defs[job.name] = emit(job.target, job.resource, job.scope);
  }
  if (Object.keys(defs).length > 0) normalised['$defs'] = defs;
  return normalised;
};
