/**
 * A compiled validator carried as JavaScript source, so that Ajv's compile (the costly, synchronous part: ~100 ms for a
 * schema of 400 properties with patterns) runs in another thread and the serving thread only evaluates the result.
 * The source is Ajv's standalone code (generated from the schema by Ajv, as its in-process compile generates the same
 * code and evaluates it with `new Function`), with two changes made here:
 * - every module it would `require` is given by name from a fixed list (SOURCE_MODULES): Ajv's runtime helpers, the
 *   formats, the regular-expression engine and Estate's own keyword helpers. Nothing else resolves.
 * - the copies of the schema Ajv would write into the code (as object literals) are replaced by the subschemas of the
 *   serving thread's own copy, found by JSON pointer. Errors then carry the very objects the error wording walks
 *   (validate.ts compares them by identity), and the code to parse shrinks by the schema's size.
 * A schema using an Estate keyword implemented at compile time (`unevaluatedItems`, unevaluated-items.ts) has no
 * standalone form: `validatorSource` says so with `undefined`, and it is compiled in the serving thread as before.
 */
import type { Ajv2020, ValidateFunction } from 'ajv/dist/2020.js';
import equal from 'ajv/dist/runtime/equal.js';
import ucs2length from 'ajv/dist/runtime/ucs2length.js';
import uri from 'ajv/dist/runtime/uri.js';
import validationError from 'ajv/dist/runtime/validation_error.js';
import standaloneModule from 'ajv/dist/standalone/index.js';
import { resolveLocalRef, subschemas } from './json-path.ts';

/** The module names of the two Estate parts a validator's source requires (the rest are Ajv's own runtime files). */
export const FORMATS_MODULE = 'estate:formats';
export const RUNTIME_MODULE = 'estate:schema-runtime';
/** `require(SCHEMA_MODULE)(pointer)`: the subschema of the serving thread's copy at that JSON pointer. */
const SCHEMA_MODULE = 'estate:schema-at';
const REGEXP_MODULE = 're2'; // what linear-regexp.ts's REGEXP_ENGINE_CODE says

// ajv/dist/standalone is CommonJS: Node's default import is module.exports, whose `default` is the function.
type StandaloneCode = (ajv: Ajv2020, fn: ValidateFunction) => string;
const standaloneExport = standaloneModule as unknown as StandaloneCode & { default?: StandaloneCode };
const standaloneCode: StandaloneCode = standaloneExport.default ?? standaloneExport;

/** What a validator's source may require besides Ajv's runtime. */
export interface SourceRuntime {
  /** The regular-expression engine Ajv was given (`code.regExp`). */
  regExp: (pattern: string, flags: string) => unknown;
  /** Ajv's formats, by name (`ajv.formats`). */
  formats: Record<string, unknown>;
  /** Estate's keyword helpers (RUNTIME_MODULE). */
  helpers: Record<string, unknown>;
}

/**
 * The standalone source of `fn`, compiled by `ajv` (created with `code.source: true`) from `root`; undefined when Ajv
 * cannot write it (a keyword implemented by a function at compile time).
 */
export const validatorSource = (ajv: Ajv2020, fn: ValidateFunction, root: object): string | undefined => {
  let source: string;
  try {
    source = standaloneCode(ajv, fn);
  } catch {
    return undefined;
  }
  for (const { schema, pointer } of subschemas(root)) {
    const name = ajv.scope.getValue('schema', schema);
    const code = name?.value?.code;
    if (name === undefined || code === undefined) continue;
    const literal = `const ${name.str} = ${String(code)};`;
    source = source.replace(literal, () => `const ${name.str} = require(${JSON.stringify(SCHEMA_MODULE)})(${JSON.stringify(pointer)});`);
  }
  return source;
};

/**
 * A CommonJS module as `require` returns it. Node's default import of one is its exports object (`{ default: fn }` for
 * these); a bundler's interop (the test runner's) may give `fn` itself.
 */
const asRequired = (m: unknown): unknown => (typeof m === 'function' ? { default: m } : m);

/** Ajv's runtime helpers, as its generated code requires them (`require("ajv/dist/runtime/equal").default`). */
const AJV_RUNTIME: Record<string, unknown> = {
  'ajv/dist/runtime/equal': asRequired(equal),
  'ajv/dist/runtime/ucs2length': asRequired(ucs2length),
  'ajv/dist/runtime/uri': asRequired(uri),
  'ajv/dist/runtime/validation_error': asRequired(validationError),
};

/** Evaluate a validator's source against `root` (the same schema it was compiled from, as this thread holds it). */
export const validatorFromSource = (source: string, root: object, runtime: SourceRuntime): ValidateFunction => {
  const at = (pointer: string): unknown => {
    const found = resolveLocalRef(root, `#${pointer.split('/').map((s) => encodeURIComponent(s)).join('/')}`);
    if (found === undefined) throw new Error(`validator source: no subschema at ${pointer}`);
    return found;
  };
  const modules: Record<string, unknown> = {
    ...AJV_RUNTIME,
    [SCHEMA_MODULE]: at,
    [FORMATS_MODULE]: runtime.formats,
    [RUNTIME_MODULE]: runtime.helpers,
    [REGEXP_MODULE]: runtime.regExp,
  };
  const require = (name: string): unknown => {
    if (Object.prototype.hasOwnProperty.call(modules, name)) return modules[name];
    throw new Error(`validator source: requires ${JSON.stringify(name)}, which is not one of its modules`);
  };
  const module = { exports: {} as unknown };
  // Ajv's own compile evaluates the code it generates the same way.
  new Function('require', 'module', 'exports', source)(require, module, module.exports);
  const fn = module.exports;
  if (typeof fn !== 'function') throw new Error('validator source: exports no function');
  return fn as ValidateFunction;
};
