/**
 * The JSON shapes of SPEC §5 that more than one edge answers with: the CLI's `--json` output and the HTTP publishing
 * API return the same bodies, so a pipeline can switch between them without parsing anything new.
 */
import { DomainError } from '#domain/errors';
import type { PublishVerdict } from '#domain/guard';
import { isStrictSemver } from '#domain/semver';
import { NAME_MAX, NAME_PATTERN } from '#domain/tool-definition';

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
/**
 * A definition refused by a rule, as publish and check answer it. `raw`, when the text parsed: its name and version
 * are given back when each is well formed on its own (the refusal may be about something else entirely), else null.
 */
export const definitionErrorJson = (e: DomainError, raw?: unknown) => {
  const fields = typeof raw === 'object' && raw !== null && !Array.isArray(raw) ? (raw as Record<string, unknown>) : {};
  const name = typeof fields.name === 'string' && fields.name.length <= NAME_MAX && NAME_PATTERN.test(fields.name) ? fields.name : null;
  const version = typeof fields.version === 'string' && isStrictSemver(fields.version) ? fields.version : null;
  return { result: 'refused', name, version, level: null, reasons: [], error: { code: e.code, message: e.message } };
};

/** Any error: `{error: {code, message, reasons?}}`. */
export const errorJson = (e: unknown): { error: { code: string; message: string; reasons?: unknown } } => {
  if (e instanceof DomainError) {
    return { error: { code: e.code, message: e.message, ...(e.reasons ? { reasons: e.reasons } : {}) } };
  }
  return { error: { code: 'internal', message: e instanceof Error ? e.message : String(e) } };
};
