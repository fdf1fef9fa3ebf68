/**
 * Step 2 of tools/call: admit the arguments. Size and depth limits first, then the pinned input schema: validated
 * only for a non_idempotent tool (silently dropping `urgent: true` from a payment is not a repair), else repaired
 * deterministically (domain/repair.ts). A refusal is an `isError` result with the sorted error lines; nothing runs.
 */
import { repair, type RepairChange } from '#domain/repair';
import { checkArgumentLimits, formatErrors, type ValidationError } from '#domain/validate';
import type { CallToolResult } from '#handlers/types';
import type { CatalogueVersion } from '#projections/catalogue';
import type { VersionSchemas } from '../compiled-schemas.ts';
import { errorResult } from '../error-map.ts';

export type Repair = Pick<RepairChange, 'path' | 'action'>;

const NO_REPAIRS: Repair[] = [];

/**
 * A refusal carries what repair changed before the errors that remain (SPEC §3: every result says, in `_meta`, when
 * repair changed the arguments): a model told only "$.include_legs: expected type boolean" would not learn that its
 * `urgent` was dropped too, and would send it again.
 */
export type Admission = { ok: true; args: Record<string, unknown>; repairs: Repair[] } | { ok: false; refusal: CallToolResult; repairs: Repair[] };

const refused = (errors: readonly ValidationError[], repairs: Repair[] = NO_REPAIRS): Admission => ({ ok: false, refusal: errorResult(formatErrors([...errors])), repairs });

/**
 * The most changes repair makes to one call's arguments, and the longest path one may name. The changes go into the
 * call record and the answer's `_meta`, and every dropped property is named by the caller's own key: 50,000 junk
 * properties (or one with a 500 KB name) in a 1 MiB body made each call record as large, kept forever and read back
 * a thousand records at a time by a run's console page. Past any bound the call is refused and nothing runs: a
 * schema declares far fewer properties than this, and a repair that is cut would no longer say what it changed.
 */
export const MAX_REPAIRS = 100;
export const MAX_REPAIR_PATH_CHARS = 1000;
/** And the most characters of all its paths together: a record's repairs stay within ~16 KiB. */
export const MAX_REPAIR_CHARS = 16_384;

const repairBoundRefusal = (changes: readonly RepairChange[]): ValidationError | null => {
  if (changes.length > MAX_REPAIRS) {
    return { path: '$', message: `arguments need ${changes.length} repairs (at most ${MAX_REPAIRS} are made): send only the properties the schema declares` };
  }
  let total = 0;
  for (const c of changes) {
    if (c.path.length > MAX_REPAIR_PATH_CHARS) {
      return { path: '$', message: `a repair would name a path of ${c.path.length} characters (at most ${MAX_REPAIR_PATH_CHARS}): send only the properties the schema declares` };
    }
    total += c.path.length;
  }
  return total > MAX_REPAIR_CHARS
    ? { path: '$', message: `the repairs would name paths of ${total} characters in all (at most ${MAX_REPAIR_CHARS}): send only the properties the schema declares` }
    : null;
};

/** Limits first (cheap, no compile): the refusal of arguments too large or too deep, before any validator is needed. */
export const argumentLimitRefusal = (received: unknown): CallToolResult | null => {
  const tooBig = checkArgumentLimits(received);
  return tooBig ? errorResult(formatErrors([tooBig])) : null;
};

/** Then the validators (compiled ahead of need: compiled-schemas.ts); synchronous, so a warm call awaits nothing here. */
export const admitArguments = (v: CatalogueVersion, schemas: VersionSchemas, received: unknown): Admission => {
  const { input } = schemas;
  if (v.sideEffect === 'non_idempotent') {
    const errors = input.validate(received);
    return errors.length > 0 ? refused(errors) : { ok: true, args: received as Record<string, unknown>, repairs: [] };
  }
  const r = repair(input, received);
  const unbounded = repairBoundRefusal(r.changes);
  if (unbounded) return refused([unbounded]);
  const repairs = r.changes.length === 0 ? NO_REPAIRS : r.changes.map(({ path, action }) => ({ path, action }));
  if (r.errors.length > 0) return refused(r.errors, repairs);
  return { ok: true, args: r.value as Record<string, unknown>, repairs };
};
