/**
 * What the client gets back from tools/call: the result with Estate's `_meta` (the version that ran, the run id, a
 * deprecation notice, what repair changed), shaped for the revision (no structuredContent before 2025-06-18, as that
 * revision's tools/list has no outputSchema); or an InputRequiredResult with the same identifying `_meta`.
 */
import type { CallToolResult } from '#handlers/types';
import type { CatalogueVersion } from '#projections/catalogue';
import type { InputRequiredResult } from '../input-required.ts';
import { isPlainObject } from '../jsonrpc.ts';
import { hasStructuredContent } from '../revisions.ts';
import { DEPRECATED_META, deprecationNotice, REPAIRS_META, RUN_ID_META, VERSION_META } from '../tool-projection.ts';
import type { Repair } from './admit.ts';

export interface AnswerFacts {
  v: CatalogueVersion;
  runId: string;
  protocolVersion: string;
  repairs?: readonly Repair[];
}

/** Estate's identifying `_meta` keys, written into `meta`. */
const identify = (f: AnswerFacts, meta: Record<string, unknown>): Record<string, unknown> => {
  meta[VERSION_META] = f.v.version;
  meta[RUN_ID_META] = f.runId;
  const notice = deprecationNotice(f.v);
  if (notice) meta[DEPRECATED_META] = notice;
  return meta;
};

/**
 * Built key by key, as every call's answer is: a literal that spreads an object and then adds keys takes V8's slow
 * path (~1 µs here against ~0.05 µs, bench notes in docs/benchmarks-history.md). Keys keep the result's own order.
 */
export const answer = (f: AnswerFacts, r: CallToolResult): CallToolResult => {
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(r)) if (key !== 'structuredContent') out[key] = r[key];
  if (r.structuredContent !== undefined && hasStructuredContent(f.protocolVersion)) out.structuredContent = r.structuredContent;
  const meta = identify(f, isPlainObject(r._meta) ? Object.assign({}, r._meta) : {});
  // What repair changed, so an extra argument silently dropped is not a surprise to the caller.
  const repairs = f.repairs ?? [];
  if (repairs.length > 0) meta[REPAIRS_META] = repairs.map(({ path, action }) => ({ path, action }));
  out._meta = meta;
  return out as CallToolResult;
};

export const inputRequiredAnswer = (f: AnswerFacts, ir: InputRequiredResult): InputRequiredResult => ({ ...ir, _meta: identify(f, {}) });
