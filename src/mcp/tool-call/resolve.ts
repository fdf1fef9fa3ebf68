/**
 * Step 1 of tools/call: the version the call runs (resolve-tool.ts: pinned, else the session's listing, else the
 * caller's view) and the executor bound to its handler. Every way of not finding one is the same `Unknown tool`.
 */
import type { CatalogueReader } from '#app/catalogue-reader';
import type { Principal } from '#domain/types';
import type { CatalogueVersion } from '#projections/catalogue';
import { unknownTool } from '../error-map.ts';
import { resolveCallable } from '../resolve-tool.ts';
import type { CallParams } from './read-request.ts';
import type { ExecutorLookup, ToolExecutor } from './executor.ts';

export interface ResolveDeps {
  reader: CatalogueReader;
  isOffered: (v: CatalogueVersion) => boolean;
  executors: ExecutorLookup;
}

export interface ResolvedCall {
  v: CatalogueVersion;
  executor: ToolExecutor;
}

export const resolveCall = (deps: ResolveDeps, p: CallParams, principal: Principal, listedNow?: ReadonlyMap<string, string>): ResolvedCall => {
  const listed = p.pinned === undefined ? listedNow?.get(p.name) : undefined;
  const v = resolveCallable(deps.reader, deps.isOffered, {
    name: p.name,
    principal,
    ...(p.pinned !== undefined ? { pinned: p.pinned } : {}),
    ...(listed !== undefined ? { listed } : {}),
  });
  const executor = deps.executors(v.handler);
  if (!executor) throw unknownTool(p.name);
  return { v, executor };
};
