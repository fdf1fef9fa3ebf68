import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { repair } from '#domain/repair';
import { createSchemaCompiler } from '#domain/schema-compiler';
import { formatErrors } from '#domain/validate';
import type { JsonObject } from '#domain/types';
import { tracedExampleSchema } from '../fixtures/builders.ts';

const compiler = createSchemaCompiler();

const traced = compiler.compile(structuredClone(tracedExampleSchema) as unknown as JsonObject);

/** Repair `value` against a schema whose only property `a` is declared by `property`. */
const repairA = (property: JsonObject, value: unknown): unknown =>
  repair(compiler.compile({ type: 'object', properties: { a: property } }), { a: value }).value;

describe('repair: the traced tools/call', () => {
  it('drops urgent, leaves "yes" and the pattern failure alone, and two errors remain', () => {
    const args = { reference: 'PMT771', include_legs: 'yes', urgent: true };
    const result = repair(traced, args);
    expect(result.value).toEqual({ reference: 'PMT771', include_legs: 'yes' });
    expect(result.changes).toEqual([{ path: '$.urgent', action: 'dropped' }]);
    expect(formatErrors(result.errors)).toBe(
      "$.include_legs: expected type boolean, got string\n$.reference: does not match pattern '^PMT-\\d{3,}$'",
    );
    expect(args).toEqual({ reference: 'PMT771', include_legs: 'yes', urgent: true });
  });
});

describe('repair: coercion', () => {
  it('integer from ^-?(0|[1-9][0-9]*)$ only', () => {
    expect(repairA({ type: 'integer' }, '42')).toEqual({ a: 42 });
    expect(repairA({ type: 'integer' }, '-7')).toEqual({ a: -7 });
    expect(repairA({ type: 'integer' }, '0')).toEqual({ a: 0 });
    for (const s of [' 42', '42 ', '+42', '042', '4.0', '1e3', '', '-', '0x10', '4_2']) {
      expect(repairA({ type: 'integer' }, s)).toEqual({ a: s });
    }
  });

  it('never to a different number: digits past 2^53 stay a string (found by a probe: 9007199254740993 became ...992)', () => {
    expect(repairA({ type: 'integer' }, '9007199254740991')).toEqual({ a: 9007199254740991 });
    expect(repairA({ type: 'integer' }, '-9007199254740991')).toEqual({ a: -9007199254740991 });
    for (const s of ['9007199254740993', '99999999999999999999', '-9007199254740993']) {
      expect(repairA({ type: 'integer' }, s)).toEqual({ a: s });
      expect(repairA({ type: 'number' }, s)).toEqual({ a: s });
    }
  });

  it('number from the JSON number grammar only', () => {
    expect(repairA({ type: 'number' }, '2.5')).toEqual({ a: 2.5 });
    expect(repairA({ type: 'number' }, '-0.5e-3')).toEqual({ a: -0.0005 });
    expect(repairA({ type: 'number' }, '1E+2')).toEqual({ a: 100 });
    expect(repairA({ type: 'number' }, '7')).toEqual({ a: 7 });
    for (const s of ['+1', ' 1', '1 ', '.5', '5.', '01', 'NaN', 'Infinity', '1e999', '0x1', '1,5']) {
      expect(repairA({ type: 'number' }, s)).toEqual({ a: s });
    }
  });

  it('never a number that underflows to zero: a non-zero value would become another', () => {
    for (const s of ['1e-400', '-2.5e-999', '0.0001e-330']) expect(repairA({ type: 'number' }, s)).toEqual({ a: s });
    expect(repairA({ type: 'number' }, '0e-400')).toEqual({ a: 0 });
    expect(repairA({ type: 'number' }, '0.000')).toEqual({ a: 0 });
    expect(repairA({ type: 'number' }, '5e-324')).toEqual({ a: 5e-324 });
  });

  it('boolean from exactly true or false', () => {
    expect(repairA({ type: 'boolean' }, 'true')).toEqual({ a: true });
    expect(repairA({ type: 'boolean' }, 'false')).toEqual({ a: false });
    for (const s of ['yes', 'TRUE', 'True', ' true', '1', '0', '']) expect(repairA({ type: 'boolean' }, s)).toEqual({ a: s });
  });

  it('never when the declared type also allows string, or declares no type', () => {
    expect(repairA({ type: ['integer', 'string'] }, '42')).toEqual({ a: '42' });
    expect(repairA({ enum: [1, 2] }, '1')).toEqual({ a: '1' });
    expect(repairA({ type: ['integer', 'null'] }, '42')).toEqual({ a: 42 });
    expect(repairA({ type: ['boolean', 'integer'] }, 'true')).toEqual({ a: true });
  });

  it('only strings: a number where a boolean is declared stays', () => {
    expect(repairA({ type: 'boolean' }, 1)).toEqual({ a: 1 });
    expect(repairA({ type: 'integer' }, 5.5)).toEqual({ a: 5.5 });
  });

  it('coerces by declared type even if the result then fails another keyword, which is reported, not guessed', () => {
    const compiled = compiler.compile({ type: 'object', properties: { n: { type: 'integer', minimum: 10 } } });
    const result = repair(compiled, { n: '3' });
    expect(result.value).toEqual({ n: 3 });
    expect(result.changes).toEqual([{ path: '$.n', action: 'coerced' }]);
    expect(formatErrors(result.errors)).toBe('$.n: must be >= 10');
  });
});

describe('repair: never touched', () => {
  it('pattern, enum, const, bounds and format failures stay as they are', () => {
    const compiled = compiler.compile({
      type: 'object',
      properties: {
        p: { type: 'string', pattern: '^[A-Z]+$' },
        e: { enum: ['AED', 'EUR'] },
        c: { const: 'x' },
        b: { type: 'integer', maximum: 5 },
        l: { type: 'string', maxLength: 2 },
        f: { type: 'string', format: 'date' },
      },
    });
    const args = { p: 'abc', e: 'aed', c: 'y', b: 6, l: 'abc', f: '2026-13-45' };
    const result = repair(compiled, args);
    expect(result.value).toEqual(args);
    expect(result.changes).toEqual([]);
    expect(result.errors).toHaveLength(6);
  });
});

describe('repair: dropping and defaults', () => {
  it('drops only what additionalProperties: false disallows; patternProperties keep theirs', () => {
    const compiled = compiler.compile({
      type: 'object',
      properties: { a: { type: 'string' } },
      patternProperties: { '^x-': { type: 'string' } },
      additionalProperties: false,
    });
    const result = repair(compiled, { a: 's', 'x-trace': 't', zed: 1, 'two words': 2 });
    expect(result.value).toEqual({ a: 's', 'x-trace': 't' });
    expect(result.changes).toEqual([
      { path: '$["two words"]', action: 'dropped' },
      { path: '$.zed', action: 'dropped' },
    ]);
  });

  it('keeps extras of an open object', () => {
    const compiled = compiler.compile({ type: 'object', properties: { a: { type: 'string' } } });
    expect(repair(compiled, { a: 's', extra: 1 }).value).toEqual({ a: 's', extra: 1 });
  });

  it('fills the default of a missing property with a copy, never the schema’s own object', () => {
    const compiled = compiler.compile({
      type: 'object',
      properties: { legs: { type: 'boolean', default: false }, tags: { type: 'array', default: ['x'] }, n: { type: 'integer' } },
    });
    const first = repair(compiled, {});
    expect(first.value).toEqual({ legs: false, tags: ['x'] });
    expect(first.changes).toEqual([
      { path: '$.legs', action: 'defaulted' },
      { path: '$.tags', action: 'defaulted' },
    ]);
    ((first.value as { tags: string[] }).tags).push('mutated');
    expect(repair(compiled, {}).value).toEqual({ legs: false, tags: ['x'] });
    expect(repair(compiled, { legs: true }).value).toEqual({ legs: true, tags: ['x'] });
  });

  it('coerces a default written as a string for a non-string type, so a second pass has nothing to do', () => {
    const compiled = compiler.compile({ type: 'object', properties: { n: { type: 'integer', default: '5' } } });
    const result = repair(compiled, {});
    expect(result.value).toEqual({ n: 5 });
    expect(result.changes).toEqual([{ path: '$.n', action: 'defaulted' }]);
  });

  it('follows a chain of local $refs to the keyword it looks for', () => {
    const compiled = compiler.compile({
      type: 'object',
      $defs: {
        flag: { type: 'boolean', default: true },
        flagAlias: { $ref: '#/$defs/flag' },
        int: { type: 'integer' },
        intAlias: { $ref: '#/$defs/int' },
      },
      properties: { on: { $ref: '#/$defs/flagAlias' }, n: { $ref: '#/$defs/intAlias' } },
      additionalProperties: false,
    });
    // Both keywords are two $refs away: `on`'s default and type, `n`'s type.
    const result = repair(compiled, { n: '7' });
    expect(result.value).toEqual({ on: true, n: 7 });
    expect(result.changes).toEqual([
      { path: '$.n', action: 'coerced' },
      { path: '$.on', action: 'defaulted' },
    ]);
    expect(result.errors).toEqual([]);
  });

  it('walks nested declared objects depth-first, through local $refs, in drop/coerce/default order', () => {
    const compiled = compiler.compile({
      type: 'object',
      $defs: {
        money: {
          type: 'object',
          properties: { amount: { type: 'integer' }, currency: { type: 'string', default: 'AED' } },
          additionalProperties: false,
        },
      },
      properties: {
        payment: {
          type: 'object',
          properties: { value: { $ref: '#/$defs/money' }, urgent: { type: 'boolean' } },
          additionalProperties: false,
        },
        fee: { $ref: '#/$defs/money', default: { amount: '5' } },
      },
      additionalProperties: false,
    });
    const args = { payment: { value: { amount: '250000', cents: 3 }, urgent: 'false', note: 'x' }, extra: 1 };
    const result = repair(compiled, args);
    expect(result.value).toEqual({
      payment: { value: { amount: 250000, currency: 'AED' }, urgent: false },
      fee: { amount: 5, currency: 'AED' },
    });
    expect(result.changes).toEqual([
      { path: '$.extra', action: 'dropped' },
      { path: '$.fee', action: 'defaulted' },
      { path: '$.payment.note', action: 'dropped' },
      { path: '$.payment.urgent', action: 'coerced' },
      { path: '$.payment.value.cents', action: 'dropped' },
      { path: '$.payment.value.amount', action: 'coerced' },
      { path: '$.payment.value.currency', action: 'defaulted' },
      { path: '$.fee.amount', action: 'coerced' },
      { path: '$.fee.currency', action: 'defaulted' },
    ]);
    expect(result.errors).toEqual([]);
    expect(args.payment.value).toEqual({ amount: '250000', cents: 3 });
  });

  it('fills and coerces a property named __proto__ as data, never as the prototype', () => {
    const compiled = compiler.compile({
      type: 'object',
      properties: { ['__proto__']: { type: 'object', default: { polluted: true } }, n: { type: 'integer' } },
    });
    const result = repair(compiled, JSON.parse('{"n":"1"}'));
    expect(Object.getPrototypeOf(result.value)).toBe(Object.prototype);
    expect(Object.keys(result.value as object)).toEqual(['n', '__proto__']);
    expect((result.value as { polluted?: boolean }).polluted).toBeUndefined();
  });

  it('leaves non-object arguments alone and reports them', () => {
    const result = repair(traced, 'PMT-1');
    expect(result.value).toBe('PMT-1');
    expect(result.changes).toEqual([]);
    expect(formatErrors(result.errors)).toBe('$: expected type object, got string');
  });

  it('returns the input itself when there is nothing to repair', () => {
    const args = { reference: 'PMT-771' };
    expect(repair(traced, args).value).toBe(args);
  });
});

describe('repair: laws', () => {
  const schema = compiler.compile({
    type: 'object',
    $defs: { flag: { type: 'boolean', default: true } },
    properties: {
      id: { type: 'integer' },
      amount: { type: ['number', 'null'], minimum: 0 },
      label: { type: 'string', default: 'none' },
      count: { type: 'integer', default: '7' },
      on: { $ref: '#/$defs/flag' },
      inner: {
        type: 'object',
        properties: { n: { type: 'integer', default: 1 }, deep: { type: 'object', properties: { b: { type: 'boolean' } } } },
        additionalProperties: false,
      },
    },
    required: ['id'],
    additionalProperties: false,
  });
  const stringish = fc.oneof(
    fc.constantFrom('1', '-1', '01', '2.5', '1e3', 'true', 'false', 'TRUE', ' 4', 'yes', ''),
    fc.integer().map(String),
    fc.double({ noNaN: true, noDefaultInfinity: true }).map(String),
    fc.string(),
  );
  const leaf = fc.oneof(stringish, fc.integer(), fc.boolean(), fc.constant(null));
  const args = fc.record(
    {
      id: leaf,
      amount: leaf,
      label: leaf,
      on: leaf,
      extra: leaf,
      inner: fc.oneof(leaf, fc.record({ n: leaf, deep: fc.oneof(leaf, fc.record({ b: leaf, z: leaf })), zz: leaf })),
    },
    { requiredKeys: [] },
  );

  it('is idempotent: repairing the repaired value changes nothing', () => {
    fc.assert(
      fc.property(args, (x) => {
        const once = repair(schema, x);
        const twice = repair(schema, once.value);
        expect(twice.value).toEqual(once.value);
        expect(twice.changes).toEqual([]);
        expect(twice.errors).toEqual(once.errors);
      }),
      { numRuns: 500 },
    );
  });

  it('never mutates its input and gives the same changes whatever the key order', () => {
    fc.assert(
      fc.property(args, (x) => {
        const before = structuredClone(x);
        const result = repair(schema, x);
        expect(x).toEqual(before);
        const reversed = Object.fromEntries(Object.entries(x).reverse());
        expect(repair(schema, reversed).changes).toEqual(result.changes);
      }),
      { numRuns: 300 },
    );
  });
});
