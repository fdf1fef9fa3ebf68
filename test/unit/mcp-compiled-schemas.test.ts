/** Validators are compiled lazily, once per version, on first use — never the whole catalogue at start. */
import { describe, expect, it } from 'vitest';
import { createSchemaCompiler, type SchemaCompiler } from '../../src/domain/schema-compiler.ts';
import { createCompiledSchemaCache } from '../../src/mcp/compiled-schemas.ts';
import { CatalogueProjection } from '../../projections/catalogue.ts';
import { aDefinition, publishedEvent } from '../fixtures/builders.ts';

describe('compiled schema cache', () => {
  it('compiles a version on its first use only, input and output schemas together', () => {
    const real = createSchemaCompiler();
    const compiled: string[] = [];
    const counting: SchemaCompiler = { check: (s, w) => real.check(s, w), compile: (s, w) => (compiled.push(w ?? ''), real.compile(s, w)) };
    const catalogue = new CatalogueProjection();
    const defs = [
      aDefinition({ name: 'a.one' }),
      aDefinition({ name: 'b.two', outputSchema: { type: 'object', properties: { ok: { type: 'boolean' } } } }),
    ];
    defs.forEach((d, i) => catalogue.apply({ position: String(i + 1), event: publishedEvent(d) }));
    const cache = createCompiledSchemaCache(counting);
    expect(compiled).toEqual([]);
    const b = catalogue.latest('b.two');
    if (!b) throw new Error('b.two missing');
    const first = cache.get(b);
    expect(compiled).toEqual(['inputSchema', 'outputSchema']);
    expect(cache.get(b)).toBe(first);
    expect(compiled).toHaveLength(2);
    expect(first.output?.validate({ ok: 'yes' })).toEqual([{ path: '$.ok', message: 'expected type boolean, got string' }]);
    expect(cache.size).toBe(1);
  });
});
