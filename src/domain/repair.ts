/**
 * Deterministic argument repair (SPEC §2 "Repair"): one depth-first pass through the declared `properties`; at each
 * object drop what `additionalProperties: false` disallows, coerce strings the declared type cannot be, fill defaults.
 * Each step is idempotent and they touch disjoint keys, so the whole is: repair(repair(x)) == repair(x).
 * Values failing pattern/enum/const/bounds/format are never touched: changing them would be guessing.
 */
import { linearRegExp } from './schema-compiler.ts';
import { appendKey, isPlainObject, resolveLocalRef, ROOT_PATH } from './json-path.ts';
import { MAX_ARGUMENT_DEPTH, type CompiledSchema, type ValidationError } from './validate.ts';

export interface RepairChange {
  path: string;
  action: 'dropped' | 'coerced' | 'defaulted';
}

export interface RepairResult {
  value: unknown;
  changes: RepairChange[];
  /** What still fails after repair, as `CompiledSchema.validate` reports it. */
  errors: ValidationError[];
}

const INTEGER = /^-?(0|[1-9][0-9]*)$/;
/** The JSON number grammar (RFC 8259 §6): no spaces, no leading `+`, no leading zeros, no bare `.5` or `5.`. */
const NUMBER = /^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$/;

const hasOwn = (o: object, key: string): boolean => Object.prototype.hasOwnProperty.call(o, key);

/**
 * A keyword of a schema, looking through local `$ref`s when the schema itself does not say it (a property declared as
 * `{ "$ref": "#/$defs/money" }` has the type and properties of `money`). Cycles end the search.
 */
const lookup = (root: unknown, schema: unknown, keyword: string): unknown => {
  const seen = new Set<object>();
  let current = schema;
  while (isPlainObject(current) && !seen.has(current)) {
    if (hasOwn(current, keyword)) return current[keyword];
    seen.add(current);
    const ref = current['$ref'];
    current = typeof ref === 'string' ? resolveLocalRef(root, ref) : undefined;
  }
  return undefined;
};

const declaredTypes = (type: unknown): string[] =>
  typeof type === 'string' ? [type] : Array.isArray(type) ? type.filter((t): t is string => typeof t === 'string') : [];

/**
 * The coerced value, or undefined when the string stays as it is. A string of digits past 2^53 is left as it is: its
 * number would be another one ("9007199254740993" → 9007199254740992), and a repair that changes a value is a guess.
 */
const coerce = (types: string[], s: string): number | boolean | undefined => {
  if (types.length === 0 || types.includes('string')) return undefined;
  if (INTEGER.test(s) && !Number.isSafeInteger(Number(s))) return undefined;
  if (types.includes('integer') && INTEGER.test(s)) return Number(s);
  if (types.includes('number') && NUMBER.test(s)) {
    const n = Number(s);
    if (!Number.isFinite(n)) return undefined; // `1e999` is valid grammar but no JSON value
    // `1e-400` underflows to 0: a non-zero amount or tolerance would reach the handler as zero, another value.
    if (n === 0 && /[1-9]/.test(s.split(/[eE]/)[0] ?? '')) return undefined;
    return n;
  }
  if (types.includes('boolean') && (s === 'true' || s === 'false')) return s === 'true';
  return undefined;
};

/** A plain data write: an assignment to a key named `__proto__` would set the object's prototype instead. */
const setOwn = (o: Record<string, unknown>, key: string, value: unknown): void => {
  Object.defineProperty(o, key, { value, writable: true, enumerable: true, configurable: true });
};

const compareKeys = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

const repairObject = (
  root: unknown,
  schema: unknown,
  value: unknown,
  path: string,
  changes: RepairChange[],
  depth: number,
): unknown => {
  if (!isPlainObject(value) || depth >= MAX_ARGUMENT_DEPTH) return value;
  const declared = lookup(root, schema, 'properties');
  const properties: Record<string, unknown> = isPlainObject(declared) ? declared : {};
  // Copy on write: the input is never mutated, and an object needing no repair is returned as it came.
  let result: Record<string, unknown> = value;
  const writable = (): Record<string, unknown> => {
    if (result === value) result = { ...value };
    return result;
  };

  if (lookup(root, schema, 'additionalProperties') === false) {
    const patternProperties = lookup(root, schema, 'patternProperties');
    const patterns = isPlainObject(patternProperties) ? Object.keys(patternProperties).map(linearRegExp) : [];
    // Sorted so that the list of changes does not depend on the key order of the input.
    for (const key of Object.keys(value).sort(compareKeys)) {
      if (hasOwn(properties, key) || patterns.some((re) => re.test(key))) continue;
      delete writable()[key];
      changes.push({ path: appendKey(path, key), action: 'dropped' });
    }
  }

  for (const [name, propertySchema] of Object.entries(properties)) {
    if (!hasOwn(result, name)) continue;
    const current = result[name];
    if (typeof current !== 'string') continue;
    const coerced = coerce(declaredTypes(lookup(root, propertySchema, 'type')), current);
    if (coerced === undefined) continue;
    setOwn(writable(), name, coerced);
    changes.push({ path: appendKey(path, name), action: 'coerced' });
  }

  for (const [name, propertySchema] of Object.entries(properties)) {
    if (hasOwn(result, name)) continue;
    const fallback = lookup(root, propertySchema, 'default');
    if (fallback === undefined) continue;
    // A default written as a string for a non-string type (`default: "5"`) is coerced as it lands: were it left for the
    // next pass to coerce, repair would not be idempotent.
    const coerced =
      typeof fallback === 'string' ? coerce(declaredTypes(lookup(root, propertySchema, 'type')), fallback) : undefined;
    setOwn(writable(), name, coerced ?? structuredClone(fallback));
    changes.push({ path: appendKey(path, name), action: 'defaulted' });
  }

  for (const [name, propertySchema] of Object.entries(properties)) {
    if (!hasOwn(result, name)) continue;
    const current = result[name];
    const repaired = repairObject(root, propertySchema, current, appendKey(path, name), changes, depth + 1);
    if (repaired !== current) setOwn(writable(), name, repaired);
  }
  return result;
};

/** Repair `args` against a compiled schema. Never mutates its input; unchanged parts are shared with it. */
export function repair(compiled: CompiledSchema, args: unknown): RepairResult {
  const changes: RepairChange[] = [];
  const value = repairObject(compiled.schema, compiled.schema, args, ROOT_PATH, changes, 0);
  return { value, changes, errors: compiled.validate(value) };
}
