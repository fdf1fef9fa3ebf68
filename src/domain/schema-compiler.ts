/**
 * The schema rules of SPEC §1: a tool schema is JSON Schema 2020-12 with `type: object` at the root, compiled by Ajv in
 * strict mode, with `format` asserted, only local `#...` references, and every `pattern` run by RE2 (linear time).
 * What a schema may say is decided here once, at publish; the validator then trusts the compiled result.
 */
import { Ajv2020 } from 'ajv/dist/2020.js';
import type { ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsPlugin from 'ajv-formats';
import { RE2 } from 're2-wasm';
import { invalidDefinition } from './errors.ts';
import { isPlainObject, subschemas } from './json-path.ts';
import type { JsonObject } from './types.ts';
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

/**
 * The 2020-12 vocabularies (plus `definitions` and `dependencies`, which its meta-schema keeps). Ajv knows a few more
 * (`nullable`, `$async`, `formatMaximum`, ...) that other validators ignore: a contract relying on them would mean one
 * thing here and another to every client, so they are refused like typos.
 */
const KEYWORDS = new Set([
  '$schema', '$id', '$ref', '$dynamicRef', '$dynamicAnchor', '$vocabulary', '$comment', '$defs', 'definitions',
  'prefixItems', 'items', 'contains', 'additionalProperties', 'properties', 'patternProperties', 'dependentSchemas',
  'propertyNames', 'if', 'then', 'else', 'allOf', 'anyOf', 'oneOf', 'not', 'unevaluatedItems', 'unevaluatedProperties',
  'type', 'const', 'enum', 'multipleOf', 'maximum', 'exclusiveMaximum', 'minimum', 'exclusiveMinimum', 'maxLength',
  'minLength', 'pattern', 'maxItems', 'minItems', 'uniqueItems', 'maxContains', 'minContains', 'maxProperties',
  'minProperties', 'required', 'dependentRequired', 'dependencies',
  'title', 'description', 'default', 'deprecated', 'readOnly', 'writeOnly', 'examples',
  'format', 'contentEncoding', 'contentMediaType', 'contentSchema',
]);

const linearCache = new Map<string, RE2>();

/**
 * A pattern as a linear-time matcher (RE2; the `u` flag is what re2-wasm requires and what Ajv uses for JSON Schema
 * patterns anyway). Throws for a pattern RE2 cannot run. Cached: the same pattern recurs across versions of a tool.
 */
export const linearRegExp = (pattern: string): RE2 => {
  let re = linearCache.get(pattern);
  if (re === undefined) {
    re = new RE2(pattern, 'u');
    linearCache.set(pattern, re);
  }
  return re;
};

const regExpEngine = Object.assign((pattern: string, _flags: string) => linearRegExp(pattern), {
  code: 'require("re2-wasm").RE2',
});

const location = (pointer: string): string => `#${pointer}`;

const oneLine = (s: string): string => s.replace(/\s*\n\s*/g, ' ');

export function createSchemaCompiler(): SchemaCompiler {
  const ajv = new Ajv2020({
    allErrors: true,
    verbose: true, // errors carry the value and schema: the validator needs them to word its messages
    // strictSchema refuses unknown keywords; strictTypes/strictTuples/strictRequired would refuse valid 2020-12
    // schemas (a `pattern` without `type: string`, say), which is not Estate's to forbid.
    strict: false,
    strictSchema: true,
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
    for (const { schema: sub, pointer } of subschemas(schema)) {
      for (const keyword of Object.keys(sub)) {
        if (keyword === '$anchor') {
          refuse('schema-invalid', `${where}: $anchor at ${location(pointer)} is not supported; use a '#/$defs/...' $ref`);
        }
        if (!KEYWORDS.has(keyword)) refuse('unknown-keyword', `${where}: unknown keyword '${keyword}' at ${location(pointer)}`);
      }
      for (const refKeyword of ['$ref', '$dynamicRef']) {
        const ref = sub[refKeyword];
        if (ref !== undefined && (typeof ref !== 'string' || !ref.startsWith('#'))) {
          refuse('remote-ref', `${where}: ${refKeyword} ${JSON.stringify(ref)} at ${location(pointer)} is not a local '#...' reference`);
        }
      }
      if (sub['$id'] !== undefined) {
        // An $id re-bases references (and names the schema in Ajv's registry): a schema must resolve only within itself.
        refuse('remote-ref', `${where}: $id at ${location(pointer)} is not allowed; only local '#...' references resolve`);
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

  const compileChecked = (schema: JsonObject, where: string): CompiledSchema => {
    checkStatic(schema, where);
    // Our own copy: the compiled function and the error mapper rely on the schema never changing under them.
    const own = structuredClone(schema);
    let fn: ValidateFunction;
    try {
      fn = ajv.compile(own);
    } catch (e) {
      const message = e instanceof Error ? e.message : String(e);
      const unknown = /unknown keyword: "([^"]*)"/.exec(message);
      if (unknown) refuse('unknown-keyword', `${where}: unknown keyword '${unknown[1]}'`);
      return refuse('schema-invalid', `${where} does not compile: ${message}`);
    } finally {
      // Ajv would otherwise keep every schema it ever compiled; callers hold the compiled result themselves.
      ajv.removeSchema(own);
    }
    return createCompiledSchema(own, fn);
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
