/**
 * Paths into JSON values and JSON Schemas: Estate's `$.a["b c"][3]` paths (SPEC §2), JSON pointers, local `$ref`
 * resolution, and where JSON Schema 2020-12 keeps its subschemas. Shared by the compiler, the validator and repair so
 * that all three agree on what a schema position is.
 */

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

export const ROOT_PATH = '$';

export const appendKey = (path: string, key: string): string =>
  IDENTIFIER.test(key) ? `${path}.${key}` : `${path}[${JSON.stringify(key)}]`;

export const appendIndex = (path: string, index: number): string => `${path}[${index}]`;

/** RFC 6901 unescaping of one pointer segment (most have nothing to unescape). */
const unescapeSegment = (segment: string): string => (segment.includes('~') ? segment.replace(/~1/g, '/').replace(/~0/g, '~') : segment);

/** `0`, or digits without a leading zero: a segment that may be an array index. */
const isIndexSegment = (segment: string): boolean => {
  const n = segment.length;
  if (n === 0 || (n > 1 && segment.charCodeAt(0) === 0x30)) return false;
  for (let i = 0; i < n; i++) {
    const c = segment.charCodeAt(i);
    if (c < 0x30 || c > 0x39) return false;
  }
  return true;
};

export const escapeSegment = (segment: string): string => segment.replace(/~/g, '~0').replace(/\//g, '~1');

export const parsePointer = (pointer: string): string[] =>
  pointer === '' ? [] : pointer.slice(1).split('/').map(unescapeSegment);

/**
 * An Ajv `instancePath` (a JSON pointer) as an Estate path. A segment like `3` is an index or a key depending on what
 * the value holds there, so the value is walked alongside.
 */
export const pointerToPath = (pointer: string, data: unknown): string => {
  let path = ROOT_PATH;
  let current: unknown = data;
  for (const segment of parsePointer(pointer)) {
    if (Array.isArray(current) && isIndexSegment(segment)) {
      const index = Number(segment);
      path = appendIndex(path, index);
      current = current[index];
    } else {
      path = appendKey(path, segment);
      current = isPlainObject(current) ? current[segment] : undefined;
    }
  }
  return path;
};

export const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * Resolve a local reference (`#` or `#/json/pointer`, URI-encoded as `$ref` values are) against the root schema.
 * Returns undefined when it points nowhere. Anchors and `$id`-relative references are not resolved here: a schema
 * using them is compiled in its normalised form (schema-resources.ts), where every reference is such a pointer.
 */
export const resolveLocalRef = (root: unknown, ref: string): unknown => {
  if (!ref.startsWith('#')) return undefined;
  const fragment = ref.slice(1);
  if (fragment === '') return root;
  if (!fragment.startsWith('/')) return undefined;
  let current: unknown = root;
  for (const raw of fragment.slice(1).split('/')) {
    let segment: string;
    try {
      segment = unescapeSegment(decodeURIComponent(raw));
    } catch {
      return undefined;
    }
    if (Array.isArray(current)) {
      if (!/^(0|[1-9][0-9]*)$/.test(segment)) return undefined;
      current = current[Number(segment)];
    } else if (isPlainObject(current) && Object.prototype.hasOwnProperty.call(current, segment)) {
      current = current[segment];
    } else {
      return undefined;
    }
  }
  return current;
};

/** Keywords whose value is a map of name -> subschema. */
const SUBSCHEMA_MAPS = ['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas'] as const;
/** Keywords whose value is an array of subschemas. */
const SUBSCHEMA_ARRAYS = ['allOf', 'anyOf', 'oneOf', 'prefixItems'] as const;
/** Keywords whose value is one subschema. */
const SUBSCHEMA_SINGLE = [
  'additionalProperties',
  'items',
  'contains',
  'not',
  'if',
  'then',
  'else',
  'propertyNames',
  'unevaluatedItems',
  'unevaluatedProperties',
  'contentSchema',
] as const;

export interface SubschemaVisit {
  schema: Record<string, unknown>;
  /** JSON pointer of this subschema from the root, e.g. `/properties/amount` (`` for the root). */
  pointer: string;
  /** How many subschemas enclose this one (0 for the root). */
  depth: number;
}

/**
 * Every object subschema, in a fixed order (root first, then keyword by keyword), found without recursion so that a
 * hostile deeply nested schema cannot overflow the stack. Boolean schemas are skipped: they hold no keywords. Values of
 * keywords that are not schema positions (`const`, `enum`, `default`, `examples`, unknown keywords) are not entered.
 */
export function* subschemas(root: unknown): Generator<SubschemaVisit> {
  const stack: SubschemaVisit[] = [];
  if (isPlainObject(root)) stack.push({ schema: root, pointer: '', depth: 0 });
  while (stack.length > 0) {
    const visit = stack.pop() as SubschemaVisit;
    yield visit;
    const children: SubschemaVisit[] = [];
    for (const child of childSchemas(visit.schema)) {
      children.push({ schema: child.schema, pointer: visit.pointer + child.pointer, depth: visit.depth + 1 });
    }
    for (let i = children.length - 1; i >= 0; i--) stack.push(children[i] as SubschemaVisit);
  }
}

/** The direct object subschemas of one schema, with their relative pointers. */
export const childSchemas = (schema: Record<string, unknown>): SubschemaVisit[] => {
  const out: SubschemaVisit[] = [];
  const push = (value: unknown, pointer: string): void => {
    if (isPlainObject(value)) out.push({ schema: value, pointer, depth: 1 });
  };
  for (const keyword of SUBSCHEMA_MAPS) {
    const map = schema[keyword];
    if (isPlainObject(map)) for (const [name, sub] of Object.entries(map)) push(sub, `/${keyword}/${escapeSegment(name)}`);
  }
  for (const keyword of SUBSCHEMA_ARRAYS) {
    const list = schema[keyword];
    if (Array.isArray(list)) list.forEach((sub, i) => push(sub, `/${keyword}/${i}`));
  }
  for (const keyword of SUBSCHEMA_SINGLE) {
    const sub = schema[keyword];
    // `items` as an array is the pre-2020 tuple form; Ajv 2020 refuses it, but walk it so nothing hides inside.
    if (Array.isArray(sub)) sub.forEach((s, i) => push(s, `/${keyword}/${i}`));
    else push(sub, `/${keyword}`);
  }
  const dependencies = schema['dependencies'];
  if (isPlainObject(dependencies)) {
    for (const [name, sub] of Object.entries(dependencies)) push(sub, `/dependencies/${escapeSegment(name)}`);
  }
  return out;
};
