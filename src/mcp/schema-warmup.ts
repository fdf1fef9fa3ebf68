/**
 * Keeps the compiled-schema cache (compiled-schemas.ts) ahead of callers: every version this process serves is queued
 * for compilation when the read model learns of it — the catalogue it caught up at start, then each catalogue change —
 * and a retired version's validators are dropped. It also says, once per version, why a version in the store is not
 * served: a handler outside the tool's namespace, published before that rule existed (docs/security.md).
 */
import type { Logger } from 'pino';
import type { CatalogueReader } from '#app/catalogue-reader';
import type { SchemaCompiler } from '#domain/schema-compiler';
import { handlerOutsideNamespace } from '#domain/tool-definition';
import type { CatalogueVersion } from '#projections/catalogue';
import { createCompiledSchemaCache, type CompiledSchemaCache } from './compiled-schemas.ts';

export interface SchemaWarmup {
  readonly cache: CompiledSchemaCache;
  close(): void;
}

export interface SchemaWarmupOptions {
  compiler: SchemaCompiler;
  reader: CatalogueReader;
  isOffered: (v: CatalogueVersion) => boolean;
  log: Pick<Logger, 'warn'>;
}

export const createSchemaWarmup = (o: SchemaWarmupOptions): SchemaWarmup => {
  const cache = createCompiledSchemaCache(o.compiler, {
    onFailure: (v, reason) =>
      o.log.warn({ tool: v.name, version: v.version, reason }, 'a published version\'s schemas do not compile here: every call to it is refused with the reason'),
  });
  const toldUnserved = new Set<string>();

  const consider = (name: string): void => {
    for (const v of o.reader.catalogue.versions(name)) {
      if (v.status === 'retired') {
        cache.forget(v);
        continue;
      }
      const outside = handlerOutsideNamespace(v.name, v.definition.handler);
      if (outside !== null) {
        const key = `${v.name}@${v.version}`;
        if (!toldUnserved.has(key)) {
          toldUnserved.add(key);
          o.log.warn({ tool: v.name, version: v.version, reason: outside }, 'a version published before the handler-namespace rule is not served (not listed, calls answer Unknown tool)');
        }
        continue;
      }
      if (o.isOffered(v)) cache.warm(v);
    }
  };

  for (const name of o.reader.catalogue.names()) consider(name);
  const stop = o.reader.onUpdate((u) => {
    for (const name of new Set(u.tools)) consider(name);
  });
  return {
    cache,
    close() {
      stop();
      cache.close();
    },
  };
};
