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

const identifying = (f: AnswerFacts): Record<string, unknown> => {
  const notice = deprecationNotice(f.v);
  return { [VERSION_META]: f.v.version, [RUN_ID_META]: f.runId, ...(notice ? { [DEPRECATED_META]: notice } : {}) };
};

export const answer = (f: AnswerFacts, r: CallToolResult): CallToolResult => {
  const { structuredContent, ...rest } = r;
  const repairs = f.repairs ?? [];
  return {
    ...(hasStructuredContent(f.protocolVersion) && structuredContent !== undefined ? { ...rest, structuredContent } : rest),
    _meta: {
      ...(isPlainObject(r._meta) ? r._meta : {}),
      ...identifying(f),
      // What repair changed, so an extra argument silently dropped is not a surprise to the caller.
      ...(repairs.length > 0 ? { [REPAIRS_META]: repairs.map(({ path, action }) => ({ path, action })) } : {}),
    },
  };
};

export const inputRequiredAnswer = (f: AnswerFacts, ir: InputRequiredResult): InputRequiredResult => ({ ...ir, _meta: identifying(f) });
