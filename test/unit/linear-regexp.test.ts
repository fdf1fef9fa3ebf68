/**
 * Issue 9, High 1 and its weaknesses, unit by unit: the RE2 binding and its bounded cache, the pattern budget, the
 * worker-thread budget, the depth scan before parse, in-place `$ref` cycles, and bounded validation messages.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { createDefinitionChecker } from '#app/definition-budget';
import { DomainError } from '#domain/errors';
import { scanJsonDepth } from '#domain/json-depth';
import { linearRegExp, linearRegExpCacheSize, MAX_PATTERNS_PER_DEFINITION, PATTERN_CACHE_SIZE } from '#domain/linear-regexp';
import { findInPlaceRefCycle } from '#domain/ref-cycles';
import { createSchemaCompiler } from '#domain/schema-compiler';
import type { JsonObject } from '#domain/types';
import { createCompiledSchema, formatErrors } from '#domain/validate';
import { aDefinition } from '../fixtures/builders.ts';

const compiler = createSchemaCompiler();
const refusal = (f: () => unknown): { code: string; message: string } => {
  try {
    f();
  } catch (e) {
    if (e instanceof DomainError) return { code: e.code, message: e.message };
    throw e;
  }
  throw new Error('expected a refusal');
};

describe('linear-time patterns on native RE2', () => {
  it('compiles and uses more distinct patterns than re2-wasm ever could (it failed after ~8,300), the cache bounded', () => {
    const count = PATTERN_CACHE_SIZE + 2_000;
    for (let i = 0; i < count; i++) {
      const m = linearRegExp(`^u${i}(x|yz)+[0-9]{1,3}$`);
      expect(m.test(`u${i}xyz12`) && !m.test(`u${i}`)).toBe(true);
    }
    expect(linearRegExpCacheSize()).toBe(PATTERN_CACHE_SIZE);
  });

  it('reuses a compiled pattern by source', () => {
    expect(linearRegExp('^(a|b)+c$')).toBe(linearRegExp('^(a|b)+c$'));
  });

  it('refuses more than 1,000 patterns or 64 KiB of patterns in one schema: schema-too-costly, before compiling', () => {
    const properties: JsonObject = {};
    for (let i = 0; i <= MAX_PATTERNS_PER_DEFINITION; i++) properties[`p${i}`] = { type: 'string', pattern: `(?=${i})` }; // each would be unsafe-pattern
    expect(refusal(() => compiler.check({ type: 'object', properties }, 'inputSchema'))).toEqual({
      code: 'schema-too-costly',
      message: 'inputSchema carries 1001 patterns; at most 1000 per schema',
    });
    const long = { type: 'object', properties: { a: { type: 'string', pattern: `^${'a'.repeat(70_000)}$` } } };
    expect(refusal(() => compiler.check(long, 'inputSchema')).code).toBe('schema-too-costly');
  });
});

describe('the definition budget (a worker thread with a deadline)', { timeout: 180_000 }, () => {
  const checker = createDefinitionChecker({ budgetMs: 50 });
  const generous = createDefinitionChecker({ budgetMs: 60_000 });
  afterAll(async () => {
    await checker.close();
    await generous.close();
  });
  const def = (properties: JsonObject) => ({
    name: 'payments.x', version: '1.0.0', description: 'x', sideEffect: 'none', handler: 'payments.x', access: { classification: 'public' },
    inputSchema: { type: 'object', properties },
  });
  const hostile: JsonObject = {};
  for (let i = 0; i < 1000; i++) hostile[`p${i}`] = { type: 'string', pattern: `^(a{1,400}b){1,2}b${i}$` };

  it('refuses a definition that overruns the budget with schema-too-costly, then checks the next one normally', async () => {
    await expect(checker.check(def(hostile))).rejects.toMatchObject({ kind: 'invalid-definition', code: 'schema-too-costly' });
    await expect(generous.check(def({ a: { type: 'string', pattern: '^[a-z]+$' } }))).resolves.toMatchObject({ name: 'payments.x', timeoutMs: 30_000 });
    await expect(generous.check(def({ a: { type: 'string', pattern: '(?=a)' } }))).rejects.toMatchObject({ code: 'unsafe-pattern' });
  });

  it('classifies a change in the worker, and refuses one that overruns the budget with schema-too-costly', async () => {
    // 400 anyOf branches with long descriptions: compared pairwise, this takes seconds on the event loop.
    const branches = (v: number) => Array.from({ length: 400 }, (_, k) => ({ description: `${k}:${v}:${'d'.repeat(1500)}`, maxLength: k }));
    const costly = (version: string, v: number) =>
      aDefinition({ name: 'payments.x', version, handler: 'payments.x', inputSchema: { type: 'object', properties: { x: { anyOf: branches(v) } } } });
    await expect(checker.classify(costly('1.0.0', 0), costly('2.0.0', 1))).rejects.toMatchObject({
      kind: 'invalid-definition',
      code: 'schema-too-costly',
      message: expect.stringMatching(/^definition: classifying the change from its baseline took longer than the budget of 50 ms/),
    });
    const before = aDefinition({ version: '1.0.0' });
    const after = aDefinition({ version: '1.1.0', description: 'changed' });
    await expect(generous.classify(before, after)).resolves.toEqual({
      level: 'patch',
      reasons: [expect.objectContaining({ level: 'patch', path: 'description', rule: 'description-changed' })],
    });
  });

  it('the event loop stays free while the worker compiles', async () => {
    let ticks = 0;
    let done = false;
    const some: JsonObject = Object.fromEntries(Object.entries(hostile).slice(0, 200));
    const running = generous.check(def(some)).finally(() => (done = true));
    while (!done) {
      await new Promise((r) => setImmediate(r));
      ticks++;
    }
    await running;
    // Compiling synchronously would have allowed no tick at all before it finished.
    expect(ticks).toBeGreaterThan(10);
  });

  it('compiles a published schema to source in the worker, after every waiting check; the source validates as compile does', async () => {
    const schema: JsonObject = { type: 'object', properties: Object.fromEntries(Object.entries(hostile).slice(0, 60)) };
    const order: string[] = [];
    const sources = [0, 1, 2, 3].map((i) => generous.source(schema, 'inputSchema').then((s) => (order.push(`source${i}`), s)));
    const checked = generous.check(def({ a: { type: 'string' } })).then(() => order.push('check'));
    const [source] = await Promise.all([...sources, checked]);
    // The first source job may already be running when the check arrives; the check goes before the rest.
    expect(order.indexOf('check')).toBeLessThanOrEqual(1);
    expect(typeof source).toBe('string');
    const fromSource = compiler.fromSource(schema, source as string);
    const direct = compiler.compile(schema, 'inputSchema');
    for (const value of [{}, { p0: 'ab0' }, { p0: 'aab0', p1: 'x', p59: 3 }]) expect(fromSource.validate(value)).toEqual(direct.validate(value));
    expect(fromSource.validate({ p1: 'x' })).toEqual([{ path: '$.p1', message: "does not match pattern '^(a{1,400}b){1,2}b1$'" }]);
    // A schema with no standalone form (unevaluatedItems) has no source: the serving thread compiles it itself.
    await expect(generous.source({ type: 'object', properties: { l: { type: 'array', unevaluatedItems: false } } }, 'inputSchema')).resolves.toBeUndefined();
  });
});

describe('depth before parse', () => {
  it('counts brackets outside strings and reads a top-level scalar id wherever it is', () => {
    expect(scanJsonDepth('{"a":[[1]]}', 3)).toEqual({ tooDeep: false, idText: undefined });
    expect(scanJsonDepth('{"a":[[[1]]]}', 3).tooDeep).toBe(true);
    expect(scanJsonDepth('{"a":"[[[[[[\\"[[[["}', 1).tooDeep).toBe(false);
    expect(scanJsonDepth(`{"jsonrpc":"2.0","params":{"x":${'['.repeat(100)}${']'.repeat(100)}},"id":"r-1"}`, 10)).toEqual({ tooDeep: true, idText: '"r-1"' });
    expect(scanJsonDepth('{"id": 42 ,"p":{"id":7}}', 10).idText).toBe('42');
    expect(scanJsonDepth('{"p":{"id":7}}', 10).idText).toBeUndefined();
    expect(scanJsonDepth('{"id":{"x":1}}', 10).idText).toBe('{"x":1}'); // not a scalar: JSON.parse of it is not an id
  });
});

describe('$ref cycles', () => {
  it('finds cycles of in-place applications and accepts recursion that descends into the value', () => {
    expect(findInPlaceRefCycle({ $defs: { a: { allOf: [{ $ref: '#/$defs/b' }] }, b: { anyOf: [{ $ref: '#/$defs/a' }] } } })).toBe('/$defs/a');
    expect(findInPlaceRefCycle({ $defs: { a: { not: { $ref: '#/$defs/a' } } } })).toBe('/$defs/a');
    expect(findInPlaceRefCycle({ $defs: { a: { type: 'object', properties: { n: { $ref: '#/$defs/a' } } } } })).toBeNull();
    expect(findInPlaceRefCycle({ $defs: { a: { items: { anyOf: [{ $ref: '#/$defs/a' }] } } } })).toBeNull();
  });

  it('refuses them at publish (schema-invalid); a validator that still overflows answers an error line, never throws', () => {
    const cyclic = { type: 'object', properties: { a: { $ref: '#/$defs/x' } }, $defs: { x: { allOf: [{ $ref: '#/$defs/y' }] }, y: { anyOf: [{ $ref: '#/$defs/x' }] } } };
    expect(refusal(() => compiler.check(cyclic, 'inputSchema'))).toEqual({
      code: 'schema-invalid',
      message: 'inputSchema: $ref cycle at #/$defs/x never descends into the value, so validation would recurse without end',
    });
    const overflowing = Object.assign(
      () => {
        throw new RangeError('Maximum call stack size exceeded');
      },
      { errors: null },
    );
    expect(createCompiledSchema({ type: 'object' }, overflowing as never).validate({})).toEqual([{ path: '$', message: 'cannot be validated: the schema recurses without end' }]);
  });
});

describe('bounded validation messages', () => {
  it('an enum lists 20 values and counts the rest; normal sizes are unchanged', () => {
    const values = Array.from({ length: 90_000 }, (_, i) => `v${i}`);
    const big = compiler.compile({ type: 'object', properties: { e: { enum: values } } });
    const [error] = big.validate({ e: 'nope' });
    expect(error?.message).toBe(`must be one of [${values.slice(0, 20).map((v) => JSON.stringify(v)).join(',')}, … (89980 more)]`);
    const small = compiler.compile({ type: 'object', properties: { e: { enum: ['a', 'b'] } } });
    expect(small.validate({ e: 'c' })).toEqual([{ path: '$.e', message: 'must be one of ["a","b"]' }]);
  });

  it('long constants, patterns, lines and many errors are elided', () => {
    const s = compiler.compile({ type: 'object', properties: { c: { const: 'k'.repeat(5000) }, p: { type: 'string', pattern: `^${'b'.repeat(500)}$` } } });
    const errors = s.validate({ c: 1, p: 'x' });
    expect(errors.map((e) => e.message)).toEqual([`must equal "${'k'.repeat(199)}… (4802 more characters)`, `does not match pattern '^${'b'.repeat(199)}… (302 more characters)'`]);
    const many = Array.from({ length: 500 }, (_, i) => ({ path: `$.k${i}`, message: 'is required' }));
    const text = formatErrors(many);
    expect(text.split('\n')).toHaveLength(101);
    expect(text.endsWith('… (400 more errors)')).toBe(true);
    expect(formatErrors([{ path: `$.${'z'.repeat(5000)}`, message: 'is required' }]).length).toBeLessThan(1100);
  });
});
