/**
 * The JSON shapes of SPEC §5 that more than one edge answers with: the CLI's `--json` output and the HTTP publishing
 * API return the same bodies, so a pipeline can switch between them without parsing anything new.
 */
import { DomainError } from '#domain/errors';
import type { PublishVerdict } from '#domain/guard';

/** publish / check: `{result, name, version, level, reasons, baseline?, position?, error?}`. */
export const verdictJson = (v: PublishVerdict, result: string, position?: string) => ({
  result,
  name: v.name,
  version: v.version,
  level: v.level,
  reasons: v.reasons,
  ...(v.baseline !== undefined ? { baseline: v.baseline } : {}),
  ...(position !== undefined ? { position } : {}),
  ...(v.error ? { error: { code: v.error.code, message: v.error.message } } : {}),
});

/** A definition that does not even parse: the publish/check shape, with the error and nothing known of the tool. */
export const definitionErrorJson = (e: DomainError) => ({ result: 'refused', name: null, version: null, level: null, reasons: [], error: { code: e.code, message: e.message } });

/** Any error: `{error: {code, message, reasons?}}`. */
export const errorJson = (e: unknown): { error: { code: string; message: string; reasons?: unknown } } => {
  if (e instanceof DomainError) {
    return { error: { code: e.code, message: e.message, ...(e.reasons ? { reasons: e.reasons } : {}) } };
  }
  return { error: { code: 'internal', message: e instanceof Error ? e.message : String(e) } };
};
