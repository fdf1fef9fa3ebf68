/**
 * From a verified token's claims to the Principal the catalogue judges. Nothing here widens access: a missing or
 * unknown clearance is `public`, a missing tenant matches no tenant list (only tools open to every tenant), scopes
 * that are not strings are dropped.
 */
import { NO_SUBJECT, makePrincipal } from '#domain/access';
import type { Principal } from '#domain/types';
import type { ClaimMapping } from './config.ts';

export type ClaimsOutcome = { ok: true; principal: Principal & { subject: string } } | { ok: false; reason: string };

/** No tenant claim: the empty name, which no definition can list (tenants are non-empty strings). */
export const NO_TENANT = '';

const scopesOf = (claims: Record<string, unknown>, names: readonly string[]): string[] => {
  for (const name of names) {
    const v = claims[name];
    if (typeof v === 'string') return v.split(' ').filter((s) => s.length > 0);
    if (Array.isArray(v)) return v.filter((s): s is string => typeof s === 'string');
  }
  return [];
};

export const principalFromClaims = (claims: Record<string, unknown>, mapping: ClaimMapping): ClaimsOutcome => {
  const subject = claims[mapping.subject];
  if (typeof subject !== 'string' || subject.length === 0) return { ok: false, reason: `the token has no '${mapping.subject}' claim` };
  // Reserved for callers without a subject: accepted, its calls were recorded as theirs and added to their runs.
  if (subject === NO_SUBJECT) return { ok: false, reason: `the token's '${mapping.subject}' claim is '${NO_SUBJECT}', reserved for callers without a subject` };
  const tenant = claims[mapping.tenant];
  const clearance = claims[mapping.clearance];
  const principal = makePrincipal({
    tenant: typeof tenant === 'string' ? tenant : NO_TENANT,
    scopes: scopesOf(claims, mapping.scopes),
    clearance: typeof clearance === 'string' ? clearance : null,
    subject,
  });
  return { ok: true, principal: { ...principal, subject } };
};
