/**
 * Validators per published version, compiled AHEAD of the first call and in slices. Compiling is synchronous (Ajv,
 * RE2) and an accepted schema can still cost a second (1,000 patterns): done on a version's first tools/call it
 * stalled every caller of the process once. Here a version is compiled when the read model learns of it
 * (schema-warmup.ts queues it), one step per macrotask: its patterns a few milliseconds at a time, then each schema,
 * yielding to the event loop between steps, so a tools/list waits at most one step. A call for a version not yet
 * ready moves it ahead of the queue and waits for its own steps only. A schema that does not compile (a version
 * written to the store before a rule existed) gets validators that refuse every call with the reason: a clear
 * `isError` result for that tool, never an internal error. Versions whose schemas are the same text share one validator
 * (shared-validators.ts): compiled once.
 * A schema of more than OFF_THREAD_SUBSCHEMAS subschemas is not compiled here at all when an `offThread` compiler is
 * given (the definition worker): Ajv's compile of it, one step that cannot be sliced, runs there, and this thread only
 * evaluates the source it returns (schema-source.ts): ~10 ms instead of 150 ms for 400 properties with patterns.
 */
import { linearRegExp } from '#domain/linear-regexp';
import { isPlainObject, subschemas } from '#domain/json-path';
import type { SchemaCompiler } from '#domain/schema-compiler';
import type { JsonObject } from '#domain/types';
import type { CompiledSchema } from '#domain/validate';
import type { CatalogueVersion, VersionDetails } from '#projections/catalogue';
import { createSharedValidators } from './shared-validators.ts';

export interface VersionSchemas {
  /** The version's schemaHash (its call records carry it). */
  schemaHash: string;
  input: CompiledSchema;
  output: CompiledSchema | undefined;
  /** Set when the schemas do not compile: `input` then refuses every value with this reason. */
  refusal?: string;
}

export interface WarmupStats {
  /** Versions whose validators are ready (including those that refuse every call). */
  ready: number;
  /** Of those, versions whose schemas do not compile. */
  failed: number;
  /** Versions waiting or being compiled. */
  pending: number;
  /** The longest single step, in ms: how long one compilation held the event loop. */
  longestStepMs: number;
}

export interface CompiledSchemaCache {
  /** The version's validators if they are compiled already, else undefined; never compiles (the warm call's path). */
  compiled(v: CatalogueVersion): VersionSchemas | undefined;
  /** The version's validators: at once when warmed, else compiled now in slices, ahead of every queued version. */
  ready(v: CatalogueVersion): Promise<VersionSchemas>;
  /** Queue the version to be compiled in the background (no-op when known). */
  warm(v: CatalogueVersion): void;
  /** Drop a version's validators (it was retired). */
  forget(v: CatalogueVersion): void;
  stats(): WarmupStats;
  readonly size: number;
  /** Stop compiling queued versions. */
  close(): void;
}

export interface CompiledSchemaCacheOptions {
  /** Told once per version whose schemas do not compile. */
  onFailure?: (v: CatalogueVersion, reason: string) => void;
  /** Most milliseconds of pattern compilation in one step before yielding. */
  sliceMs?: number;
  /** Where a version's schemas come from when its record does not hold them (the reader's details). */
  details?: (v: CatalogueVersion) => Promise<VersionDetails>;
  /**
   * Versions whose validators stay compiled; past it the least recently used are dropped (and compiled again on their
   * next call). A catalogue of hundreds of thousands of versions must not hold a validator for each.
   */
  capacity?: number;
  /**
   * Compiles a schema to source in another thread (DefinitionChecker.source): used for schemas of more than
   * OFF_THREAD_SUBSCHEMAS subschemas. Undefined, or failing, and the schema is compiled here.
   */
  offThread?: (schema: JsonObject, where: string) => Promise<string | undefined>;
}

/** Schemas larger than this (in subschemas) are compiled in the `offThread` compiler when there is one. */
export const OFF_THREAD_SUBSCHEMAS = 32;

const isLarge = (schema: JsonObject): boolean => {
  let count = 0;
  for (const _ of subschemas(schema)) if (++count > OFF_THREAD_SUBSCHEMAS) return true;
  return false;
};

export const DEFAULT_SCHEMA_CACHE = 1024;

const ownDetails = (v: CatalogueVersion): Promise<VersionDetails> =>
  v.details ? Promise.resolve(v.details) : Promise.reject(new Error(`${v.name}@${v.version}: no details to compile`));

interface Entry {
  v: CatalogueVersion;
  schemas?: VersionSchemas;
  compiling?: Promise<VersionSchemas>;
  /** Forgotten (its version was retired): a record still holding it finds nothing. */
  dropped?: boolean;
}

const DEFAULT_SLICE_MS = 5;

const yieldToLoop = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

const keyOf = (v: CatalogueVersion): string => `${v.name}@${v.version}`;

/** Every pattern a schema carries (`pattern`, `patternProperties` keys): the costly part of compiling it. */
const patternsOf = (schema: JsonObject): string[] => {
  const out: string[] = [];
  for (const { schema: sub } of subschemas(schema)) {
    if (typeof sub.pattern === 'string') out.push(sub.pattern);
    if (isPlainObject(sub.patternProperties)) out.push(...Object.keys(sub.patternProperties));
  }
  return out;
};

/** Validators that refuse every value with the reason: the handler never runs and the caller reads why. */
const refusing = (v: CatalogueVersion, schemaHash: string, reason: string): VersionSchemas => {
  const message = `${v.name}@${v.version} cannot be served: its schemas do not compile here (${reason.length > 300 ? `${reason.slice(0, 300)}...` : reason}); publish a corrected version`;
  return { schemaHash, input: { schema: {}, validate: () => [{ path: '$', message }] }, output: undefined, refusal: reason };
};

export const createCompiledSchemaCache = (compiler: SchemaCompiler, options: CompiledSchemaCacheOptions = {}): CompiledSchemaCache => {
  // Keyed by name@version, not by record: a deprecation replaces the record but never the schemas.
  const entries = new Map<string, Entry>();
  const shared = createSharedValidators();
  // The same entries by record, so a warm call finds its validators without building the name@version key.
  const byRecord = new WeakMap<CatalogueVersion, Entry>();
  const queue: string[] = [];
  const sliceMs = options.sliceMs ?? DEFAULT_SLICE_MS;
  let pumping = false;
  let closed = false;
  let longestStepMs = 0;

  const timed = <T>(step: () => T): T => {
    const t0 = performance.now();
    try {
      return step();
    } finally {
      longestStepMs = Math.max(longestStepMs, performance.now() - t0);
    }
  };

  const capacity = options.capacity ?? DEFAULT_SCHEMA_CACHE;
  const toldFailure = new Set<string>();
  /** Drop the least recently used compiled versions past the capacity (never one being compiled). */
  const evict = (): void => {
    if (entries.size <= capacity) return;
    for (const [key, e] of entries) {
      if (entries.size <= capacity) break;
      if (e.schemas === undefined) continue;
      entries.delete(key);
      // The record keeps its entry (byRecord) as long as it lives: let go of the validators themselves.
      e.dropped = true;
      e.schemas = undefined;
    }
  };

  const settle = (e: Entry, schemas: VersionSchemas): VersionSchemas => {
    if (e.schemas !== undefined) return e.schemas;
    e.schemas = schemas;
    e.compiling = undefined;
    if (schemas.refusal !== undefined && !toldFailure.has(keyOf(e.v))) {
      toldFailure.add(keyOf(e.v));
      options.onFailure?.(e.v, schemas.refusal);
    }
    evict();
    return schemas;
  };

  const failure = (e: Entry, schemaHash: string, err: unknown): VersionSchemas => refusing(e.v, schemaHash, err instanceof Error ? err.message : String(err));
  const detailsOf = options.details ?? ownDetails;

  /** RE2 compiles each pattern once (its cache is by source): compiled here a slice at a time, the schema step finds them. */
  const patternsInSlices = async (schema: JsonObject): Promise<void> => {
    let sliceStart = performance.now();
    for (const p of patternsOf(schema)) {
      try {
        linearRegExp(p);
      } catch {
        // an unsafe pattern is the schema step's to report
      }
      const now = performance.now();
      longestStepMs = Math.max(longestStepMs, now - sliceStart);
      if (now - sliceStart >= sliceMs) {
        await yieldToLoop();
        sliceStart = performance.now();
      }
    }
  };

  const fromSourceOrCompile = (schema: JsonObject, where: string, source: string | undefined): CompiledSchema => {
    if (source !== undefined) {
      try {
        return compiler.fromSource(schema, source);
      } catch {
        // compiled here instead, which says why if it cannot be
      }
    }
    return compiler.compile(schema, where);
  };

  /** One schema: a validator already compiled for the same text, else its patterns in slices and then Ajv. */
  const compileOne = async (schema: JsonObject, where: string): Promise<CompiledSchema> => {
    const known = shared.find(schema, where);
    if (known.compiled) return known.compiled;
    await patternsInSlices(schema);
    const source = options.offThread !== undefined && isLarge(schema) ? await options.offThread(schema, where).catch(() => undefined) : undefined;
    await yieldToLoop();
    // Another version with this schema may have finished while this one waited.
    const compiled = shared.find(schema, where).compiled ?? timed(() => fromSourceOrCompile(schema, where, source));
    shared.keep(known.key, compiled);
    return compiled;
  };

  const compileSliced = async (e: Entry): Promise<VersionSchemas> => {
    // Read first (from the store, when the record does not hold them): a failed read is not a schema that does not
    // compile, so it is not settled as a refusal; the next call tries again.
    const { definition: def, schemaHash } = await detailsOf(e.v);
    try {
      const input = await compileOne(def.inputSchema, 'inputSchema');
      let output: CompiledSchema | undefined;
      if (def.outputSchema) {
        await yieldToLoop();
        output = await compileOne(def.outputSchema, 'outputSchema');
      }
      return { schemaHash, input, output };
    } catch (err) {
      return failure(e, schemaHash, err);
    }
  };

  const start = (e: Entry): Promise<VersionSchemas> => {
    if (e.schemas !== undefined) return Promise.resolve(e.schemas);
    e.compiling ??= compileSliced(e).then(
      (s) => settle(e, s),
      (err: unknown) => {
        e.compiling = undefined;
        throw err;
      },
    );
    return e.compiling;
  };

  const pump = async (): Promise<void> => {
    while (!closed) {
      const key = queue.shift();
      if (key === undefined) break;
      const e = entries.get(key);
      if (e === undefined || e.schemas !== undefined) continue;
      // A version whose details cannot be read now stays unwarmed: its first call reads and compiles it (or says why not).
      await start(e).catch(() => undefined);
      await yieldToLoop();
    }
    pumping = false;
  };

  const entryOf = (v: CatalogueVersion): Entry => {
    const known = byRecord.get(v);
    if (known !== undefined && !known.dropped) return known;
    const key = keyOf(v);
    let e = entries.get(key);
    if (e === undefined) {
      e = { v };
      entries.set(key, e);
    }
    byRecord.set(v, e);
    return e;
  };

  /** The entry, now the most recently used. */
  const touched = (v: CatalogueVersion): Entry => {
    const e = entryOf(v);
    const key = keyOf(v);
    if (entries.get(key) === e) {
      entries.delete(key);
      entries.set(key, e);
    }
    return e;
  };

  return {
    compiled(v) {
      const e = byRecord.get(v);
      return e !== undefined && !e.dropped ? e.schemas : entries.get(keyOf(v))?.schemas;
    },
    ready: (v) => start(touched(v)),
    warm(v) {
      if (closed || entries.has(keyOf(v))) return;
      entryOf(v);
      queue.push(keyOf(v));
      if (!pumping) {
        pumping = true;
        setImmediate(() => void pump());
      }
    },
    forget(v) {
      const e = entries.get(keyOf(v));
      if (e !== undefined) e.dropped = true;
      entries.delete(keyOf(v));
    },
    stats() {
      let ready = 0;
      let failed = 0;
      for (const e of entries.values()) {
        if (e.schemas !== undefined) ready++;
        if (e.schemas?.refusal !== undefined) failed++;
      }
      return { ready, failed, pending: entries.size - ready, longestStepMs };
    },
    get size() {
      return this.stats().ready;
    },
    close() {
      closed = true;
      queue.length = 0;
    },
  };
};
