/**
 * The vocabulary shared by schema-resources.ts (indexing a document's identifiers) and schema-normalise.ts (the copy
 * Ajv compiles): which keywords hold subschemas, URI resolution, the error type, and the Ajv work-arounds' markers.
 */
import { isPlainObject } from './json-path.ts';

/** The base URI of a document whose root has no `$id`. `.invalid` is reserved (RFC 2606): it names, never resolves. */
export const DOCUMENT_BASE = 'https://estate.invalid/schema.json';

/** Keywords whose value is a map of name -> subschema, an array of subschemas, or one subschema. */
export const MAPS = new Set(['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas', 'dependencies']);
export const ARRAYS = new Set(['allOf', 'anyOf', 'oneOf', 'prefixItems']);
export const SINGLES = new Set([
  'additionalProperties', 'items', 'contains', 'not', 'if', 'then', 'else', 'propertyNames', 'unevaluatedItems',
  'unevaluatedProperties', 'contentSchema',
]);
/** Not evaluated, so not copied into the normalised schema (anything they hold is reached through a reference). */
export const DROPPED = new Set(['$id', '$anchor', '$dynamicAnchor', '$defs', 'definitions', '$schema', '$comment', '$vocabulary']);

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

export const invalid = (message: string): never => {
  throw new SchemaResourceError('schema-invalid', message);
};

export type Schema = Record<string, unknown> | boolean;

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
export const needsAjvFix = (node: Record<string, unknown>): boolean =>
  (Array.isArray(node['enum']) && node['enum'].length === 0) || hasOwnProto(node['properties']);
/**
 * - Ajv drops a property named `__proto__` from `properties` (it never validates it): the copy says it as the
 *   `patternProperties` entry `^__proto__$`, which means the same for validation, `additionalProperties` and
 *   `unevaluatedProperties` (an own property `__proto__` of the arguments, as JSON.parse makes it, shadows the
 *   prototype accessor, so Ajv's `data[key]` reads it).
 */
export const hasOwnProto = (map: unknown): boolean => isPlainObject(map) && Object.prototype.hasOwnProperty.call(map, '__proto__');
export const PROTO_PATTERN = '^__proto__$';

/** `ref` resolved against `base` as [resource URI without fragment, fragment (decoded, without '#')]. */
export const resolveUri = (ref: string, base: string): [string, string] | undefined => {
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
