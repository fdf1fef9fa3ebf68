/**
 * The schema rules of SPEC §1: a tool schema is JSON Schema 2020-12 with `type: object` at the root, compiled by Ajv in
 * strict mode, with `format` asserted, references resolved only inside the document (its subschemas, `$id` resources
 * and anchors; never fetched), and every `pattern` run by RE2 (linear time).
 * What a schema may say is decided here once, at publish; the validator then trusts the compiled result.
 */
import { Ajv2020 } from 'ajv/dist/2020.js';
import type { ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsPlugin from 'ajv-formats';
import { RE2 } from 're2-wasm';
import { DomainError, invalidDefinition } from './errors.ts';
import { canonicalJson } from './hash.ts';
import { isPlainObject, subschemas } from './json-path.ts';
import type { JsonObject } from './types.ts';
import { EMPTY_ENUM_KEYWORD, indexSchemaResources, SchemaResourceError } from './schema-resources.ts';
import { addIriFormats } from './iri-formats.ts';
import { addUnevaluatedItemsKeyword } from './unevaluated-items.ts';
import { createCompiledSchema, type CompiledSchema } from './validate.ts';

export interface SchemaCompiler {
  /**
   * Throws DomainError('invalid-definition', code, one-line message). Codes: `schema-root-not-object`,
   * `unknown-keyword`, `remote-ref`, `unsafe-pattern`, `schema-invalid`. `where` (e.g. `inputSchema`) starts the message.
   */
  check(schema: JsonObject, where: string): void;
  /** Check, then compile. Callers cache the result per published version and compile lazily, on first use. */
  compile(schema: JsonObject, where?: string): CompiledSchema;
}

const DIALECT = 'https://json-schema.org/draft/2020-12/schema';
/** Subschemas nested deeper than this are refused: Ajv compiles recursively and would overflow the stack instead. */
export const MAX_SCHEMA_DEPTH = 128;

/**
 * The 2020-12 vocabularies (plus `definitions` and `dependencies`, which its meta-schema keeps). Ajv knows a few more
 * (`nullable`, `$async`, `formatMaximum`, ...) that other validators ignore: a contract relying on them would mean one
 * thing here and another to every client, so they are refused like typos.
 */
const KEYWORDS = new Set([
  '$schema', '$id', '$anchor', '$ref', '$dynamicRef', '$dynamicAnchor', '$vocabulary', '$comment', '$defs', 'definitions',
  'prefixItems', 'items', 'contains', 'additionalProperties', 'properties', 'patternProperties', 'dependentSchemas',
  'propertyNames', 'if', 'then', 'else', 'allOf', 'anyOf', 'oneOf', 'not', 'unevaluatedItems', 'unevaluatedProperties',
  'type', 'const', 'enum', 'multipleOf', 'maximum', 'exclusiveMaximum', 'minimum', 'exclusiveMinimum', 'maxLength',
  'minLength', 'pattern', 'maxItems', 'minItems', 'uniqueItems', 'maxContains', 'minContains', 'maxProperties',
  'minProperties', 'required', 'dependentRequired', 'dependencies',
  'title', 'description', 'default', 'deprecated', 'readOnly', 'writeOnly', 'examples',
  'format', 'contentEncoding', 'contentMediaType', 'contentSchema',
]);

/** What a pattern needs to be for validation: a membership test. */
export interface PatternMatcher {
  test(input: string): boolean;
}

/** Most fixed-length atoms allowed after the one variable quantifier of a backtrack-safe pattern. */
const MAX_SAFE_SUFFIX = 4;
const SAFE_ESCAPE = /[dDwW\\/.\-^$*+?()[\]{}|]/;
const SAFE_CLASS_ESCAPE = /[dDwW\\\]\-^./[]/;

/**
 * Whether V8's own (backtracking) RegExp runs `pattern` in linear time AND means what RE2 means by it, so it may run
 * natively: RE2 through WebAssembly costs ~2 µs a call, V8 ~0.05 µs. Deliberately narrow; anything else goes to RE2:
 * - anchored with `^`, optionally ending in `$`; no groups, no alternation, no lazy quantifiers;
 * - atoms: literal characters, `\d \D \w \W`, escaped punctuation, simple `[...]` classes. Not `.`, `\s`, `\S`, `\b`:
 *   V8 and RE2 disagree on line terminators and Unicode spaces;
 * - at most ONE atom with a variable quantifier (`? * + {n,} {n,m}`), followed by at most 4 fixed atoms.
 * Then the only choice point is how many characters the variable atom takes (at most n+1 tries, each checking at most
 * 4 atoms): O(4·n) however hostile the input. Two variable atoms (`^\d*\d*$`) already allow O(n²).
 */
export const isBacktrackSafe = (pattern: string): boolean => {
  if (!pattern.startsWith('^')) return false;
  let i = 1;
  let variableSeen = false;
  let suffix = 0;
  while (i < pattern.length) {
    const c = pattern[i] as string;
    if (c === '$') return i === pattern.length - 1;
    if (c === '\\') {
      const next = pattern[i + 1];
      if (next === undefined || !SAFE_ESCAPE.test(next)) return false;
      i += 2;
    } else if (c === '[') {
      let j = i + 1;
      if (pattern[j] === '^') j++;
      if (pattern[j] === ']') return false;
      for (;;) {
        const d = pattern[j];
        if (d === undefined || d === '[') return false;
        if (d === ']') break;
        if (d === '\\') {
          const next = pattern[j + 1];
          if (next === undefined || !SAFE_CLASS_ESCAPE.test(next)) return false;
          j += 2;
        } else j++;
      }
      i = j + 1;
    } else if ('^*+?(){}|.]'.includes(c)) {
      return false;
    } else {
      // One code point (a surrogate pair is one atom under the `u` flag).
      const code = c.charCodeAt(0);
      i += code >= 0xd800 && code <= 0xdbff ? 2 : 1;
    }
    let count = 1;
    let variable = false;
    const q = pattern[i];
    if (q === '*' || q === '+' || q === '?') {
      variable = true;
      i++;
    } else if (q === '{') {
      const m = /^\{(\d{1,6})(,(\d{0,6}))?\}/.exec(pattern.slice(i, i + 16));
      if (m === null) return false;
      count = Number(m[1]);
      variable = m[2] !== undefined && m[3] !== m[1];
      if (m[3] !== undefined && m[3] !== '' && Number(m[3]) < count) return false;
      i += m[0].length;
    }
    const after = pattern[i];
    if (after === '?' || after === '*' || after === '+' || after === '{') return false;
    if (variable) {
      if (variableSeen) return false;
      variableSeen = true;
    } else if (variableSeen) {
      suffix += count;
      if (suffix > MAX_SAFE_SUFFIX) return false;
    }
  }
  return true;
};

const linearCache = new Map<string, PatternMatcher>();

/**
 * A pattern as a linear-time matcher: V8's RegExp for the narrow backtrack-safe class above, RE2 otherwise (the `u`
 * flag is what re2-wasm requires and what Ajv uses for JSON Schema patterns anyway). Throws for a pattern RE2 cannot
 * run, even when V8 could: what a schema may say must not depend on which engine happens to run it. Cached: the same
 * pattern recurs across versions of a tool.
 */
export const linearRegExp = (pattern: string): PatternMatcher => {
  let matcher = linearCache.get(pattern);
  if (matcher === undefined) {
    const re2 = new RE2(pattern, 'u');
    matcher = isBacktrackSafe(pattern) ? new RegExp(pattern, 'u') : re2;
    linearCache.set(pattern, matcher);
  }
  return matcher;
};

/** RE2 alone, for tests that compare the two engines. */
export const re2RegExp = (pattern: string): PatternMatcher => new RE2(pattern, 'u');

const regExpEngine = Object.assign((pattern: string, _flags: string) => linearRegExp(pattern), {
  code: 'require("re2-wasm").RE2',
});

/**
 * JSON Schema equality of array items in O(total size): equal JSON values have equal RFC 8785 canonical forms (key
 * order ignored, 1 and 1.0 one number). Ajv compares every pair with a deep equal, O(n²): 8,000 small objects in 70 KB
 * of arguments took 4 s, and 1 MiB holds far more. Only the algorithm is replaced; what counts as a duplicate is not.
 */
const allDistinct = (items: readonly unknown[]): boolean => {
  const seen = new Set<string>();
  for (const item of items) {
    const key =
      item === null || typeof item !== 'object' ? `${typeof item}:${String(item)}` : `json:${canonicalJson(item)}`;
    if (seen.has(key)) return false;
    seen.add(key);
  }
  return true;
};

const location = (pointer: string): string => `#${pointer}`;

const oneLine = (s: string): string => s.replace(/\s*\n\s*/g, ' ');

export function createSchemaCompiler(): SchemaCompiler {
  const ajv = new Ajv2020({
    allErrors: true,
    verbose: true, // errors carry the value and schema: the validator needs them to word its messages
    // strictSchema refuses unknown keywords; strictTypes/strictTuples/strictRequired would refuse valid 2020-12
    // schemas (a `pattern` without `type: string`, say), which is not Estate's to forbid.
    strict: false,
    // Unknown keywords are refused by checkStatic (KEYWORDS), unknown formats too. Ajv's other strictSchema checks
    // refuse VALID 2020-12 schemas (`if` without `then`, `minContains: 0`, a property a patternProperties also matches),
    // which is not Estate's to forbid.
    strictSchema: false,
    strictNumbers: true,
    strictTypes: false,
    strictTuples: false,
    strictRequired: false,
    allowUnionTypes: true,
    validateFormats: true,
    ownProperties: true, // `required: ["toString"]` must not be satisfied by Object.prototype
    addUsedSchema: false,
    inlineRefs: true,
    logger: false, // the pure core prints nothing
    code: { regExp: regExpEngine },
  });
  // ajv-formats is CommonJS: Node's default import is module.exports, whose `default` is the plugin itself.
  addFormatsPlugin.default(ajv);
  addIriFormats(ajv);
  const formats = new Set(Object.keys(ajv.formats));
  ajv.addKeyword({ keyword: EMPTY_ENUM_KEYWORD, schemaType: 'boolean', errors: false, validate: () => false });
  addUnevaluatedItemsKeyword(ajv);
  ajv.removeKeyword('uniqueItems');
  ajv.addKeyword({
    keyword: 'uniqueItems',
    type: 'array',
    schemaType: 'boolean',
    errors: false,
    validate: (unique: boolean, data: unknown[]) => !unique || allDistinct(data),
  });

  const refuse = (code: string, message: string): never => {
    throw invalidDefinition(code, oneLine(message));
  };

  const checkStatic = (schema: JsonObject, where: string): void => {
    if (!isPlainObject(schema) || schema['type'] !== 'object') {
      refuse('schema-root-not-object', `${where} must be an object schema with type: object`);
    }
    const dialect = schema['$schema'];
    if (dialect !== undefined && dialect !== DIALECT && dialect !== `${DIALECT}#`) {
      refuse('schema-invalid', `${where}: $schema ${JSON.stringify(dialect)} is not JSON Schema 2020-12 (${DIALECT})`);
    }
    for (const { schema: sub, pointer, depth } of subschemas(schema)) {
      if (depth > MAX_SCHEMA_DEPTH) {
        refuse('schema-invalid', `${where} nests subschemas deeper than ${MAX_SCHEMA_DEPTH} levels (at ${location(pointer.slice(0, 200))}...)`);
      }
      for (const keyword of Object.keys(sub)) {
        if (!KEYWORDS.has(keyword)) refuse('unknown-keyword', `${where}: unknown keyword '${keyword}' at ${location(pointer)}`);
      }
      const subDialect = sub['$schema'];
      if (pointer !== '' && subDialect !== undefined && subDialect !== DIALECT && subDialect !== `${DIALECT}#`) {
        refuse('schema-invalid', `${where}: $schema ${JSON.stringify(subDialect)} at ${location(pointer)} is not JSON Schema 2020-12 (${DIALECT})`);
      }
      if (typeof sub['format'] === 'string' && !formats.has(sub['format'])) {
        refuse('schema-invalid', `${where}: unknown format ${JSON.stringify(sub['format'])} at ${location(pointer)}`);
      }
      const patterns: string[] = [];
      if (typeof sub['pattern'] === 'string') patterns.push(sub['pattern']);
      if (isPlainObject(sub['patternProperties'])) patterns.push(...Object.keys(sub['patternProperties']));
      for (const pattern of patterns) checkPattern(pattern, pointer, where);
    }
  };

  const checkPattern = (pattern: string, pointer: string, where: string): void => {
    try {
      new RegExp(pattern, 'u');
    } catch {
      refuse('schema-invalid', `${where}: pattern '${pattern}' at ${location(pointer)} is not a valid regular expression`);
    }
    try {
      linearRegExp(pattern);
    } catch {
      refuse(
        'unsafe-pattern',
        `${where}: pattern '${pattern}' at ${location(pointer)} cannot run in linear time (RE2: no backreferences or lookaround)`,
      );
    }
  };

  /**
   * Where every reference points, inside this document only: a reference no resource (`$id`) or anchor of the same
   * schema defines is `remote-ref`. A schema using `$id`, anchors or `$dynamicRef` is compiled in its normalised form
   * (src/domain/schema-resources.ts); any other as published.
   */
  const resolveReferences = (schema: JsonObject, where: string): JsonObject | undefined => {
    try {
      const index = indexSchemaResources(schema);
      const remote = index.remote[0];
      if (remote?.local === true) {
        refuse('schema-invalid', `${where}: ${remote.keyword} ${JSON.stringify(remote.ref)} at ${location(remote.pointer)} points to nothing in the schema`);
      }
      if (remote !== undefined) {
        refuse(
          'remote-ref',
          `${where}: ${remote.keyword} ${JSON.stringify(remote.ref)} at ${location(remote.pointer)} leaves the schema; only references to this schema's own subschemas, $id resources and anchors resolve, and nothing is ever fetched`,
        );
      }
      return index.needsNormalising ? (index.normalise() as JsonObject) : undefined;
    } catch (e) {
      if (e instanceof SchemaResourceError) return refuse(e.code, `${where}: ${e.message}`);
      throw e;
    }
  };

  const compileChecked = (schema: JsonObject, where: string): CompiledSchema => {
    checkStatic(schema, where);
    let own: JsonObject | undefined;
    let fn: ValidateFunction;
    let normalised: JsonObject | undefined;
    try {
      // Our own copy: the compiled function and the error mapper rely on the schema never changing under them.
      own = structuredClone(schema);
      normalised = resolveReferences(own, where);
      fn = ajv.compile(normalised ?? own);
    } catch (e) {
      if (e instanceof DomainError) throw e;
      const message = e instanceof Error ? e.message : String(e);
      const unknown = /unknown keyword: "([^"]*)"/.exec(message);
      if (unknown) refuse('unknown-keyword', `${where}: unknown keyword '${unknown[1]}'`);
      return refuse('schema-invalid', `${where} does not compile: ${message}`);
    } finally {
      // Ajv would otherwise keep every schema it ever compiled; callers hold the compiled result themselves.
      if (normalised !== undefined) ajv.removeSchema(normalised);
      else if (own !== undefined) ajv.removeSchema(own);
    }
    return createCompiledSchema(own, fn, normalised);
  };

  return {
    check(schema, where) {
      compileChecked(schema, where);
    },
    compile(schema, where = 'schema') {
      return compileChecked(schema, where);
    },
  };
}
