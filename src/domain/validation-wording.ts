/**
 * The words of argument validation (SPEC §2 "Validation"): one Ajv error as Estate's message, and a list of errors as
 * the one text a caller reads, bounded in lines and characters. validate.ts decides which errors are said.
 */
import type { ErrorObject } from 'ajv/dist/2020.js';
import { EMPTY_ENUM_KEYWORD } from './schema-resources.ts';

export interface ValidationError {
  path: string;
  message: string;
}

/** Most error lines one answer carries; the rest are counted in a last line. */
export const MAX_ERROR_LINES = 100;
/** Most characters of one error line (a path or a value can be as long as the arguments); the rest is elided. */
export const MAX_ERROR_LINE_CHARS = 1000;
/** Most values of an enum listed in a message; most characters of a value or pattern quoted in one. */
export const MAX_ENUM_VALUES_SHOWN = 20;
export const MAX_QUOTED_CHARS = 200;

const elide = (text: string, max: number): string => (text.length <= max ? text : `${text.slice(0, max)}… (${text.length - max} more characters)`);

/**
 * The error lines of an answer, bounded: a 300-byte call must not get a megabyte back (a 90,000-value enum, a pattern
 * or a path as long as the arguments). Normal sizes read exactly as SPEC §2 words them.
 */
export const formatErrors = (errors: ValidationError[]): string => {
  const lines = errors.slice(0, MAX_ERROR_LINES).map((e) => elide(`${e.path}: ${e.message}`, MAX_ERROR_LINE_CHARS));
  if (errors.length > MAX_ERROR_LINES) lines.push(`… (${errors.length - MAX_ERROR_LINES} more errors)`);
  return lines.join('\n');
};

/** `<JSON array>` of an enum, listing at most MAX_ENUM_VALUES_SHOWN values, each quoted at most MAX_QUOTED_CHARS. */
const enumText = (values: unknown): string => {
  if (!Array.isArray(values)) return elide(JSON.stringify(values) ?? 'null', MAX_QUOTED_CHARS);
  const shown = values.slice(0, MAX_ENUM_VALUES_SHOWN).map((v) => elide(JSON.stringify(v) ?? 'null', MAX_QUOTED_CHARS));
  const more = values.length - shown.length;
  return `[${shown.join(',')}${more > 0 ? `, … (${more} more)` : ''}]`;
};


/** The JSON type of a value, as SPEC §2 names it: an integral number is `integer`. */
export const jsonTypeOf = (value: unknown): string => {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value;
};

const str = (v: unknown): string => (typeof v === 'number' ? String(v) : JSON.stringify(v));
const plural = (n: unknown, one: string, many: string): string => `${str(n)} ${n === 1 ? one : many}`;

/**
 * One Ajv error as Estate's message. `key` is set when the error belongs to a property of the object Ajv reported on
 * (a missing or disallowed property is reported at the property's own path). No closures here: the error path runs
 * once per error and stays cheap.
 */
export interface Worded {
  message: string;
  key?: string;
  isType?: boolean;
}

export const word = (e: ErrorObject): Worded => {
  const p = e.params as Record<string, unknown>;
  switch (e.keyword) {
    case 'type': {
      const declared: unknown = e.schema ?? p['type'];
      const types = Array.isArray(declared) ? declared.map(String) : String(declared).split(',');
      return { message: `expected type ${types.join('|')}, got ${jsonTypeOf(e.data)}`, isType: true };
    }
    case 'required':
    case 'dependentRequired':
    case 'dependencies':
      return { message: 'is required', key: String(p['missingProperty']) };
    case 'additionalProperties':
      return { message: 'additional property is not allowed', key: String(p['additionalProperty']) };
    case 'unevaluatedProperties':
      return { message: 'additional property is not allowed', key: String(p['unevaluatedProperty']) };
    case 'pattern':
      return { message: `does not match pattern '${elide(String(p['pattern']), MAX_QUOTED_CHARS)}'` };
    case 'enum':
      return { message: `must be one of ${enumText(p['allowedValues'])}` };
    case 'const':
      return { message: `must equal ${elide(JSON.stringify(p['allowedValue']) ?? 'null', MAX_QUOTED_CHARS)}` };
    case 'minimum':
    case 'maximum':
    case 'exclusiveMinimum':
    case 'exclusiveMaximum':
      return { message: `must be ${String(p['comparison'])} ${str(p['limit'])}` };
    case 'multipleOf':
      return { message: `must be a multiple of ${str(p['multipleOf'])}` };
    case 'minLength':
      return { message: `must be at least ${str(p['limit'])} characters` };
    case 'maxLength':
      return { message: `must be at most ${str(p['limit'])} characters` };
    case 'minItems':
      return { message: `must have at least ${str(p['limit'])} items` };
    case 'maxItems':
    case 'items':
    case 'additionalItems':
      return { message: `must have at most ${str(p['limit'])} items` };
    case 'unevaluatedItems':
      return { message: `must have at most ${str(p['len'])} items` };
    case 'uniqueItems':
      return { message: 'must have unique items' };
    case 'minProperties':
      return { message: `must have at least ${str(p['limit'])} properties` };
    case 'maxProperties':
      return { message: `must have at most ${str(p['limit'])} properties` };
    case 'format':
      return { message: `must be a valid ${String(p['format'])}` };
    case 'oneOf':
      return { message: 'must match exactly one schema in oneOf' };
    case 'anyOf':
      return { message: 'must match at least one schema in anyOf' };
    case 'not':
      return { message: 'must not match the schema in not' };
    case 'contains': {
      const min = p['minContains'] ?? 1;
      return p['maxContains'] === undefined
        ? { message: `must contain at least ${plural(min, 'matching item', 'matching items')}` }
        : { message: `must contain at least ${str(min)} and at most ${plural(p['maxContains'], 'matching item', 'matching items')}` };
    }
    case EMPTY_ENUM_KEYWORD:
      return { message: 'must be one of []' };
    case 'false schema':
      return { message: 'is not allowed' };
    default:
      return { message: e.message ?? `fails ${e.keyword}` };
  }
};
