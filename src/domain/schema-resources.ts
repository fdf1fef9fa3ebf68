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
import { normaliseSchema } from './schema-normalise.ts';
import { DOCUMENT_BASE, ARRAYS, MAPS, SINGLES, invalid, needsAjvFix, resolveUri, type Schema } from './schema-resource-parts.ts';

export { DOCUMENT_BASE, EMPTY_ENUM_KEYWORD, MAX_NORMALISED_COPIES, SchemaResourceError } from './schema-resource-parts.ts';

/** `$anchor` and `$dynamicAnchor` values (2020-12 core §8.2.2). */
const ANCHOR = /^[A-Za-z_][-A-Za-z0-9._]*$/;

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

  const normalise = (options: { ajvFixes?: boolean } = {}): Record<string, unknown> =>
    normaliseSchema({ root, remote, lookup, resourceOf, dynamicAnchors, loneIf, wrapIf }, options);

  return { needsNormalising, usesIdentifiers, identifiers: identifiers.sort(), remote, normalise };
}
