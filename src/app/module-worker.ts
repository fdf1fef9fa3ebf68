/**
 * Start a worker thread on a module that sits beside the caller. The built module (`.js`) runs as is; under tsx (the
 * tests, the benches) the module is TypeScript, so the worker registers tsx's loader before importing it.
 */
import { extname } from 'node:path';
import { Worker, type WorkerOptions } from 'node:worker_threads';

/** `callerUrl`: the caller's `import.meta.url`; `name`: the sibling module's name without its extension. */
export const startModuleWorker = (callerUrl: string, name: string, options: Omit<WorkerOptions, 'eval'> = {}): Worker => {
  const ext = extname(new URL(callerUrl).pathname);
  const moduleUrl = new URL(`./${name}${ext}`, callerUrl);
  if (ext !== '.ts') return new Worker(moduleUrl, options);
  const tsx = import.meta.resolve('tsx/esm/api');
  const boot = `import(${JSON.stringify(tsx)}).then((m) => { m.register(); return import(${JSON.stringify(moduleUrl.href)}); })`;
  return new Worker(boot, { ...options, eval: true });
};
