import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createSchemaCompiler, isBacktrackSafe, LARGE_SCHEMA_SUBSCHEMAS, linearRegExp, re2RegExp } from '#domain/schema-compiler';
import { DomainError } from '#domain/errors';
import type { JsonObject } from '#domain/types';

const compiler = createSchemaCompiler();

/** The DomainError `check` throws, or a failure if it throws nothing. */
const refusal = (schema: unknown, where = 'inputSchema'): DomainError => {
  try {
    compiler.check(schema as JsonObject, where);
  } catch (e) {
    if (e instanceof DomainError) return e;
    throw e;
  }
  throw new Error(`expected ${JSON.stringify(schema)} to be refused`);
};

const objectWith = (property: JsonObject): JsonObject => ({ type: 'object', properties: { a: property } });

describe('schema compiler: refusals', () => {
  it('refuses an unknown keyword such as the typo minimun, naming it and where it is', () => {
    const e = refusal(objectWith({ type: 'integer', minimun: 1 }));
    expect(e.kind).toBe('invalid-definition');
    expect(e.code).toBe('unknown-keyword');
    expect(e.message).toBe("inputSchema: unknown keyword 'minimun' at #/properties/a");
  });

  it('refuses an unknown keyword even in a $defs entry nothing references (Ajv alone would not compile it)', () => {
    expect(refusal({ type: 'object', $defs: { unused: { minimun: 1 } } }).code).toBe('unknown-keyword');
  });

  it('refuses keywords Ajv knows but JSON Schema 2020-12 does not (nullable, vendor x-)', () => {
    expect(refusal(objectWith({ type: 'string', nullable: true })).code).toBe('unknown-keyword');
    expect(refusal(objectWith({ type: 'string', 'x-internal': true })).code).toBe('unknown-keyword');
  });

  it('refuses a remote $ref', () => {
    const e = refusal(objectWith({ $ref: 'http://example.com/schemas/money.json' }));
    expect(e.code).toBe('remote-ref');
    expect(e.message).toContain('http://example.com/schemas/money.json');
  });

  it('refuses a $ref to a relative file', () => {
    expect(refusal(objectWith({ $ref: 'money.json#/$defs/amount' })).code).toBe('remote-ref');
  });

  it('refuses a $ref to the meta-schema, which Ajv would otherwise resolve from its own registry', () => {
    expect(refusal(objectWith({ $ref: 'https://json-schema.org/draft/2020-12/schema' })).code).toBe('remote-ref');
  });

  it('refuses a non-local $dynamicRef, and a $ref to an $id the schema does not define (issue 16: $id itself is allowed)', () => {
    expect(refusal(objectWith({ $dynamicRef: 'https://example.com/x#meta' })).code).toBe('remote-ref');
    expect(() => compiler.check({ type: 'object', $id: 'https://example.com/tool.json' }, 'inputSchema')).not.toThrow();
    expect(() => compiler.check(objectWith({ $id: 'other.json', type: 'string' }), 'inputSchema')).not.toThrow();
    expect(refusal(objectWith({ $ref: 'other.json' })).code).toBe('remote-ref');
  });

  it('does not mistake a property NAMED $ref or an enum value for a reference', () => {
    expect(() =>
      compiler.check(
        { type: 'object', properties: { $ref: { type: 'string', enum: ['http://x'] } }, default: { $ref: 'http://x' } },
        'inputSchema',
      ),
    ).not.toThrow();
  });

  it('accepts a local $ref', () => {
    expect(() =>
      compiler.check({ type: 'object', properties: { a: { $ref: '#/$defs/amount' } }, $defs: { amount: { type: 'integer' } } }, 'inputSchema'),
    ).not.toThrow();
  });

  it('refuses a backreference pattern, naming the pattern', () => {
    const e = refusal(objectWith({ type: 'string', pattern: '(a)\\1' }));
    expect(e.code).toBe('unsafe-pattern');
    expect(e.message).toContain("pattern '(a)\\1'");
  });

  it('refuses lookahead and lookbehind, also as patternProperties keys', () => {
    expect(refusal(objectWith({ type: 'string', pattern: '^(?=.*\\d).+$' })).code).toBe('unsafe-pattern');
    expect(refusal(objectWith({ type: 'string', pattern: '(?<!x)y' })).code).toBe('unsafe-pattern');
    expect(refusal({ type: 'object', patternProperties: { '^(?!tmp_)': { type: 'string' } } }).code).toBe('unsafe-pattern');
  });

  it('refuses a pattern that is not an ECMA-262 regular expression at all (even one RE2 would take)', () => {
    expect(refusal(objectWith({ type: 'string', pattern: '[' })).code).toBe('schema-invalid');
    expect(refusal(objectWith({ type: 'string', pattern: '(?i)abc' })).code).toBe('schema-invalid');
  });

  it('refuses a schema that does not compile', () => {
    expect(refusal(objectWith({ type: 'strng' })).code).toBe('schema-invalid');
    expect(refusal(objectWith({ type: 'integer', minimum: 'zero' })).code).toBe('schema-invalid');
    expect(refusal(objectWith({ $ref: '#/$defs/missing' })).code).toBe('schema-invalid');
    expect(refusal({ type: 'object', $schema: 'http://json-schema.org/draft-07/schema#' }).code).toBe('schema-invalid');
  });

  it('refuses a schema nested deeper than 128 subschemas instead of overflowing the stack; accepts 100', () => {
    const nest = (levels: number): JsonObject => {
      let schema: JsonObject = { type: 'string' };
      for (let i = 0; i < levels; i++) schema = { type: 'object', properties: { a: schema } };
      return schema;
    };
    expect(refusal(nest(20_000)).code).toBe('schema-invalid');
    expect(refusal(nest(129)).message).toContain('deeper than 128 levels');
    expect(() => compiler.check(nest(100), 'inputSchema')).not.toThrow();
  });

  it('refuses an unknown format: asserting formats means a misspelt one cannot silently pass everything', () => {
    expect(refusal(objectWith({ type: 'string', format: 'emial' })).code).toBe('schema-invalid');
  });

  it('refuses a root that is not an object schema with type: object, naming where', () => {
    const e = refusal({ type: 'array', items: { type: 'string' } }, 'outputSchema');
    expect(e.code).toBe('schema-root-not-object');
    expect(e.message).toBe('outputSchema must be an object schema with type: object');
    expect(refusal({ properties: {} }).code).toBe('schema-root-not-object');
    expect(refusal(['type', 'object']).code).toBe('schema-root-not-object');
    expect(refusal(true).code).toBe('schema-root-not-object');
  });

  it('keeps every message on one line', () => {
    for (const schema of [objectWith({ type: 'strng' }), objectWith({ minimun: 1 }), objectWith({ pattern: '(a)\\1' })]) {
      expect(refusal(schema).message).not.toContain('\n');
    }
  });
});

describe('schema compiler: what it accepts', () => {
  it('accepts the 2020-12 dialect, formats, union types, tuples and annotations', () => {
    const schema: JsonObject = {
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      type: 'object',
      title: 'Lookup',
      properties: {
        when: { type: 'string', format: 'date-time', description: 'ISO time', examples: ['2026-01-01T00:00:00Z'] },
        maybe: { type: ['string', 'null'], pattern: '^[a-z]+$' },
        pair: { type: 'array', prefixItems: [{ type: 'string' }, { type: 'integer' }], items: false },
        code: { pattern: '^\\p{Lu}{3}$' },
      },
      required: ['when'],
      $comment: 'fine',
    };
    const compiled = compiler.compile(schema, 'inputSchema');
    expect(compiled.validate({ when: '2026-01-01T00:00:00Z', maybe: null, pair: ['a', 1], code: 'AED' })).toEqual([]);
  });

  it('compile checks first', () => {
    expect(() => compiler.compile(objectWith({ minimun: 1 }))).toThrow(DomainError);
  });

  it('owns a copy: changing the caller’s schema afterwards changes nothing', () => {
    const schema: JsonObject = { type: 'object', properties: { a: { type: 'integer' } } };
    const compiled = compiler.compile(schema);
    (schema['properties'] as JsonObject)['a'] = { type: 'string' };
    expect(compiled.validate({ a: 1 })).toEqual([]);
    expect(compiled.schema).toEqual({ type: 'object', properties: { a: { type: 'integer' } } });
  });

  it('compiles the same schema twice (Ajv keeps no registry of what it compiled)', () => {
    const schema: JsonObject = { type: 'object', properties: { a: { type: 'integer' } } };
    compiler.check(schema, 'inputSchema');
    expect(compiler.compile(schema).validate({ a: 'x' })).toHaveLength(1);
  });

  it('runs patterns in linear time: ^(a+)+$ against 50,000 a and a ! completes and does not match', () => {
    const compiled = compiler.compile(objectWith({ type: 'string', pattern: '^(a+)+$' }));
    const errors = compiled.validate({ a: `${'a'.repeat(50_000)}!` });
    expect(errors).toEqual([{ path: '$.a', message: "does not match pattern '^(a+)+$'" }]);
  });
});

describe('pattern engines', () => {
  it('runs natively only the narrow class a backtracking engine runs in linear time', () => {
    for (const safe of ['^PMT-\\d{3,}$', '^[A-Z]{2}[0-9]{2}[A-Z0-9]{11,30}$', '^[a-z0-9_-]+$', '^\\d{4}-\\d{2}-\\d{2}$', '^x+\\d{4}$']) {
      expect(isBacktrackSafe(safe), safe).toBe(true);
    }
    for (const unsafe of [
      '^(a+)+$', // a group
      '^a*a*$', // two variable atoms: O(n²)
      '^\\d+\\d{5}$', // too long a fixed tail after the variable atom
      'a+$', // not anchored at the start
      '^a|b$', // alternation
      '^a+?$', // lazy
      '^.+$', // `.` differs between V8 and RE2 on line terminators
      '^\\s+$', // `\s` differs on Unicode spaces
      '^\\bx$',
      '^[[:alpha:]]$',
      '^a+$b',
    ]) {
      expect(isBacktrackSafe(unsafe), unsafe).toBe(false);
    }
  });

  it('gives the same answers as RE2 for the patterns it runs natively (differential property)', () => {
    const atom = fc.constantFrom('a', 'b', '-', '\\d', '\\D', '\\w', '\\W', '\\.', '[a-c]', '[^a]', '[\\d_]', '[-x]', 'é', '😀');
    const fixed = fc.tuple(atom, fc.constantFrom('', '{2}', '{1,1}'));
    const variable = fc.tuple(atom, fc.constantFrom('*', '+', '?', '{1,}', '{0,3}', '{2,5}'));
    const pattern = fc
      .tuple(fc.array(fixed, { maxLength: 3 }), variable, fc.array(fc.tuple(atom, fc.constant('')), { maxLength: 4 }), fc.boolean())
      .map(([pre, v, post, end]) => `^${[...pre, v, ...post].map(([a, q]) => a + q).join('')}${end ? '$' : ''}`);
    const input = fc
      .array(fc.constantFrom('a', 'b', 'c', '-', '_', '.', '1', '9', 'é', '😀', '\n', '\u2028', '\u00a0', ' ', 'Z'), { maxLength: 12 })
      .map((cs) => cs.join(''));
    fc.assert(
      fc.property(pattern, fc.array(input, { minLength: 1, maxLength: 10 }), (p, inputs) => {
        expect(isBacktrackSafe(p), p).toBe(true);
        const native = linearRegExp(p);
        expect(native).toBeInstanceOf(RegExp);
        const re2 = re2RegExp(p);
        for (const s of inputs) expect(native.test(s), `${p} on ${JSON.stringify(s)}`).toBe(re2.test(s));
      }),
      { numRuns: 500 },
    );
  });

  it('still refuses what RE2 cannot run, even where V8 could', () => {
    expect(() => linearRegExp('^(a)\\1$')).toThrow();
  });
});

describe('large schemas (compiled without Ajv\'s optimisation pass)', () => {
  // The same fields, alone and padded past the threshold with fields the values never carry: the verdicts and the
  // error lines must not depend on which of the two Ajv instances compiled the schema.
  const fields: JsonObject = {
    code: { type: 'string', pattern: '^(PAY|REF)-[0-9]{4,8}$' },
    amount: { type: 'number', minimum: 0, multipleOf: 0.01 },
    tags: { type: 'array', items: { enum: ['a', 'b'] }, uniqueItems: true },
    when: { type: 'string', format: 'date' },
    nested: { type: 'object', properties: { x: { type: 'integer' } }, required: ['x'], additionalProperties: false },
  };
  const padding: JsonObject = Object.fromEntries(Array.from({ length: LARGE_SCHEMA_SUBSCHEMAS }, (_, i) => [`pad${i}`, { type: 'string', pattern: `^p${i}[a-z]*$` }]));
  const small = compiler.compile({ type: 'object', properties: fields });
  const large = compiler.compile({ type: 'object', properties: { ...fields, ...padding } });
  const value = fc.record(
    {
      code: fc.oneof(fc.constantFrom('PAY-1234', 'REF-12345678', 'PAY-12', 'XYZ-1234'), fc.integer()),
      amount: fc.oneof(fc.double({ noNaN: true, min: -10, max: 10 }), fc.constant(1.25), fc.string()),
      tags: fc.array(fc.constantFrom('a', 'b', 'c'), { maxLength: 3 }),
      when: fc.constantFrom('2026-12-01', '2026-13-01', 'soon'),
      nested: fc.oneof(fc.constant({ x: 1 }), fc.constant({ x: 'one' }), fc.constant({}), fc.constant({ x: 1, y: 2 })),
    },
    { requiredKeys: [] },
  );

  it('validate exactly as a small schema does', () => {
    fc.assert(fc.property(value, (v) => {
        expect(large.validate(v)).toEqual(small.validate(v));
      }), { numRuns: 300 });
  });

  it('still apply their own extra fields', () => {
    expect(large.validate({ pad3: 'p3abc' })).toEqual([]);
    expect(large.validate({ pad3: 'nope' })).toHaveLength(1);
  });
});

describe('schema compiler: memory', () => {
  it('keeps nothing of a validator once its holder lets it go: compiling again and again leaves the heap flat', async () => {
    const { setFlagsFromString } = await import('node:v8');
    const { runInNewContext } = await import('node:vm');
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const own = createSchemaCompiler();
    const heapMiB = (): number => {
      gc();
      return process.memoryUsage().heapUsed / 2 ** 20;
    };
    const compileMany = (tag: string): void => {
      for (let i = 0; i < 2000; i++) {
        const properties: JsonObject = {};
        for (let k = 0; k < 10; k++) properties[`${tag}${i}_${k}`] = { type: 'string', description: 'd'.repeat(200) };
        expect(own.compile({ type: 'object', properties }, 'inputSchema').validate({})).toEqual([]);
      }
    };
    // The least of a few readings, a loop turn apart: work still queued from the tests before this one (a compile job
    // waiting for the CPU on a loaded machine) may hold something for a moment, which is not what this measures.
    const settledHeapMiB = async (): Promise<number> => {
      let least = Number.POSITIVE_INFINITY;
      for (let i = 0; i < 5; i++) {
        await new Promise<void>((resolve) => setImmediate(resolve));
        least = Math.min(least, heapMiB());
      }
      return least;
    };
    compileMany('warm');
    const before = await settledHeapMiB();
    compileMany('a');
    compileMany('b');
    // Ajv alone keeps every schema it compiled (~11 KB each here: 4,000 would be ~45 MiB).
    expect((await settledHeapMiB()) - before).toBeLessThan(15);
  });
});
