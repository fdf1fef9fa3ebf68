/**
 * Checking a definition within a time budget, off the event loop. Compiling a schema is synchronous (Ajv, RE2) and a
 * hostile one is costly: 300 patterns like `^(a{1,400}b){1,2}b1$` take seconds to compile. So is classifying a new
 * version against its baseline: 400 `anyOf` branches with long descriptions, compared pairwise, took 9.5 s. On the
 * request path that stalls every MCP session of the process, so the publishing API checks and classifies definitions
 * here: in ONE worker thread, one job at a time, each with a deadline (measured from when the worker starts it). Past
 * the deadline the worker is terminated (which frees all it compiled), replaced on the next job, and the definition
 * refused with `schema-too-costly`. The size budget (patterns per schema, pattern characters) is checked first, inside
 * the worker, by the schema compiler.
 */
import type { Worker } from 'node:worker_threads';
import { DomainError, invalidDefinition, type DomainErrorKind } from '#domain/errors';
import type { Classified, JsonObject, ToolDefinition } from '#domain/types';
import type { DefinitionJob, DefinitionJobResult } from './definition-worker.ts';
import { startModuleWorker } from './module-worker.ts';

export const DEFAULT_DEFINITION_BUDGET_MS = 2000;
/** Jobs waiting for the worker beyond this are refused at once: a queue of hostile checks must not grow without end. */
export const MAX_QUEUED_DEFINITIONS = 64;
/**
 * Schemas waiting to be compiled to source beyond this are refused at once (the caller compiles them itself). The
 * serving process asks for each version it serves as it learns of it: the queue is as long as a burst of publishes.
 */
export const MAX_QUEUED_SOURCES = 4096;

export interface DefinitionChecker {
  /** validateDefinition(raw) in the worker: the normalised definition, or the DomainError it threw, or `schema-too-costly`. */
  check(raw: unknown): Promise<ToolDefinition>;
  /** classifyDefinition(before, after) in the worker, under the same budget and queue: the classification, or `schema-too-costly`. */
  classify(before: ToolDefinition, after: ToolDefinition): Promise<Classified>;
  /**
   * A published schema's validator as source (SchemaCompiler.compileSource), undefined when it has none. Run after
   * every waiting check and classification (a person waits for those), under the same budget.
   */
  source(schema: JsonObject, where: string): Promise<string | undefined>;
  /**
   * Starts the worker now rather than at the first job; resolves once it is ready (or gave up starting: the first job
   * then gets the reason). A serving process that fronts upstreams calls it at start, so the first sync's duration,
   * which paces the syncs after it (src/upstream/pool.ts), is the sync's own work, not the worker's start (~0.3-0.6 s).
   */
  warm(): Promise<void>;
  close(): Promise<void>;
}

type Job = DefinitionJob extends infer J ? (J extends unknown ? Omit<J, 'id'> : never) : never;

interface Pending {
  job: DefinitionJob;
  resolve: (value: unknown) => void;
  reject: (e: unknown) => void;
}

const OVER_BUDGET: Record<DefinitionJob['kind'], (ms: number) => string> = {
  check: (ms) => `definition: checking its schemas took longer than the budget of ${ms} ms; use fewer or simpler patterns and subschemas`,
  classify: (ms) => `definition: classifying the change from its baseline took longer than the budget of ${ms} ms; use fewer or simpler subschemas (anyOf/oneOf/allOf branches are compared pairwise)`,
  source: (ms) => `schema: compiling it took longer than the budget of ${ms} ms`,
};

/** `budgetMs`: ESTATE_SCHEMA_BUDGET_MS, read by src/config.ts and handed in by the composition root. */
export const createDefinitionChecker = (options: { budgetMs?: number } = {}): DefinitionChecker => {
  const budgetMs = options.budgetMs ?? DEFAULT_DEFINITION_BUDGET_MS;
  const queue: Pending[] = [];
  /** `source` jobs: served after `queue` (see DefinitionChecker.source). */
  const background: Pending[] = [];
  let worker: Worker | undefined;
  let ready = false;
  let running: Pending | undefined;
  let timer: NodeJS.Timeout | undefined;
  let nextId = 1;
  let closed = false;
  /** Those waiting (warm) for the worker to be ready or gone. */
  const warming: (() => void)[] = [];
  const warmed = (): void => {
    for (const done of warming.splice(0)) done();
  };

  const spawn = (): void => {
    ready = false;
    const w = startModuleWorker(import.meta.url, 'definition-worker');
    worker = w;
    w.unref();
    w.on('message', (m: 'ready' | DefinitionJobResult) => {
      if (w !== worker) return;
      if (m === 'ready') {
        ready = true;
        warmed();
        return pump();
      }
      const p = running;
      if (p === undefined || p.job.id !== m.id) return;
      finish();
      if (m.ok) p.resolve(m.value);
      else if ('internal' in m.error) p.reject(new Error(`definition check failed: ${m.error.internal}`));
      else p.reject(new DomainError(m.error.kind as DomainErrorKind, m.error.code, m.error.message));
      pump();
    });
    const lost = (e: unknown): void => {
      if (w !== worker) return;
      worker = undefined;
      warmed();
      const err = e instanceof Error ? e : new Error(`definition worker exited (${String(e)})`);
      const p = running;
      const started = ready;
      finish();
      p?.reject(err);
      // A worker that cannot even start would fail every job the same way: refuse them rather than respawn forever.
      if (!started) for (const q of [...queue.splice(0), ...background.splice(0)]) q.reject(err);
      pump();
    };
    w.on('error', lost);
    w.on('exit', (code) => lost(code));
  };

  const finish = (): void => {
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
    running = undefined;
    if (worker !== undefined && queue.length === 0 && background.length === 0) worker.unref();
  };

  const pump = (): void => {
    if (closed || running !== undefined || (queue.length === 0 && background.length === 0)) return;
    if (worker === undefined) spawn();
    if (!ready) return;
    const p = (queue.shift() ?? background.shift()) as Pending;
    running = p;
    const w = worker as Worker;
    w.ref();
    timer = setTimeout(() => {
      if (running !== p) return;
      worker = undefined; // its exit is no longer ours to report
      void w.terminate();
      finish();
      p.reject(invalidDefinition('schema-too-costly', OVER_BUDGET[p.job.kind](budgetMs)));
      pump();
    }, budgetMs);
    w.postMessage(p.job);
  };

  const submit = <T>(job: Job): Promise<T> => {
    if (closed) return Promise.reject(new Error('the definition checker is closed'));
    const into = job.kind === 'source' ? background : queue;
    if (job.kind === 'source' && background.length >= MAX_QUEUED_SOURCES) {
      return Promise.reject(new Error(`${MAX_QUEUED_SOURCES} schemas are already waiting to be compiled`));
    }
    if (job.kind !== 'source' && queue.length >= MAX_QUEUED_DEFINITIONS) {
      return Promise.reject(invalidDefinition('schema-too-costly', `definition: ${MAX_QUEUED_DEFINITIONS} definitions are already waiting to be checked; try again later`));
    }
    return new Promise<T>((resolve, reject) => {
      into.push({ job: { ...job, id: nextId++ } as DefinitionJob, resolve: resolve as (value: unknown) => void, reject });
      pump();
    });
  };

  return {
    check: (raw) => submit<ToolDefinition>({ kind: 'check', raw }),
    classify: (before, after) => submit<Classified>({ kind: 'classify', before, after }),
    source: async (schema, where) => (await submit<string | null>({ kind: 'source', schema, where })) ?? undefined,
    warm() {
      if (closed || (worker !== undefined && ready)) return Promise.resolve();
      if (worker === undefined) spawn();
      return new Promise<void>((resolve) => warming.push(resolve));
    },
    async close() {
      closed = true;
      warmed();
      const w = worker;
      worker = undefined;
      if (timer !== undefined) clearTimeout(timer);
      const err = new Error('the definition checker is closed');
      running?.reject(err);
      running = undefined;
      for (const p of [...queue.splice(0), ...background.splice(0)]) p.reject(err);
      if (w !== undefined) await w.terminate();
    },
  };
};
