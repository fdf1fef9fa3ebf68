/**
 * The worker thread of definition-budget.ts: checks definitions (every SPEC §1 rule, patterns compiled by RE2 and the
 * schemas by Ajv) and classifies a new version against its baseline, away from the event loop that serves MCP. One job
 * at a time; the parent kills this thread when a job overruns its deadline, which also frees everything it compiled.
 */
import { parentPort } from 'node:worker_threads';
import { classifyDefinition } from '#domain/classify';
import { DomainError } from '#domain/errors';
import { createSchemaCompiler } from '#domain/schema-compiler';
import { validateDefinition } from '#domain/tool-definition';
import type { JsonObject, ToolDefinition } from '#domain/types';

/**
 * `check`: validateDefinition(raw). `classify`: classifyDefinition(before, after), both already checked. `source`: a
 * published schema's validator as source (SchemaCompiler.compileSource; null when it has none), for the serving thread.
 */
export type DefinitionJob =
  | { id: number; kind: 'check'; raw: unknown }
  | { id: number; kind: 'classify'; before: ToolDefinition; after: ToolDefinition }
  | { id: number; kind: 'source'; schema: JsonObject; where: string };

export type DefinitionJobResult =
  | { id: number; ok: true; value: unknown }
  | { id: number; ok: false; error: { kind: string; code: string; message: string } | { internal: string } };

const compiler = createSchemaCompiler();
const port = parentPort;
if (port === null) throw new Error('definition-worker.ts runs only as a worker thread');

port.on('message', (job: DefinitionJob) => {
  let result: DefinitionJobResult;
  try {
    const value =
      job.kind === 'check'
        ? validateDefinition(job.raw, compiler)
        : job.kind === 'classify'
          ? classifyDefinition(job.before, job.after)
          : (compiler.compileSource(job.schema, job.where) ?? null);
    result = { id: job.id, ok: true, value };
  } catch (e) {
    result =
      e instanceof DomainError
        ? { id: job.id, ok: false, error: { kind: e.kind, code: e.code, message: e.message } }
        : { id: job.id, ok: false, error: { internal: e instanceof Error ? e.message : String(e) } };
  }
  port.postMessage(result);
});
// Warm up before announcing readiness (Ajv, zod and RE2 on their first use cost far more than later): the deadline of
// the first job must measure that job, not the worker's start-up.
try {
  validateDefinition(
    {
      name: 'warm.up', version: '1.0.0', description: 'warm-up', sideEffect: 'none', handler: 'warm.up', access: { classification: 'public' },
      inputSchema: { type: 'object', properties: { a: { type: 'string', pattern: '^(a|b)+$', format: 'date' }, n: { enum: [1, 2] } }, required: ['a'] },
    },
    compiler,
  );
} catch {
  // a failed warm-up only means a slower first job
}
port.postMessage('ready');
