/**
 * Validators per published version, compiled LAZILY on a version's first call and then cached: a catalogue of
 * thousands of tools starts serving at once, and a version nobody calls is never compiled.
 */
import type { SchemaCompiler } from '../domain/schema-compiler.ts';
import type { CompiledSchema } from '../domain/validate.ts';
import type { CatalogueVersion } from '../../projections/catalogue.ts';

export interface VersionSchemas {
  input: CompiledSchema;
  output: CompiledSchema | undefined;
}

export interface CompiledSchemaCache {
  get(v: CatalogueVersion): VersionSchemas;
  readonly size: number;
}

export const createCompiledSchemaCache = (compiler: SchemaCompiler): CompiledSchemaCache => {
  // Keyed by name@version, not by record: a deprecation replaces the record but never the schemas.
  const cache = new Map<string, VersionSchemas>();
  return {
    get(v) {
      const key = `${v.name}@${v.version}`;
      let hit = cache.get(key);
      if (!hit) {
        const def = v.definition;
        hit = {
          input: compiler.compile(def.inputSchema, 'inputSchema'),
          output: def.outputSchema ? compiler.compile(def.outputSchema, 'outputSchema') : undefined,
        };
        cache.set(key, hit);
      }
      return hit;
    },
    get size() {
      return cache.size;
    },
  };
};
