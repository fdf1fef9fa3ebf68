import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createSchemaCompiler } from '#domain/schema-compiler';
import {
  checkArgumentLimits,
  formatErrors,
  MAX_ARGUMENT_BYTES,
  MAX_ARGUMENT_DEPTH,
  type ValidationError,
} from '#domain/validate';
import type { JsonObject, JsonValue } from '#domain/types';
import { tracedExampleSchema } from '../fixtures/builders.ts';

const compiler = createSchemaCompiler();
const lines = (schema: JsonObject, value: unknown): string[] =>
  compiler.compile(schema).validate(value).map((e) => `${e.path}: ${e.message}`);
/** Errors for one property `a` declared by `property`. */
const forA = (property: JsonObject, value: unknown): string[] =>
  lines({ type: 'object', properties: { a: property } }, { a: value });

const tracedSchema = structuredClone(tracedExampleSchema) as unknown as JsonObject;

describe('the traced tools/call (deep dive §6)', () => {
  it('reports exactly the three sorted errors', () => {
    const errors = compiler.compile(tracedSchema).validate({ reference: 'PMT771', include_legs: 'yes', urgent: true });
    expect(formatErrors(errors)).toBe(
      [
        '$.include_legs: expected type boolean, got string',
        "$.reference: does not match pattern '^PMT-\\d{3,}$'",
        '$.urgent: additional property is not allowed',
      ].join('\n'),
    );
  });

  it('passes the corrected call', () => {
    expect(compiler.compile(tracedSchema).validate({ reference: 'PMT-771', include_legs: true })).toEqual([]);
  });
});

describe('paths', () => {
  it('uses $ for the root, .name for identifiers, ["key"] JSON-escaped otherwise, [n] for indices', () => {
    const schema: JsonObject = {
      type: 'object',
      properties: {
        _ok9: { type: 'integer' },
        'has space': { type: 'integer' },
        '9lives': { type: 'integer' },
        'quo"te/sl~ash': { type: 'integer' },
        'é': { type: 'integer' },
        legs: { type: 'array', items: { type: 'object', properties: { amount: { type: 'number' } } } },
      },
    };
    const value = {
      _ok9: 's',
      'has space': 's',
      '9lives': 's',
      'quo"te/sl~ash': 's',
      'é': 's',
      legs: [{ amount: 1 }, { amount: 1 }, { amount: 1 }, { amount: 'x' }],
    };
    expect(lines(schema, value)).toEqual([
      '$._ok9: expected type integer, got string',
      '$.legs[3].amount: expected type number, got string',
      '$["9lives"]: expected type integer, got string',
      '$["has space"]: expected type integer, got string',
      '$["quo\\"te/sl~ash"]: expected type integer, got string',
      '$["é"]: expected type integer, got string',
    ]);
    expect(lines({ type: 'object' }, [])).toEqual(['$: expected type object, got array']);
  });

  it('tells an index from a key that looks like one', () => {
    const schema: JsonObject = {
      type: 'object',
      properties: {
        map: { type: 'object', properties: { '0': { type: 'string' } } },
        list: { type: 'array', items: { type: 'string' } },
      },
    };
    expect(lines(schema, { map: { '0': 1 }, list: [1] })).toEqual([
      '$.list[0]: expected type string, got integer',
      '$.map["0"]: expected type string, got integer',
    ]);
  });

  it('reports a missing required property and an additional property at their own paths', () => {
    const schema: JsonObject = {
      type: 'object',
      properties: { inner: { type: 'object', required: ['id', 'two words'], additionalProperties: false } },
      required: ['reference', 'inner'],
      additionalProperties: false,
    };
    expect(lines(schema, { inner: { extra: 1 }, 'odd key': true })).toEqual([
      '$.inner.extra: additional property is not allowed',
      '$.inner.id: is required',
      '$.inner["two words"]: is required',
      '$.reference: is required',
      '$["odd key"]: additional property is not allowed',
    ]);
  });
});

describe('messages', () => {
  it('type: the declared type, a|b for several, and the JSON type of the value', () => {
    expect(forA({ type: 'boolean' }, 'yes')).toEqual(['$.a: expected type boolean, got string']);
    expect(forA({ type: ['string', 'null'] }, 5)).toEqual(['$.a: expected type string|null, got integer']);
    expect(forA({ type: 'string' }, 5.5)).toEqual(['$.a: expected type string, got number']);
    expect(forA({ type: 'string' }, null)).toEqual(['$.a: expected type string, got null']);
    expect(forA({ type: 'string' }, {})).toEqual(['$.a: expected type string, got object']);
    expect(forA({ type: 'string' }, [])).toEqual(['$.a: expected type string, got array']);
    expect(forA({ type: 'string' }, false)).toEqual(['$.a: expected type string, got boolean']);
  });

  it('integer accepts 5 and 5.0 (one JSON number), rejects 5.5 and booleans; number rejects booleans', () => {
    expect(forA({ type: 'integer' }, JSON.parse('5.0'))).toEqual([]);
    expect(forA({ type: 'integer' }, 5)).toEqual([]);
    expect(forA({ type: 'integer' }, -0)).toEqual([]);
    expect(forA({ type: 'integer' }, 5.5)).toEqual(['$.a: expected type integer, got number']);
    expect(forA({ type: 'integer' }, true)).toEqual(['$.a: expected type integer, got boolean']);
    expect(forA({ type: 'number' }, false)).toEqual(['$.a: expected type number, got boolean']);
    expect(forA({ type: 'number' }, 5)).toEqual([]);
    expect(forA({ type: 'boolean' }, 1)).toEqual(['$.a: expected type boolean, got integer']);
    expect(forA({ type: 'boolean' }, 'true')).toEqual(['$.a: expected type boolean, got string']);
  });

  it('a type mismatch is the only error at its path', () => {
    expect(forA({ type: 'integer', minimum: 1, enum: [1, 2], multipleOf: 1 }, 'abc')).toEqual([
      '$.a: expected type integer, got string',
    ]);
    // Two declared types from two allOf branches still give one line, and the other keywords stay silent.
    expect(forA({ allOf: [{ type: 'string', minLength: 3 }, { type: 'number', minimum: 9 }] }, true)).toHaveLength(1);
    expect(forA({ type: 'string', const: 'x', anyOf: [{ minLength: 5 }] }, 1)).toEqual([
      '$.a: expected type string, got integer',
    ]);
  });

  it('every other message, worded as SPEC §2 lists it', () => {
    expect(forA({ type: 'string', pattern: '^x$' }, 'y')).toEqual(["$.a: does not match pattern '^x$'"]);
    expect(forA({ enum: ['a', 1, null] }, 'b')).toEqual(['$.a: must be one of ["a",1,null]']);
    expect(forA({ const: { k: [1] } }, {})).toEqual(['$.a: must equal {"k":[1]}']);
    expect(forA({ type: 'number', minimum: 1.5 }, 1)).toEqual(['$.a: must be >= 1.5']);
    expect(forA({ type: 'number', exclusiveMinimum: 1 }, 1)).toEqual(['$.a: must be > 1']);
    expect(forA({ type: 'number', maximum: 10 }, 11)).toEqual(['$.a: must be <= 10']);
    expect(forA({ type: 'number', exclusiveMaximum: 10 }, 10)).toEqual(['$.a: must be < 10']);
    expect(forA({ type: 'number', multipleOf: 0.5 }, 1.2)).toEqual(['$.a: must be a multiple of 0.5']);
    expect(forA({ type: 'string', minLength: 3 }, 'ab')).toEqual(['$.a: must be at least 3 characters']);
    expect(forA({ type: 'string', maxLength: 2 }, 'abc')).toEqual(['$.a: must be at most 2 characters']);
    expect(forA({ type: 'array', minItems: 2 }, [1])).toEqual(['$.a: must have at least 2 items']);
    expect(forA({ type: 'array', maxItems: 1 }, [1, 2])).toEqual(['$.a: must have at most 1 items']);
    expect(forA({ type: 'array', uniqueItems: true }, [1, 1])).toEqual(['$.a: must have unique items']);
    expect(forA({ type: 'object', minProperties: 1 }, {})).toEqual(['$.a: must have at least 1 properties']);
    expect(forA({ type: 'object', maxProperties: 1 }, { x: 1, y: 2 })).toEqual(['$.a: must have at most 1 properties']);
    expect(forA({ type: 'string', format: 'date-time' }, 'yesterday')).toEqual(['$.a: must be a valid date-time']);
    expect(forA({ type: 'string', format: 'email' }, 'not-an-email')).toEqual(['$.a: must be a valid email']);
    expect(forA({ oneOf: [{ type: 'integer' }, { type: 'number' }] }, 1)).toEqual([
      '$.a: must match exactly one schema in oneOf',
    ]);
    expect(forA({ anyOf: [{ type: 'string' }, { type: 'boolean' }] }, 1)).toEqual([
      '$.a: must match at least one schema in anyOf',
    ]);
    expect(forA({ not: { type: 'string' } }, 's')).toEqual(['$.a: must not match the schema in not']);
  });

  it('uniqueItems compares items as JSON values: key order ignored, types kept apart', () => {
    const unique = { type: 'array', uniqueItems: true } as const;
    const bad = ['$.a: must have unique items'];
    expect(forA(unique, [{ x: 1, y: [2] }, { y: [2], x: 1 }])).toEqual(bad);
    expect(forA(unique, [1, JSON.parse('1.0')])).toEqual(bad);
    expect(forA(unique, [null, null])).toEqual(bad);
    expect(forA(unique, [1, '1', true, 'true', null, 'null', [1, 2], [2, 1], { x: 1 }, { x: '1' }])).toEqual([]);
    expect(forA({ type: 'array', uniqueItems: false }, [1, 1])).toEqual([]);
  });

  it('uniqueItems stays linear: 20,000 distinct objects, then one duplicate at the end', () => {
    const items = Array.from({ length: 20_000 }, (_, i) => ({ id: i, tag: `t${i % 7}` }));
    const schema: JsonObject = { type: 'array', uniqueItems: true, items: { type: 'object' } };
    expect(forA(schema, items)).toEqual([]);
    expect(forA(schema, [...items, { tag: 't3', id: 10 }])).toEqual(['$.a: must have unique items']);
  });

  it('counts characters as code points, as JSON Schema does', () => {
    expect(forA({ type: 'string', maxLength: 1 }, '😀')).toEqual([]);
  });

  it('a combinator reports one message at its own path, without the errors of its branches', () => {
    const schema: JsonObject = {
      type: 'object',
      $defs: { positive: { type: 'integer', minimum: 1 } },
      properties: {
        a: { oneOf: [{ $ref: '#/$defs/positive' }, { type: 'object', required: ['x'], properties: { x: { type: 'string' } } }] },
        b: { anyOf: [{ type: 'string', maxLength: 1 }, { anyOf: [{ type: 'null' }, { $ref: '#/$defs/positive' }] }] },
      },
    };
    expect(lines(schema, { a: { x: 1 }, b: 0 })).toEqual([
      '$.a: must match exactly one schema in oneOf',
      '$.b: must match at least one schema in anyOf',
    ]);
    expect(lines(schema, { a: 0, b: 'long' })).toEqual([
      '$.a: must match exactly one schema in oneOf',
      '$.b: must match at least one schema in anyOf',
    ]);
    expect(lines(schema, { a: 1, b: null })).toEqual([]);
  });

  it('keeps errors of keywords evaluated beside a combinator', () => {
    const schema: JsonObject = {
      type: 'object',
      properties: { n: { type: 'integer' } },
      required: ['id'],
      anyOf: [{ required: ['a'] }, { required: ['b'] }],
    };
    expect(lines(schema, { n: 'x' })).toEqual([
      '$: must match at least one schema in anyOf',
      '$.id: is required',
      '$.n: expected type integer, got string',
    ]);
  });

  it('if/then reports the failing branch’s own errors, not a message of its own', () => {
    const schema: JsonObject = {
      type: 'object',
      properties: { kind: { type: 'string' } },
      if: { properties: { kind: { const: 'wire' } }, required: ['kind'] },
      then: { required: ['iban'] },
      else: { required: ['card'] },
    };
    expect(lines(schema, { kind: 'wire' })).toEqual(['$.iban: is required']);
    expect(lines(schema, { kind: 'card' })).toEqual(['$.card: is required']);
  });

  it('words what SPEC §2 does not list: dependentRequired, propertyNames, contains, false schemas, tuples', () => {
    expect(lines({ type: 'object', dependentRequired: { iban: ['bic'] } }, { iban: 'x' })).toEqual(['$.bic: is required']);
    expect(lines({ type: 'object', propertyNames: { pattern: '^[a-z]+$' } }, { ok: 1, Bad: 2 })).toEqual([
      "$.Bad: property name does not match pattern '^[a-z]+$'",
    ]);
    expect(forA({ type: 'array', contains: { type: 'string' } }, [1, 2])).toEqual(['$.a: must contain at least 1 matching item']);
    expect(forA({ type: 'array', contains: { type: 'string' }, minContains: 2, maxContains: 3 }, ['s'])).toEqual([
      '$.a: must contain at least 2 and at most 3 matching items',
    ]);
    expect(lines({ type: 'object', properties: { gone: false } }, { gone: 1 })).toEqual(['$.gone: is not allowed']);
    expect(forA({ type: 'array', prefixItems: [{ type: 'string' }], items: false }, ['a', 'b'])).toEqual([
      '$.a: must have at most 1 items',
    ]);
    expect(lines({ type: 'object', properties: { a: true }, unevaluatedProperties: false }, { a: 1, z: 2 })).toEqual([
      '$.z: additional property is not allowed',
    ]);
  });

  it('words unevaluatedItems as before, and reports items `contains` did not evaluate at their own paths (issue 16)', () => {
    // Evaluated positions form a prefix: Ajv's wording, at the array.
    expect(forA({ type: 'array', prefixItems: [{ type: 'string' }], unevaluatedItems: false }, ['a', 'b'])).toEqual([
      '$.a: must have at most 1 items',
    ]);
    // `contains` evaluates positions 0 and 2 only: position 1 is unevaluated, and reported there.
    expect(forA({ type: 'array', contains: { type: 'string' }, unevaluatedItems: false }, ['x', 1, 'y'])).toEqual(['$.a[1]: is not allowed']);
    expect(forA({ type: 'array', contains: { type: 'string' }, unevaluatedItems: { type: 'integer' } }, ['x', 1.5, 'y', 2])).toEqual([
      '$.a[1]: expected type integer, got number',
    ]);
    expect(forA({ type: 'array', contains: { type: 'string' }, unevaluatedItems: false }, ['x', 'y'])).toEqual([]);
  });

  it('asserts iri, iri-reference and idn-email (issue 16), in linear time on hostile input', () => {
    expect(forA({ type: 'string', format: 'iri' }, 'https://例え.テスト/パス?q=ü#frag')).toEqual([]);
    expect(forA({ type: 'string', format: 'iri' }, '/relative/only')).toEqual(['$.a: must be a valid iri']);
    expect(forA({ type: 'string', format: 'iri-reference' }, '../ü/ö')).toEqual([]);
    expect(forA({ type: 'string', format: 'iri-reference' }, 'a b')).toEqual(['$.a: must be a valid iri-reference']);
    expect(forA({ type: 'string', format: 'idn-email' }, '실례@실례.테스트')).toEqual([]);
    expect(forA({ type: 'string', format: 'idn-email' }, '2962')).toEqual(['$.a: must be a valid idn-email']);
    // ~0.9 MiB of arguments that fail only at the end: completes (a backtracking blow-up would hang this test).
    const long = `https://x.example/${'é/'.repeat(150_000)} `;
    expect(forA({ type: 'string', format: 'iri' }, long)).toEqual(['$.a: must be a valid iri']);
    expect(forA({ type: 'string', format: 'idn-email' }, `${'ü'.repeat(150_000)}@x.y `)).toEqual(['$.a: must be a valid idn-email']);
  });

  it('validates a property named __proto__ as the own property it is in the arguments (issue 16)', () => {
    const schema = JSON.parse('{"type":"object","properties":{"__proto__":{"type":"number"}},"required":["__proto__"]}') as JsonObject;
    expect(lines(schema, JSON.parse('{"__proto__":"foo"}'))).toEqual(['$.__proto__: expected type number, got string']);
    expect(lines(schema, JSON.parse('{"__proto__":1}'))).toEqual([]);
    expect(lines(schema, {})).toEqual(['$.__proto__: is required']);
  });

  it('checks required properties as own properties only', () => {
    expect(lines({ type: 'object', required: ['toString'] }, {})).toEqual(['$.toString: is required']);
  });

  it('deduplicates identical lines', () => {
    const schema: JsonObject = { type: 'object', allOf: [{ required: ['id'] }, { required: ['id'] }] };
    expect(lines(schema, {})).toEqual(['$.id: is required']);
  });

  it('formats errors as <path>: <message> lines', () => {
    const errors: ValidationError[] = [
      { path: '$.a', message: 'is required' },
      { path: '$.b', message: 'must be >= 1' },
    ];
    expect(formatErrors(errors)).toBe('$.a: is required\n$.b: must be >= 1');
    expect(formatErrors([])).toBe('');
  });
});

describe('order', () => {
  it('sorts by path then message in code-unit order', () => {
    const schema: JsonObject = {
      type: 'object',
      properties: { B: { type: 'string' }, a: { type: 'string', minLength: 5, pattern: '^z' }, _: { type: 'string' } },
    };
    // 'B' < '_' < 'a' in code units; a locale-aware sort would put `a` before `B`.
    expect(lines(schema, { a: 'x', B: 1, _: 1 })).toEqual([
      '$.B: expected type string, got integer',
      '$._: expected type string, got integer',
      "$.a: does not match pattern '^z'",
      '$.a: must be at least 5 characters',
    ]);
  });

  it('sorts few lines and many alike by path: a short list takes its own sort, a long one the built-in (property)', () => {
    // Up to 40 properties, each given a value of the wrong type: as many lines, whatever their order in the input.
    fc.assert(
      fc.property(fc.uniqueArray(fc.stringMatching(/^[A-Za-z_][A-Za-z0-9_]{0,6}$/), { maxLength: 40 }), (names) => {
        const properties = Object.fromEntries(names.map((n) => [n, { type: 'integer', minimum: 1 }]));
        const said = lines({ type: 'object', properties }, Object.fromEntries(names.map((n) => [n, 'x'])));
        // By path, in code units (the path, not the whole line: `$._` before `$._0`).
        const paths = names.map((n) => `$.${n}`).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
        expect(said).toEqual(paths.map((path) => `${path}: expected type integer, got string`));
      }),
      { numRuns: 60 },
    );
  });

  it('gives identical output whatever the key order of the input (property)', () => {
    const schema: JsonObject = {
      type: 'object',
      properties: {
        amount: { type: 'integer', minimum: 1 },
        currency: { enum: ['AED', 'EUR'] },
        meta: { type: 'object', additionalProperties: false, properties: { tag: { type: 'string' } } },
      },
      required: ['amount', 'currency'],
      additionalProperties: false,
    };
    const compiled = compiler.compile(schema);
    const shuffle = (v: JsonValue, seed: number): JsonValue => {
      if (Array.isArray(v)) return v.map((x, i) => shuffle(x, seed + i));
      if (v === null || typeof v !== 'object') return v;
      const entries = Object.entries(v);
      const rotated = entries.map((_, i) => entries[(i + seed) % entries.length] as [string, JsonValue]);
      if (seed % 2 === 1) rotated.reverse();
      return Object.fromEntries(rotated.map(([k, x]) => [k, shuffle(x, seed + 1)]));
    };
    fc.assert(
      fc.property(fc.dictionary(fc.string(), fc.jsonValue({ maxDepth: 2 })), fc.nat(20), (extra, seed) => {
        const value = { ...extra, amount: '0', currency: 'usd', meta: { ...extra, tag: 1 } } as JsonValue;
        const a = formatErrors(compiled.validate(value));
        const b = formatErrors(compiled.validate(shuffle(value, seed)));
        expect(b).toBe(a);
      }),
      { numRuns: 200 },
    );
  });
});

describe('limits', () => {
  const nested = (depth: number): unknown => {
    let v: unknown = 1;
    for (let i = 0; i < depth; i++) v = [v];
    return v;
  };

  it('accepts 64 levels and refuses 65', () => {
    expect(checkArgumentLimits(nested(MAX_ARGUMENT_DEPTH))).toBeNull();
    expect(checkArgumentLimits(nested(MAX_ARGUMENT_DEPTH + 1))).toEqual({
      path: '$',
      message: 'arguments nested deeper than 64 levels',
    });
    expect(checkArgumentLimits({ a: { b: nested(MAX_ARGUMENT_DEPTH - 2) } })).toBeNull();
    expect(checkArgumentLimits({ a: { b: nested(MAX_ARGUMENT_DEPTH - 1) } })).not.toBeNull();
  });

  it('refuses a 100,000-deep array without crashing', () => {
    expect(checkArgumentLimits(nested(100_000))?.message).toBe('arguments nested deeper than 64 levels');
  });

  it('measures the UTF-8 bytes of the JSON text: exactly 1 MiB passes, one byte more does not', () => {
    const overhead = JSON.stringify({ s: '' }).length;
    const exact = { s: 'x'.repeat(MAX_ARGUMENT_BYTES - overhead) };
    expect(new TextEncoder().encode(JSON.stringify(exact)).length).toBe(MAX_ARGUMENT_BYTES);
    expect(checkArgumentLimits(exact)).toBeNull();
    expect(checkArgumentLimits({ s: 'x'.repeat(MAX_ARGUMENT_BYTES - overhead + 1) })).toEqual({
      path: '$',
      message: 'arguments exceed 1048576 bytes',
    });
  });

  it('counts escapes and multi-byte characters as JSON and UTF-8 do (property)', () => {
    const utf8 = (v: unknown): number => new TextEncoder().encode(JSON.stringify(v)).length;
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 10 }), (value) => {
        // Padded to exactly the limit: the check must agree with the real encoding to the byte.
        const pad = 'x'.repeat(MAX_ARGUMENT_BYTES - utf8({ pad: '', v: value }));
        expect(checkArgumentLimits({ pad, v: value })).toBeNull();
        expect(checkArgumentLimits({ pad: `${pad}x`, v: value })?.message).toBe('arguments exceed 1048576 bytes');
      }),
      { numRuns: 50 },
    );
    const tricky = { 'k"\\': ['é', '😀', '\u0001', '\n', '\ud800', 'a\u2028'] };
    const big = { pad: 'x'.repeat(MAX_ARGUMENT_BYTES - utf8({ pad: '', t: tricky })), t: tricky };
    expect(utf8(big)).toBe(MAX_ARGUMENT_BYTES);
    expect(checkArgumentLimits(big)).toBeNull();
    expect(checkArgumentLimits({ ...big, pad: `${big.pad}x` })).not.toBeNull();
  });

  it('prefers the depth error when both limits are broken', () => {
    expect(checkArgumentLimits({ big: 'x'.repeat(MAX_ARGUMENT_BYTES), deep: nested(100) })?.message).toBe(
      'arguments nested deeper than 64 levels',
    );
    expect(checkArgumentLimits({ deep: nested(100), big: 'x'.repeat(MAX_ARGUMENT_BYTES) })?.message).toBe(
      'arguments nested deeper than 64 levels',
    );
  });
});

describe('remembered lines (a caller repeating a mistake is not worded again)', () => {
  it('say what each value holds: its type, the name it adds, index or key at the same pointer', () => {
    const c = compiler.compile({
      type: 'object',
      properties: { n: { type: 'integer' }, x: { type: ['array', 'object'], items: { type: 'integer' }, additionalProperties: { type: 'integer' } } },
      additionalProperties: false,
    });
    for (let round = 0; round < 2; round++) {
      expect(c.validate({ n: 'a' })).toEqual([{ path: '$.n', message: 'expected type integer, got string' }]);
      expect(c.validate({ n: true })).toEqual([{ path: '$.n', message: 'expected type integer, got boolean' }]);
      expect(c.validate({ extra: 1 })).toEqual([{ path: '$.extra', message: 'additional property is not allowed' }]);
      expect(c.validate({ other: 1 })).toEqual([{ path: '$.other', message: 'additional property is not allowed' }]);
      expect(c.validate({ x: ['a'] })).toEqual([{ path: '$.x[0]', message: 'expected type integer, got string' }]);
      expect(c.validate({ x: { '0': 'a' } })).toEqual([{ path: '$.x["0"]', message: 'expected type integer, got string' }]);
    }
    // Every answer is the caller's own: changing one does not change the next.
    const first = c.validate({ n: 'a' });
    (first[0] as { message: string }).message = 'changed';
    expect(c.validate({ n: 'a' })).toEqual([{ path: '$.n', message: 'expected type integer, got string' }]);
  });
});
