/**
 * Validators are compiled AHEAD of the first call, in slices that yield to the event loop (issue 9): a version is
 * compiled when the read model learns of it, a call for one not ready yet waits only for its own steps, and a schema
 * that does not compile refuses every call with its reason instead of failing every caller.
 */
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { CatalogueReader } from '#app/catalogue-reader';
import { toolStream } from '#domain/events';
import { createSchemaCompiler, type SchemaCompiler } from '#domain/schema-compiler';
import type { JsonObject, ToolDefinition } from '#domain/types';
import { createCompiledSchemaCache } from '#mcp/compiled-schemas';
import { createSchemaWarmup } from '#mcp/schema-warmup';
import { createMemoryEventStore } from '#store/memory-event-store';
import { CatalogueProjection, type CatalogueVersion } from '#projections/catalogue';
import { aDefinition, publishedEvent, retiredEvent } from '../fixtures/builders.ts';

const tick = (): Promise<void> => new Promise((r) => setImmediate(r));

/** Turns of the event loop until `done()` (at most `max`): how often the loop was free while work went on. */
const ticksUntil = async (done: () => boolean, max = 100_000): Promise<number> => {
  let n = 0;
  while (!done() && n < max) {
    await tick();
    n++;
  }
  return n;
};

const versionOf = (def: ToolDefinition): CatalogueVersion => {
  const c = new CatalogueProjection();
  c.apply({ position: '1', event: publishedEvent(def) });
  return c.find(def.name, def.version) as CatalogueVersion;
};

/** Patterns RE2 takes milliseconds each to compile (accepted at publish: linear, within the size budget). */
const costlyPatterns = (n: number, tag: string): JsonObject => {
  const properties: JsonObject = {};
  for (let i = 0; i < n; i++) properties[`p${i}`] = { type: 'string', pattern: `^(a{1,400}b){1,2}b${tag}_${i}$` };
  return { type: 'object', properties };
};

const counting = (real: SchemaCompiler, compiled: string[]): SchemaCompiler => ({
  ...real,
  check: (s, w) => real.check(s, w),
  compile: (s, w) => (compiled.push(w ?? ''), real.compile(s, w)),
});

describe('compiled schema cache', () => {
  it('compiles a version once, input and output schemas together, and keeps it', async () => {
    const compiled: string[] = [];
    const cache = createCompiledSchemaCache(counting(createSchemaCompiler(), compiled));
    const v = versionOf(aDefinition({ name: 'b.two', handler: 'b.two', outputSchema: { type: 'object', properties: { ok: { type: 'boolean' } } } }));
    const first = await cache.ready(v);
    expect(compiled).toEqual(['inputSchema', 'outputSchema']);
    expect(await cache.ready(v)).toBe(first);
    expect(compiled).toHaveLength(2);
    expect(first.output?.validate({ ok: 'yes' })).toEqual([{ path: '$.ok', message: 'expected type boolean, got string' }]);
    expect(cache.stats()).toMatchObject({ ready: 1, failed: 0, pending: 0 });
  });

  it('versions with the same schema text share one validator; a different schema is compiled', async () => {
    const compiled: string[] = [];
    const cache = createCompiledSchemaCache(counting(createSchemaCompiler(), compiled));
    const a = versionOf(aDefinition({ name: 'b.one', handler: 'b.one' }));
    const b = versionOf(aDefinition({ name: 'b.two', handler: 'b.two', version: '2.0.0' }));
    const other = versionOf(aDefinition({ name: 'b.three', handler: 'b.three', inputSchema: { type: 'object', properties: { n: { type: 'integer' } } } }));
    const [sa, sb] = await Promise.all([cache.ready(a), cache.ready(b)]);
    expect(sb.input).toBe(sa.input);
    expect(compiled).toEqual(['inputSchema']);
    expect((await cache.ready(other)).input.validate({ n: 'x' })).toEqual([{ path: '$.n', message: 'expected type integer, got string' }]);
    expect(compiled).toEqual(['inputSchema', 'inputSchema']);
  });

  it('a version the reader learns of is compiled in the background, with no call, and dropped when retired', async () => {
    const store = createMemoryEventStore();
    const reader = new CatalogueReader(store);
    const def = aDefinition({ name: 'fx.rates', handler: 'fx.rates' });
    const warm = createSchemaWarmup({ compiler: createSchemaCompiler(), reader, isOffered: () => true, log: pino({ level: 'silent' }) });
    await store.append(toolStream(def.name), [publishedEvent(def)], { expectedRevision: 'no_stream' });
    await reader.catchUp();
    await ticksUntil(() => warm.cache.stats().ready === 1);
    // A lazy cache compiles nothing until the first call: here the validators are ready before anyone asked.
    expect(warm.cache.stats()).toMatchObject({ ready: 1, pending: 0, failed: 0 });
    await store.append(toolStream(def.name), [retiredEvent(def.name, def.version)], { expectedRevision: 0 });
    await reader.catchUp();
    expect(warm.cache.stats()).toMatchObject({ ready: 0, pending: 0 });
    warm.close();
  });

  it('compiles a costly schema in steps: the event loop turns while its patterns compile', async () => {
    const compiler = createSchemaCompiler();
    compiler.compile({ type: 'object' }); // Ajv compiles its meta-schema on first use: not this schema's cost
    const cache = createCompiledSchemaCache(compiler);
    const v = versionOf(aDefinition({ name: 'pay.costly', handler: 'pay.costly', inputSchema: costlyPatterns(40, 'steps') }));
    let done = false;
    const ready = cache.ready(v).then((s) => ((done = true), s));
    const turns = await ticksUntil(() => done);
    const schemas = await ready;
    expect(schemas.refusal).toBeUndefined();
    expect(schemas.input.validate({ p0: 'ab' })).toHaveLength(1);
    console.log(`40 costly patterns: the loop turned ${turns} times while they compiled; longest step ${cache.stats().longestStepMs.toFixed(1)} ms`);
    // Compiled in one go (as on a first call before), the loop would not have turned at all until it was done.
    expect(turns).toBeGreaterThan(5);
  });

  it('a call for a version still queued goes first: it does not wait for the versions queued before it', async () => {
    const compiled: string[] = [];
    const cache = createCompiledSchemaCache(counting(createSchemaCompiler(), compiled));
    const queued = Array.from({ length: 5 }, (_, i) => versionOf(aDefinition({ name: `q.t${i}`, handler: `q.t${i}`, inputSchema: costlyPatterns(5, `q${i}`) })));
    for (const v of queued) cache.warm(v);
    const wanted = versionOf(aDefinition({ name: 'w.wanted', handler: 'w.wanted' }));
    cache.warm(wanted);
    await cache.ready(wanted);
    expect(cache.stats().pending).toBeGreaterThanOrEqual(4);
    await ticksUntil(() => cache.stats().pending === 0);
    expect(cache.stats()).toMatchObject({ ready: 6, pending: 0 });
  });

  it('a schema that does not compile refuses every call with the reason, told once; never an internal error', async () => {
    const failures: string[] = [];
    const cache = createCompiledSchemaCache(createSchemaCompiler(), { onFailure: (v, reason) => failures.push(`${v.name}@${v.version}: ${reason}`) });
    // Written to the store before RE2 patterns were required: a lookahead no linear engine runs.
    const v = versionOf(aDefinition({ name: 'old.lookahead', handler: 'old.lookahead', inputSchema: { type: 'object', properties: { a: { type: 'string', pattern: '(?=a)b' } } } }));
    const schemas = await cache.ready(v);
    expect(schemas.refusal).toMatch(/unsafe|linear/i);
    const errors = schemas.input.validate({ a: 'b' });
    expect(errors).toEqual([{ path: '$', message: expect.stringMatching(/^old\.lookahead@1\.0\.0 cannot be served: its schemas do not compile here \(.*\); publish a corrected version$/) }]);
    expect(await cache.ready(v)).toBe(schemas);
    expect(failures).toHaveLength(1);
    expect(cache.stats()).toMatchObject({ ready: 1, failed: 1 });
  });
});

describe('large schemas compiled in another thread (offThread)', () => {
  /** A schema past OFF_THREAD_SUBSCHEMAS: properties with patterns, a recursive $defs entry, unique items. */
  const large = (tag: string): JsonObject => ({
    ...costlyPatterns(40, tag),
    $defs: { node: { type: 'object', properties: { next: { $ref: '#/$defs/node' }, v: { enum: ['x', 'y'] } }, required: ['v'] } },
  });
  const withList = (tag: string): JsonObject => {
    const s = large(tag);
    (s['properties'] as JsonObject)['list'] = { type: 'array', uniqueItems: true, items: { anyOf: [{ $ref: '#/$defs/node' }, { type: 'integer' }] } };
    return s;
  };
  const values = [{}, { p1: 'ab' }, { list: [1, 1] }, { list: [{ v: 'x', next: { v: 'q' } }, 'a'] }, { p0: 7, list: [{ v: 'y' }] }];

  it('compiles nothing here for a large schema: it evaluates the source made elsewhere, with the same answers', async () => {
    const real = createSchemaCompiler();
    const compiled: string[] = [];
    const asked: string[] = [];
    const cache = createCompiledSchemaCache(counting(real, compiled), {
      // A fake of the worker (definition-budget.ts): the same compileSource, run here.
      offThread: (schema, where) => (asked.push(where), Promise.resolve(real.compileSource(schema, where))),
    });
    const def = aDefinition({ name: 'b.big', handler: 'b.big', inputSchema: withList('a'), outputSchema: { type: 'object' } });
    const schemas = await cache.ready(versionOf(def));
    expect(asked).toEqual(['inputSchema']); // the small output schema is compiled here, as before
    expect(compiled).toEqual(['outputSchema']);
    const direct = real.compile(def.inputSchema, 'inputSchema');
    for (const v of values) expect(schemas.input.validate(v)).toEqual(direct.validate(v));
    expect(schemas.input.validate({ list: [1, 1] })).toEqual([{ path: '$.list', message: 'must have unique items' }]);
  });

  it('compiles here when the other thread fails or has no source for the schema', async () => {
    const real = createSchemaCompiler();
    const compiled: string[] = [];
    const failing = createCompiledSchemaCache(counting(real, compiled), { offThread: () => Promise.reject(new Error('worker gone')) });
    const none = createCompiledSchemaCache(counting(real, compiled), { offThread: () => Promise.resolve(undefined) });
    const broken = createCompiledSchemaCache(counting(real, compiled), { offThread: () => Promise.resolve('module.exports = 1') });
    for (const [i, cache] of [failing, none, broken].entries()) {
      const schemas = await cache.ready(versionOf(aDefinition({ name: `b.l${i}`, handler: `b.l${i}`, inputSchema: large(`l${i}`) })));
      expect(schemas.refusal).toBeUndefined();
      expect(schemas.input.validate({ p0: 'zz' })).toHaveLength(1);
    }
    expect(compiled).toEqual(['inputSchema', 'inputSchema', 'inputSchema']);
  });
});
