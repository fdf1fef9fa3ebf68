/**
 * The schema rules of SPEC §1: a tool schema is JSON Schema 2020-12 with `type: object` at the root, compiled by Ajv in
 * strict mode, with `format` asserted, references resolved only inside the document (its subschemas, `$id` resources
 * and anchors; never fetched), and every `pattern` run by RE2 (linear time).
 * What a schema may say is decided here once, at publish; the validator then trusts the compiled result.
 */
import { _, Ajv2020 } from 'ajv/dist/2020.js';
import type { KeywordCxt, ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsPlugin from 'ajv-formats';
import { DomainError, invalidDefinition } from './errors.ts';
import { findInPlaceRefCycle } from './ref-cycles.ts';
import { linearRegExp, patternBudgetExceeded, REGEXP_ENGINE_CODE } from './linear-regexp.ts';
import { canonicalJson } from './hash.ts';
import { isPlainObject, subschemas } from './json-path.ts';
import type { JsonObject } from './types.ts';
import { EMPTY_ENUM_KEYWORD, indexSchemaResources, SchemaResourceError } from './schema-resources.ts';
import { addIriFormats } from './iri-formats.ts';
import { addUnevaluatedItemsKeyword } from './unevaluated-items.ts';
import { createCompiledSchema, type CompiledSchema } from './validate.ts';
import { FORMATS_MODULE, RUNTIME_MODULE, validatorFromSource, validatorSource, type SourceRuntime } from './schema-source.ts';

export interface SchemaCompiler {
  /**
   * Throws DomainError('invalid-definition', code, one-line message). Codes: `schema-root-not-object`,
   * `unknown-keyword`, `remote-ref`, `unsafe-pattern`, `schema-too-costly`, `schema-invalid`. `where` (e.g. `inputSchema`) starts the message.
   */
  check(schema: JsonObject, where: string): void;
  /** Check, then compile. Callers cache the result per published version and compile lazily, on first use. */
  compile(schema: JsonObject, where?: string): CompiledSchema;
  /**
   * Check, then compile to source (schema-source.ts), for another thread to evaluate with `fromSource`; undefined when
   * the schema has no standalone form (then `compile` it). Throws as `check` does.
   */
  compileSource(schema: JsonObject, where?: string): string | undefined;
  /**
   * The compiled schema from what `compileSource` returned for the same schema, without compiling: the costly part ran
   * where the source was made. Only for source this process's own worker made from this very schema.
   */
  fromSource(schema: JsonObject, source: string): CompiledSchema;
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

export { isBacktrackSafe, linearRegExp, re2RegExp, type PatternMatcher } from './linear-regexp.ts';

const regExpEngine = Object.assign((pattern: string, _flags: string) => linearRegExp(pattern), { code: REGEXP_ENGINE_CODE });

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

/**
 * Past this many subschemas a schema is compiled without Ajv's optimisation pass. Ajv compiles synchronously, on the
 * serving thread, and the pass is about half of that time for a large schema (400 properties with patterns: ~100 ms
 * with it, ~50 ms without); the code it leaves unoptimised validates ~20% slower. For the rare huge schema the shorter
 * hold on everyone else's requests is worth more than a microsecond per call.
 */
export const LARGE_SCHEMA_SUBSCHEMAS = 64;

/** Estate's keyword helpers, as the validators' source requires them (RUNTIME_MODULE). */
const helpers = { allDistinct };

/**
 * One Ajv configured as SPEC §1 says; `optimize` is Ajv's code optimisation pass (see LARGE_SCHEMA_SUBSCHEMAS), `source`
 * keeps what a validator's standalone source needs (compileSource).
 */
const createAjv = (optimize: boolean, source = false): Ajv2020 => {
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
    // `formats`: how a validator's standalone source names the formats (ajv-formats keeps a value given here).
    code: { regExp: regExpEngine, optimize, source, formats: _`require(${FORMATS_MODULE})` },
  });
  // ajv-formats is CommonJS: Node's default import is module.exports, whose `default` is the plugin itself.
  addFormatsPlugin.default(ajv);
  addIriFormats(ajv);
  // Both written as code (not as a function Ajv calls), so that a validator using them has a standalone source.
  ajv.addKeyword({ keyword: EMPTY_ENUM_KEYWORD, schemaType: 'boolean', code: (cxt: KeywordCxt) => cxt.fail() });
  addUnevaluatedItemsKeyword(ajv);
  ajv.removeKeyword('uniqueItems');
  ajv.addKeyword({
    keyword: 'uniqueItems',
    type: 'array',
    schemaType: 'boolean',
    code(cxt: KeywordCxt) {
      if (cxt.schema !== true) return;
      const distinct = cxt.gen.scopeValue('func', { ref: allDistinct, code: _`require(${RUNTIME_MODULE}).allDistinct` });
      cxt.fail(_`!${distinct}(${cxt.data})`);
    },
  });
  return ajv;
};

/**
 * Each Ajv is replaced by a fresh one after this many compilations. Ajv's scope keeps every schema it compiled, and
 * each validator it made holds that scope: without replacing it, a process that compiles versions again and again (a
 * catalogue larger than the validator cache) grows by ~11 KB per compilation, for ever. A replaced Ajv is freed with
 * the last validator it made.
 */
const AJV_USES = 256;

/** `make()` (starting with `first` when given) for at most AJV_USES uses each, then a fresh one. */
const rotating = (make: () => Ajv2020, first: Ajv2020 = make()): (() => Ajv2020) => {
  let current = first;
  let uses = 0;
  return () => {
    if (uses >= AJV_USES) {
      current = make();
      uses = 0;
    }
    uses++;
    return current;
  };
};

export function createSchemaCompiler(): SchemaCompiler {
  const firstAjv = createAjv(true);
  const ajv = rotating(() => createAjv(true), firstAjv);
  const largeAjv = rotating(() => createAjv(false));
  const sourceAjv = rotating(() => createAjv(true, true));
  // Every instance is given the same formats: a validator's source may use any instance's.
  const formatDefinitions = firstAjv.formats;
  const formats = new Set(Object.keys(formatDefinitions));
  const runtime: SourceRuntime = { regExp: regExpEngine, formats: formatDefinitions, helpers };

  const refuse = (code: string, message: string): never => {
    throw invalidDefinition(code, oneLine(message));
  };

  /** The schema's static checks; returns how many subschemas it has. */
  const checkStatic = (schema: JsonObject, where: string): number => {
    if (!isPlainObject(schema) || schema['type'] !== 'object') {
      refuse('schema-root-not-object', `${where} must be an object schema with type: object`);
    }
    const dialect = schema['$schema'];
    if (dialect !== undefined && dialect !== DIALECT && dialect !== `${DIALECT}#`) {
      refuse('schema-invalid', `${where}: $schema ${JSON.stringify(dialect)} is not JSON Schema 2020-12 (${DIALECT})`);
    }
    const patterns: { pattern: string; pointer: string }[] = [];
    let patternChars = 0;
    let count = 0;
    for (const { schema: sub, pointer, depth } of subschemas(schema)) {
      count += 1;
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
      const own = typeof sub['pattern'] === 'string' ? [sub['pattern']] : [];
      if (isPlainObject(sub['patternProperties'])) own.push(...Object.keys(sub['patternProperties']));
      for (const pattern of own) {
        patterns.push({ pattern, pointer });
        patternChars += pattern.length;
      }
    }
    // The size budget before any pattern is compiled: the time budget (a worker with a deadline) is the caller's.
    const tooCostly = patternBudgetExceeded(patterns.length, patternChars);
    if (tooCostly !== null) refuse('schema-too-costly', `${where} ${tooCostly}`);
    for (const { pattern, pointer } of patterns) checkPattern(pattern, pointer, where);
    const cycle = findInPlaceRefCycle(schema);
    if (cycle !== null) {
      refuse('schema-invalid', `${where}: $ref cycle at ${location(cycle)} never descends into the value, so validation would recurse without end`);
    }
    return count;
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

  /** Checked and compiled by `compiler` (the size-chosen one when not given): our copy, its normalised form, the function. */
  const compileWith = (schema: JsonObject, where: string, given?: Ajv2020) => {
    const count = checkStatic(schema, where);
    const compiler = given ?? (count > LARGE_SCHEMA_SUBSCHEMAS ? largeAjv() : ajv());
    let own: JsonObject | undefined;
    let fn: ValidateFunction;
    let normalised: JsonObject | undefined;
    try {
      // Our own copy: the compiled function and the error mapper rely on the schema never changing under them.
      own = structuredClone(schema);
      normalised = resolveReferences(own, where);
      fn = compiler.compile(normalised ?? own);
    } catch (e) {
      if (e instanceof DomainError) throw e;
      const message = e instanceof Error ? e.message : String(e);
      const unknown = /unknown keyword: "([^"]*)"/.exec(message);
      if (unknown) refuse('unknown-keyword', `${where}: unknown keyword '${unknown[1]}'`);
      return refuse('schema-invalid', `${where} does not compile: ${message}`);
    } finally {
      // Ajv would otherwise keep every schema it ever compiled; callers hold the compiled result themselves.
      if (normalised !== undefined) compiler.removeSchema(normalised);
      else if (own !== undefined) compiler.removeSchema(own);
    }
    return { own, normalised, fn };
  };

  const compileChecked = (schema: JsonObject, where: string): CompiledSchema => {
    const { own, normalised, fn } = compileWith(schema, where);
    return createCompiledSchema(own, fn, normalised);
  };

  return {
    check(schema, where) {
      compileChecked(schema, where);
    },
    compile(schema, where = 'schema') {
      return compileChecked(schema, where);
    },
    compileSource(schema, where = 'schema') {
      const compiler = sourceAjv();
      const { own, normalised, fn } = compileWith(schema, where, compiler);
      return validatorSource(compiler, fn, normalised ?? own);
    },
    fromSource(schema, source) {
      // The same copy and normal form compileSource compiled from (resolveReferences is deterministic), unchecked:
      // the source's maker checked this schema.
      const own = structuredClone(schema);
      const normalised = resolveReferences(own, 'schema');
      return createCompiledSchema(own, validatorFromSource(source, normalised ?? own, runtime), normalised);
    },
  };
}
