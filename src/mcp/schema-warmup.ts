/**
 * Keeps the compiled-schema cache (compiled-schemas.ts) ahead of callers: every version this process serves is queued
 * for compilation when the read model learns of it — the catalogue it caught up at start (up to a limit: a catalogue of
 * a hundred thousand tools compiles on first call past it), then each catalogue change — and a retired version's
 * validators are dropped. It also says, once per version, why a version in the store is not
 * served: a handler outside the tool's namespace, published before that rule existed (docs/security.md).
 */
import type { Logger } from 'pino';
import type { CatalogueReader } from '#app/catalogue-reader';
import type { SchemaCompiler } from '#domain/schema-compiler';
import { handlerOutsideNamespace } from '#domain/tool-definition';
import type { CatalogueVersion } from '#projections/catalogue';
import { createCompiledSchemaCache, DEFAULT_SCHEMA_CACHE, type CompiledSchemaCache, type CompiledSchemaCacheOptions } from './compiled-schemas.ts';

export interface SchemaWarmup {
  readonly cache: CompiledSchemaCache;
  /** Look through the catalogue and queue what it serves (once; at creation unless `deferStart`). */
  start(): void;
  close(): void;
}

export interface SchemaWarmupOptions {
  compiler: SchemaCompiler;
  reader: CatalogueReader;
  isOffered: (v: CatalogueVersion) => boolean;
  log: Pick<Logger, 'warn'>;
  /** Versions compiled ahead at start (default: half the cache, so the warm set is never evicted by itself). */
  warmLimit?: number;
  /** Where large schemas are compiled (compiled-schemas.ts `offThread`). */
  offThread?: CompiledSchemaCacheOptions['offThread'];
  /**
   * Wait for `start()` before looking through the catalogue: a serving process starts it once it is ready, so the
   * compiling (a hundred milliseconds and more on a large catalogue) does not delay readiness. Changes are warmed
   * as they arrive either way.
   */
  deferStart?: boolean;
}

export const DEFAULT_WARM_LIMIT = DEFAULT_SCHEMA_CACHE / 2;
/** Tools looked through at start between two turns of the event loop. */
const SCAN_SLICE = 2000;

export const createSchemaWarmup = (o: SchemaWarmupOptions): SchemaWarmup => {
  const cache = createCompiledSchemaCache(o.compiler, {
    details: (v) => o.reader.details.of(v),
    ...(o.offThread ? { offThread: o.offThread } : {}),
    onFailure: (v, reason) =>
      o.log.warn({ tool: v.name, version: v.version, reason }, 'a published version\'s schemas do not compile here: every call to it is refused with the reason'),
  });
  const toldUnserved = new Set<string>();

  /** Say why unserved versions are not served, drop retired ones; returns the versions to compile, newest first. */
  const served = (name: string): CatalogueVersion[] => {
    const out: CatalogueVersion[] = [];
    const vs = o.reader.catalogue.versions(name);
    for (let i = vs.length - 1; i >= 0; i--) {
      const v = vs[i] as CatalogueVersion;
      if (v.status === 'retired') {
        cache.forget(v);
        continue;
      }
      const outside = handlerOutsideNamespace(v.name, v.handler);
      if (outside !== null) {
        const key = `${v.name}@${v.version}`;
        if (!toldUnserved.has(key)) {
          toldUnserved.add(key);
          o.log.warn({ tool: v.name, version: v.version, reason: outside }, 'a version published before the handler-namespace rule is not served (not listed, calls answer Unknown tool)');
        }
        continue;
      }
      if (o.isOffered(v)) out.push(v);
    }
    return out;
  };
  const consider = (name: string): void => {
    for (const v of served(name)) cache.warm(v);
  };

  // At start, a catalogue of any size: every served version up to the limit, each tool's newest first (what an
  // unpinned call runs); past it, a version is compiled on its first call. Looked through a slice of tools at a time
  // after the server is up (a hundred thousand tools take a noticeable while), yielding between slices.
  const limit = o.warmLimit ?? DEFAULT_WARM_LIMIT;
  let closed = false;
  const initial = async (): Promise<void> => {
    const names = o.reader.catalogue.names();
    const later: CatalogueVersion[] = [];
    let warmed = 0;
    for (let i = 0; i < names.length && !closed; i++) {
      const [newest, ...older] = served(names[i] as string);
      if (newest && warmed < limit) {
        cache.warm(newest);
        warmed++;
      }
      if (later.length < limit) later.push(...older);
      if (i % SCAN_SLICE === SCAN_SLICE - 1) await new Promise((resolve) => setImmediate(resolve));
    }
    for (const v of later) {
      if (warmed >= limit || closed) break;
      cache.warm(v);
      warmed++;
    }
  };
  let started = false;
  const start = (): void => {
    if (started) return;
    started = true;
    void initial();
  };
  if (!o.deferStart) start();
  const stop = o.reader.onUpdate((u) => {
    for (const name of new Set(u.tools)) consider(name);
  });
  return {
    cache,
    start,
    close() {
      closed = true;
      stop();
      cache.close();
    },
  };
};
