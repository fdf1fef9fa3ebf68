/**
 * Who may see what (SPEC §2 "Discovery for a principal"). Fail closed: an unknown classification raises.
 */
import { DomainError } from './errors.ts';
import { CLASSIFICATIONS, type Classification, type Principal, type ToolAccess } from './types.ts';

export const classificationRank = (c: string): number => {
  const rank = (CLASSIFICATIONS as readonly string[]).indexOf(c);
  if (rank < 0) throw new DomainError('invalid-definition', 'unknown-classification', `unknown classification '${c}'`);
  return rank;
};

/** An unknown or missing clearance is `public`, never more. */
export const normaliseClearance = (c: string | undefined | null): Classification =>
  c && (CLASSIFICATIONS as readonly string[]).includes(c) ? (c as Classification) : 'public';

/**
 * The subject call records, logs and messages name a caller without one by (no authorization: the flags' principal).
 * Reserved: a token whose subject claim is this string, or `--subject` with it, is refused, so that a record naming
 * `anonymous` always means "no subject" and such a caller's runs are its own (a run belongs to the tenant and subject
 * that first used it: a token's `anonymous` would have added to them, under the same name).
 */
export const NO_SUBJECT = 'anonymous';

export const makePrincipal = (p: { tenant?: string; scopes?: Iterable<string>; clearance?: string | null; subject?: string }): Principal => ({
  tenant: p.tenant ?? 'default',
  scopes: [...new Set(p.scopes ?? [])].filter((s) => s.length > 0).sort(),
  clearance: normaliseClearance(p.clearance),
  ...(p.subject !== undefined ? { subject: p.subject } : {}),
});

/** visible = tenant allowed AND classification rank <= clearance rank AND requiredScopes ⊆ held scopes. */
export const isVisible = (access: ToolAccess, principal: Principal, held: ReadonlySet<string> = new Set(principal.scopes)): boolean => {
  if (access.tenants.length > 0 && !access.tenants.includes(principal.tenant)) return false;
  if (classificationRank(access.classification) > classificationRank(principal.clearance)) return false;
  for (const s of access.requiredScopes) if (!held.has(s)) return false;
  return true;
};

/**
 * The cache key of a principal's discovery view: everything that decides visibility, nothing else. JSON of the sorted,
 * deduplicated scope set: an identity provider may issue a scope containing `,` (or any other separator one could
 * pick), and a joined string would then give the single scope `a,b` the view of a principal holding `a` and `b`.
 */
export const viewKey = (p: Principal): string => JSON.stringify([p.tenant, [...new Set(p.scopes)].sort(), p.clearance]);
