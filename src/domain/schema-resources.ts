/**
 * JSON Schema 2020-12 identification inside ONE document (SPEC §1): embedded resources (`$id`), `$anchor`,
 * `$dynamicAnchor`, and the references that use them (`$ref`, `$dynamicRef`). Nothing here fetches anything: a
 * reference resolves to a subschema of the same document or it is `remote` (the compiler refuses it as `remote-ref`).
 *
 * Ajv resolves `$id`/`$anchor` through an instance-wide registry (one tool's `$id` would be visible to the next) and
 * gets `$dynamicRef` wrong in most of the suite's cases. So a schema that uses any of them is NORMALISED before Ajv
 * sees it: every reference becomes a plain `#/$defs/...` pointer into a copy of the schema without `$id`, `$anchor`,
 * `$dynamicAnchor` or `$dynamicRef`, where each subschema reachable by reference is emitted once per dynamic scope that
 * can reach it. A `$dynamicRef` resolves (2020-12 §8.2.3.2) to the OUTERMOST resource of the dynamic scope that
 * defines the same `$dynamicAnchor`, and "outermost" only ever changes when a resource is entered for the first time,
 * so the scope that matters is a finite map (anchor name -> subschema): the copies are finite, and bounded below.
 * The normalised copy is what Ajv compiles; the published schema is kept, and served, as published.
 */
import { isPlainObject } from './json-path.ts';
import { UNEVALUATED_ITEMS_KEYWORD } from './unevaluated-items.ts';

/** The base URI of a document whose root has no `$id`. `.invalid` is reserved (RFC 2606): it names, never resolves. */
export const DOCUMENT_BASE = 'https://estate.invalid/schema.json';

/** `$anchor` and `$dynamicAnchor` values (2020-12 core §8.2.2). */
const ANCHOR = /^[A-Za-z_][-A-Za-z0-9._]*$/;

/** Keywords whose value is a map of name -> subschema, an array of subschemas, or one subschema. */
const MAPS = new Set(['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas', 'dependencies']);
const ARRAYS = new Set(['allOf', 'anyOf', 'oneOf', 'prefixItems']);
const SINGLES = new Set([
  'additionalProperties', 'items', 'contains', 'not', 'if', 'then', 'else', 'propertyNames', 'unevaluatedItems',
  'unevaluatedProperties', 'contentSchema',
]);
/** Not evaluated, so not copied into the normalised schema (anything they hold is reached through a reference). */
const DROPPED = new Set(['$id', '$anchor', '$dynamicAnchor', '$defs', 'definitions', '$schema', '$comment', '$vocabulary']);

/** Most subschema copies a normalised schema may hold: the dynamic-scope copies must not grow without bound. */
export const MAX_NORMALISED_COPIES = 5_000;

export class SchemaResourceError extends Error {
  constructor(
    readonly code: 'remote-ref' | 'schema-invalid',
    message: string,
  ) {
    super(message);
  }
}

const invalid = (message: string): never => {
  throw new SchemaResourceError('schema-invalid', message);
};

type Schema = Record<string, unknown> | boolean;

/**
 * What Ajv gets wrong and the normalised copy says differently (each proven by the vendored JSON Schema Test Suite):
 * - in a document using `unevaluated*`, Ajv skips an `if` without `then`/`else` altogether (so what it evaluated is
 *   unseen): a lone `if` gets `then: {not: false}` (always valid, but not a schema Ajv skips); and with
 *   `unevaluatedProperties`, Ajv counts the properties `if` evaluated even when `if` fails: the copy's `if` is
 *   `{anyOf: [<if>]}`, whose annotations Ajv keeps only when it passes (not done for items, where Ajv's anyOf loses
 *   them). Messages do not change: `if` itself never reports;
 * - Ajv cannot see items evaluated by `contains` (or, in some cases, inside `anyOf`/`if`): `unevaluatedItems` is said
 *   as UNEVALUATED_ITEMS_KEYWORD, implemented in unevaluated-items.ts;
 * - `enum: []` (valid 2020-12: nothing is allowed) does not compile in Ajv: the copy says it with EMPTY_ENUM_KEYWORD.
 */
export const EMPTY_ENUM_KEYWORD = 'x-estate-empty-enum';
const needsAjvFix = (node: Record<string, unknown>): boolean =>
  (Array.isArray(node['enum']) && node['enum'].length === 0) || hasOwnProto(node['properties']);
/**
 * - Ajv drops a property named `__proto__` from `properties` (it never validates it): the copy says it as the
 *   `patternProperties` entry `^__proto__$`, which means the same for validation, `additionalProperties` and
 *   `unevaluatedProperties` (an own property `__proto__` of the arguments, as JSON.parse makes it, shadows the
 *   prototype accessor, so Ajv's `data[key]` reads it).
 */
const hasOwnProto = (map: unknown): boolean => isPlainObject(map) && Object.prototype.hasOwnProperty.call(map, '__proto__');
const PROTO_PATTERN = '^__proto__$';

/** `ref` resolved against `base` as [resource URI without fragment, fragment (decoded, without '#')]. */
const resolveUri = (ref: string, base: string): [string, string] | undefined => {
  let url: URL;
  try {
    url = new URL(ref, base);
  } catch {
    return undefined;
  }
  const raw = url.hash.startsWith('#') ? url.hash.slice(1) : url.hash;
  url.hash = '';
  let fragment: string;
  try {
    fragment = decodeURIComponent(raw);
  } catch {
    return undefined;
  }
  return [url.href.replace(/#$/, ''), fragment];
};

const unescapePointer = (segment: string): string => segment.replace(/~1/g, '/').replace(/~0/g, '~');

const walkPointer = (root: unknown, pointer: string): unknown => {
  let current = root;
  for (const segment of pointer.slice(1).split('/').map(unescapePointer)) {
    if (Array.isArray(current)) {
      if (!/^(0|[1-9][0-9]*)$/.test(segment)) return undefined;
      current = current[Number(segment)];
    } else if (isPlainObject(current) && Object.prototype.hasOwnProperty.call(current, segment)) {
      current = current[segment];
    } else return undefined;
  }
  return current;
};

export interface SchemaResources {
  /**
   * Whether the document needs normalising for Ajv: it uses `$id`, an anchor, `$dynamicRef`, a non-pointer reference,
   * or something Ajv gets wrong (see the comment above EMPTY_ENUM_KEYWORD).
   */
  readonly needsNormalising: boolean;
  /** Whether it uses `$id`, an anchor, `$dynamicRef` or a non-pointer reference (what the classifier must resolve). */
  readonly usesIdentifiers: boolean;
  /** Every `$id`, `$anchor` and `$dynamicAnchor`, as `<keyword> <value> at #<pointer>`, sorted. */
  readonly identifiers: string[];
  /** Every `$ref`/`$dynamicRef` that does not resolve inside the document, with where it is. */
  readonly remote: { keyword: string; ref: unknown; pointer: string; local: boolean }[];
  /**
   * The normalised copy (see the module comment). Throws SchemaResourceError. `ajvFixes: false` leaves out the
   * rewrites that only work around Ajv (for the classifier, which compares what a schema says).
   */
  normalise(options?: { ajvFixes?: boolean }): Record<string, unknown>;
}

/**
 * Index a schema document: its resources, anchors and dynamic anchors, and where each reference points. Throws
 * SchemaResourceError('schema-invalid') for a malformed `$id`/anchor or a URI two resources (or anchors) both claim.
 */
export function indexSchemaResources(root: Record<string, unknown>): SchemaResources {
  const resources = new Map<string, Schema>();
  const anchors = new Map<string, Schema>();
  const dynamicAnchors = new Map<string, Map<string, Record<string, unknown>>>();
  const resourceOf = new WeakMap<object, string>();
  const references: { schema: Record<string, unknown>; keyword: string; ref: unknown; base: string; pointer: string }[] = [];
  let needsNormalising = false;
  let usesIdentifiers = false;
  const identifiers: string[] = [];
  let hasIf = false;
  let hasUnevaluatedProperties = false;
  let hasUnevaluatedItems = false;

  const stack: { node: unknown; base: string; pointer: string }[] = [];
  let rootBase = DOCUMENT_BASE;
  if (root['$id'] !== undefined) {
    // The root's own `$id` is resolved against the document base like any other.
    rootBase = '';
  }
  stack.push({ node: root, base: rootBase, pointer: '' });
  while (stack.length > 0) {
    const { node, base: parentBase, pointer } = stack.pop() as { node: unknown; base: string; pointer: string };
    if (!isPlainObject(node)) continue;
    let base = parentBase === '' ? DOCUMENT_BASE : parentBase;
    const id = node['$id'];
    if (id !== undefined) {
      usesIdentifiers = true;
      identifiers.push(`$id ${JSON.stringify(id)} at #${pointer}`);
      if (typeof id !== 'string') invalid(`$id at #${pointer} must be a string`);
      const resolved = resolveUri(id as string, base);
      if (resolved === undefined) invalid(`$id ${JSON.stringify(id)} at #${pointer} is not a URI reference`);
      const [uri, fragment] = resolved as [string, string];
      if (fragment !== '') invalid(`$id ${JSON.stringify(id)} at #${pointer} must not have a fragment`);
      if (resources.has(uri)) invalid(`$id ${JSON.stringify(id)} at #${pointer}: ${uri} names two schema resources`);
      base = uri;
    }
    if (pointer === '' || id !== undefined) resources.set(base, node);
    resourceOf.set(node, base);
    for (const keyword of ['$anchor', '$dynamicAnchor']) {
      const name = node[keyword];
      if (name === undefined) continue;
      usesIdentifiers = true;
      identifiers.push(`${keyword} ${JSON.stringify(name)} at #${pointer}`);
      if (typeof name !== 'string' || !ANCHOR.test(name)) {
        invalid(`${keyword} ${JSON.stringify(name)} at #${pointer} is not a valid anchor name`);
      }
      const key = `${base}#${name as string}`;
      const existing = anchors.get(key);
      if (existing !== undefined && existing !== node) invalid(`${keyword} "${name as string}" at #${pointer} is defined twice in ${base}`);
      anchors.set(key, node);
      if (keyword === '$dynamicAnchor') {
        let names = dynamicAnchors.get(base);
        if (names === undefined) dynamicAnchors.set(base, (names = new Map()));
        names.set(name as string, node);
      }
    }
    if (needsAjvFix(node)) needsNormalising = true;
    if (node['if'] !== undefined) hasIf = true;
    if (node['unevaluatedProperties'] !== undefined) hasUnevaluatedProperties = true;
    if (node['unevaluatedItems'] !== undefined) hasUnevaluatedItems = true;
    for (const keyword of ['$ref', '$dynamicRef']) {
      const ref = node[keyword];
      if (ref === undefined) continue;
      if (keyword === '$dynamicRef' || typeof ref !== 'string' || !(ref === '#' || ref.startsWith('#/'))) {
        usesIdentifiers = true;
      }
      references.push({ schema: node, keyword, ref, base, pointer });
    }
    const children: { node: unknown; base: string; pointer: string }[] = [];
    for (const [keyword, value] of Object.entries(node)) {
      if (MAPS.has(keyword) && isPlainObject(value)) {
        for (const [name, sub] of Object.entries(value)) {
          children.push({ node: sub, base, pointer: `${pointer}/${keyword}/${name.replace(/~/g, '~0').replace(/\//g, '~1')}` });
        }
      } else if ((ARRAYS.has(keyword) || SINGLES.has(keyword)) && Array.isArray(value)) {
        value.forEach((sub, i) => children.push({ node: sub, base, pointer: `${pointer}/${keyword}/${i}` }));
      } else if (SINGLES.has(keyword)) {
        children.push({ node: value, base, pointer: `${pointer}/${keyword}` });
      }
    }
    for (let i = children.length - 1; i >= 0; i--) stack.push(children[i] as { node: unknown; base: string; pointer: string });
  }

  const wrapIf = hasIf && hasUnevaluatedProperties;
  const loneIf = hasIf && (hasUnevaluatedProperties || hasUnevaluatedItems);
  if (loneIf || usesIdentifiers || hasUnevaluatedItems) needsNormalising = true;

  /** The subschema a reference names, or undefined when it is not in this document. */
  const lookupCache = new Map<string, Schema | undefined>();
  const lookup = (ref: unknown, base: string): Schema | undefined => {
    if (typeof ref !== 'string') return undefined;
    const cacheKey = `${base}\u0000${ref}`;
    if (lookupCache.has(cacheKey)) return lookupCache.get(cacheKey);
    const found = lookupUncached(ref, base);
    lookupCache.set(cacheKey, found);
    return found;
  };
  const lookupUncached = (ref: string, base: string): Schema | undefined => {
    const resolved = resolveUri(ref, base);
    if (resolved === undefined) return undefined;
    const [uri, fragment] = resolved;
    const resource = resources.get(uri);
    if (resource === undefined) return undefined;
    let target: unknown;
    if (fragment === '') target = resource;
    else if (fragment.startsWith('/')) target = walkPointer(resource, fragment);
    else target = anchors.get(`${uri}#${fragment}`);
    return typeof target === 'boolean' || isPlainObject(target) ? target : undefined;
  };

  /** A reference into a resource of this document that names nothing there (`#/$defs/missing`) is not remote. */
  const isLocal = (ref: unknown, base: string): boolean => {
    const resolved = typeof ref === 'string' ? resolveUri(ref, base) : undefined;
    return resolved !== undefined && resources.has(resolved[0]);
  };
  const remote = references
    .filter((r) => lookup(r.ref, r.base) === undefined)
    .map(({ keyword, ref, pointer, base }) => ({ keyword, ref, pointer, local: isLocal(ref, base) }));

  const normalise = (options: { ajvFixes?: boolean } = {}): Record<string, unknown> => {
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

  return { needsNormalising, usesIdentifiers, identifiers: identifiers.sort(), remote, normalise };
}
