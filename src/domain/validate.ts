/**
 * Argument validation (SPEC §2 "Validation"). Ajv decides validity; this module only turns Ajv's errors into Estate's
 * paths and messages, applies the one-error-per-type-mismatch rule, collapses combinator branches, and sorts, so the
 * text is byte-identical whatever the key order of the input.
 */
import type { ErrorObject, ValidateFunction } from 'ajv/dist/2020.js';
import type { JsonObject } from './types.ts';
import { UNEVALUATED_ITEMS_KEYWORD, type WrappedItemError } from './unevaluated-items.ts';
import { appendKey, childSchemas, isPlainObject, pointerToPath, resolveLocalRef } from './json-path.ts';
import { jsonTypeOf, word, type ValidationError } from './validation-wording.ts';

export {
  MAX_ENUM_VALUES_SHOWN,
  MAX_ERROR_LINE_CHARS,
  MAX_ERROR_LINES,
  MAX_QUOTED_CHARS,
  formatErrors,
  jsonTypeOf,
  type ValidationError,
} from './validation-wording.ts';

export const MAX_ARGUMENT_BYTES = 1024 * 1024;
export const MAX_ARGUMENT_DEPTH = 64;

export interface CompiledSchema {
  readonly schema: JsonObject;
  /** Errors sorted by (path, message) in code-unit order; empty when valid. */
  validate(value: unknown): ValidationError[];
}

// ---------------------------------------------------------------------------------------------------------------------
// Limits

/** UTF-8 length of `JSON.stringify(s)`, without building it. */
const jsonStringBytes = (s: string): number => {
  let n = 2;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 0x22 || c === 0x5c) n += 2;
    else if (c < 0x20) n += c === 0x08 || c === 0x09 || c === 0x0a || c === 0x0c || c === 0x0d ? 2 : 6;
    else if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff) {
      const next = s.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        n += 4;
        i++;
      } else n += 6; // a lone surrogate is written as \udXXX
    } else if (c >= 0xdc00 && c <= 0xdfff) n += 6;
    else n += 3;
  }
  return n;
};

/**
 * Size (UTF-8 bytes of the JSON text) and depth (containers, the root object being level 1) limits, checked before
 * validation. The walk is iterative: a 100,000-deep array must be refused, not overflow the stack. When both limits are
 * broken the depth error wins, so the answer does not depend on key order.
 */
export function checkArgumentLimits(args: unknown): ValidationError | null {
  const tooDeep: ValidationError = { path: '$', message: `arguments nested deeper than ${MAX_ARGUMENT_DEPTH} levels` };
  const values: unknown[] = [args];
  const depths: number[] = [0];
  let bytes = 0;
  let tooBig = false;
  while (values.length > 0) {
    const value = values.pop();
    const depth = depths.pop() as number;
    if (value === null || typeof value === 'boolean') bytes += value === false ? 5 : 4;
    else if (typeof value === 'number') bytes += Number.isFinite(value) ? String(value).length : 4;
    else if (typeof value === 'string') {
      if (!tooBig) bytes += jsonStringBytes(value);
    } else if (Array.isArray(value)) {
      if (depth + 1 > MAX_ARGUMENT_DEPTH) return tooDeep;
      bytes += 2 + Math.max(0, value.length - 1);
      for (let i = value.length - 1; i >= 0; i--) {
        values.push(value[i] === undefined ? null : value[i]);
        depths.push(depth + 1);
      }
    } else if (typeof value === 'object') {
      if (depth + 1 > MAX_ARGUMENT_DEPTH) return tooDeep;
      let members = 0;
      for (const key of Object.keys(value)) {
        const member = (value as Record<string, unknown>)[key];
        if (member === undefined) continue;
        members++;
        if (!tooBig) bytes += jsonStringBytes(key) + 1;
        values.push(member);
        depths.push(depth + 1);
      }
      bytes += 2 + Math.max(0, members - 1);
    }
    if (bytes > MAX_ARGUMENT_BYTES) tooBig = true;
  }
  return tooBig ? { path: '$', message: `arguments exceed ${MAX_ARGUMENT_BYTES} bytes` } : null;
}

// ---------------------------------------------------------------------------------------------------------------------
// Compiled schemas

/**
 * Wrap an Ajv validate function (compiled with allErrors and verbose) as Estate's CompiledSchema. The valid path is one
 * call into Ajv; errors are mapped only when there are some. `compiled` is the schema Ajv compiled when it is not
 * `schema` itself (the normalised form of one using `$id`, anchors or `$dynamicRef`): Ajv's errors point into it.
 */
export function createCompiledSchema(schema: JsonObject, validateFn: ValidateFunction, compiled: JsonObject = schema): CompiledSchema {
  // Per combinator (its parent schema object and keyword), the subschemas its branches can reach; built on first use.
  const reachableCache = new WeakMap<object, Map<string, Set<object>>>();
  const reachable = (parentSchema: unknown, keyword: string): Set<object> => {
    if (!isPlainObject(parentSchema)) return new Set();
    let perParent = reachableCache.get(parentSchema);
    if (perParent === undefined) {
      perParent = new Map();
      reachableCache.set(parentSchema, perParent);
    }
    let set = perParent.get(keyword);
    if (set === undefined) {
      set = reachableFrom(compiled, parentSchema[keyword]);
      perParent.set(keyword, set);
    }
    return set;
  };
  const mapOneHere = rememberingMapOne();
  return {
    schema,
    validate(value: unknown): ValidationError[] {
      try {
        if (validateFn(value) === true) return [];
      } catch (e) {
        // A schema published before in-place $ref cycles were refused (ref-cycles.ts) recurses without end: an answer
        // about the arguments, never an internal error.
        if (e instanceof RangeError) return [{ path: '$', message: 'cannot be validated: the schema recurses without end' }];
        throw e;
      }
      return mapAjvErrors(validateFn.errors ?? [], value, reachable, mapOneHere);
    },
  };
}

/** Every object subschema reachable from `start`, following local `$ref`s (and `$dynamicRef`s used as pointers). */
const reachableFrom = (root: unknown, start: unknown): Set<object> => {
  const seen = new Set<object>();
  const stack: unknown[] = Array.isArray(start) ? [...start] : [start];
  while (stack.length > 0) {
    const s = stack.pop();
    if (!isPlainObject(s) || seen.has(s)) continue;
    seen.add(s);
    for (const child of childSchemas(s)) stack.push(child.schema);
    for (const refKeyword of ['$ref', '$dynamicRef']) {
      const ref = s[refKeyword];
      if (typeof ref === 'string') stack.push(resolveLocalRef(root, ref));
    }
  }
  return seen;
};

type Reachable = (parentSchema: unknown, keyword: string) => Set<object>;

/** Keywords whose failure is reported as one message at their own path, dropping what their branches reported. */
const COLLAPSING = new Set(['anyOf', 'oneOf', 'contains']);

const isUnder = (pointer: string, base: string): boolean =>
  pointer === base || pointer.startsWith(base === '' ? '/' : `${base}/`);

interface Mapped extends ValidationError {
  isType: boolean;
}

/**
 * One Ajv error as a line, remembered by what decides it: the schema location, the instance path, the data type (for
 * `type`) and the property an error names. A caller repeating a mistake (a model often does) is answered without
 * wording it again. Bounded and per schema; a path with an array index is not remembered (it depends on the value).
 */
type MapOne = (e: ErrorObject, data: unknown) => Mapped;

const rememberingMapOne = (): MapOne => {
  // By schema location first: Ajv's are constants of the generated code, so that lookup hashes nothing new. Then by
  // instance path and by the variable part, each its own map: a key joined from the two would be a new (cons) string
  // on every call, flattened and hashed in full by every lookup.
  const bySchemaPath = new Map<string, Map<string, Map<string, Mapped>>>();
  let remembered = 0;
  return (e, data) => {
    const at = e.instancePath;
    if (HAS_INDEX_SEGMENT.test(at)) return mapOne(e, data);
    const p = e.params as Record<string, unknown>;
    const named = p['missingProperty'] ?? p['additionalProperty'] ?? p['unevaluatedProperty'] ?? (e as { propertyName?: unknown }).propertyName;
    const variable = e.keyword === 'type' ? jsonTypeOf(e.data) : named === undefined ? '' : String(named);
    if (at.length + variable.length > MAX_REMEMBERED_KEY) return mapOne(e, data);
    let here = bySchemaPath.get(e.schemaPath);
    if (here === undefined) bySchemaPath.set(e.schemaPath, (here = new Map()));
    let there = here.get(at);
    if (there === undefined) here.set(at, (there = new Map()));
    let m = there.get(variable);
    if (m === undefined) {
      m = mapOne(e, data);
      if (++remembered > MAX_REMEMBERED) {
        bySchemaPath.clear();
        bySchemaPath.set(e.schemaPath, (here = new Map()));
        here.set(at, (there = new Map()));
        remembered = 1;
      }
      there.set(variable, m);
    }
    return m;
  };
};

const HAS_INDEX_SEGMENT = /\/\d+(\/|$)/;
const MAX_REMEMBERED = 256;
const MAX_REMEMBERED_KEY = 1024;

const mapAjvErrors = (errors: readonly ErrorObject[], data: unknown, reachable: Reachable, mapped1: MapOne): ValidationError[] => {
  // Branch errors of a failed combinator are exactly the errors pushed while it ran: a contiguous run just before it.
  const kept: ErrorObject[] = [];
  for (const reported of errors) {
    // unevaluated-items.ts reports its item schema's own errors wrapped (see WrappedItemError).
    const error = reported.keyword === UNEVALUATED_ITEMS_KEYWORD ? (reported.params as unknown as WrappedItemError).inner : reported;
    const keyword = error.keyword;
    if (keyword === 'if' || keyword === 'propertyNames') continue; // their branch errors say it better
    if (COLLAPSING.has(keyword)) {
      const branches = reachable(error.parentSchema, keyword);
      const prefix = `${error.schemaPath}/`;
      while (kept.length > 0) {
        const top = kept[kept.length - 1] as ErrorObject;
        const fromBranch =
          top.schemaPath.startsWith(prefix) ||
          (typeof top.parentSchema === 'object' && top.parentSchema !== null && branches.has(top.parentSchema));
        if (!fromBranch || !isUnder(top.instancePath, error.instancePath)) break;
        kept.pop();
      }
    }
    kept.push(error);
  }

  const mapped: Mapped[] = [];
  let typeMessage: Map<string, string> | undefined;
  for (const e of kept) {
    const m = mapped1(e, data);
    mapped.push(m);
    if (!m.isType) continue;
    // One message per type mismatch: where a path has several, the least of them, and nothing else there.
    typeMessage ??= new Map();
    const current = typeMessage.get(m.path);
    if (current === undefined || m.message < current) typeMessage.set(m.path, m.message);
  }
  const only = typeMessage;
  const said =
    only === undefined
      ? mapped
      : mapped.filter((m) => {
          const onlyType = only.get(m.path);
          return onlyType === undefined || m.message === onlyType;
        });
  sortLines(said);
  // Sorted, equal lines are neighbours: each is said once.
  const lines: ValidationError[] = [];
  let last: ValidationError | undefined;
  for (const m of said) {
    if (last !== undefined && last.path === m.path && last.message === m.message) continue;
    lines.push((last = { path: m.path, message: m.message }));
  }
  return lines;
};

/**
 * In place by compareErrors. A call's errors are a handful: insertion sort, which for so few costs a fraction of
 * Array.prototype.sort's set-up; a long list takes the built-in sort.
 */
const sortLines = (lines: ValidationError[]): void => {
  if (lines.length > 16) {
    lines.sort(compareErrors);
    return;
  }
  for (let i = 1; i < lines.length; i++) {
    const x = lines[i] as ValidationError;
    let j = i - 1;
    while (j >= 0 && compareErrors(lines[j] as ValidationError, x) > 0) {
      lines[j + 1] = lines[j] as ValidationError;
      j--;
    }
    lines[j + 1] = x;
  }
};

export const compareErrors = (a: ValidationError, b: ValidationError): number => {
  if (a.path !== b.path) return a.path < b.path ? -1 : 1;
  if (a.message !== b.message) return a.message < b.message ? -1 : 1;
  return 0;
};

const mapOne = (e: ErrorObject, data: unknown): Mapped => {
  const worded = word(e);
  const at = pointerToPath(e.instancePath, data);
  const propertyName = (e as { propertyName?: unknown }).propertyName;
  if (typeof propertyName === 'string') {
    // An error about a property NAME (propertyNames): reported at that property's own path.
    return { path: appendKey(at, propertyName), message: `property name ${worded.message}`, isType: false };
  }
  return {
    path: worded.key === undefined ? at : appendKey(at, worded.key),
    message: worded.message,
    isType: worded.isType === true,
  };
};
