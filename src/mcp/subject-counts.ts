/**
 * How many of something each subject holds now (open sessions, running tools/calls, open listen streams, bytes of
 * answers its clients have not taken), for the per-subject bounds of docs/security.md. A subject is the token's `sub`;
 * a principal without one (no authorization: the flags' principal) is recorded and named `anonymous` (subjectOf), but
 * counted apart from a principal whose subject is that string (the edges refuse such a token or flag: NO_SUBJECT; the
 * bounds keep them apart anyway). Every bound keys callers the same way (boundKey).
 */
import { NO_SUBJECT } from '#domain/access';
import type { Principal } from '#domain/types';

/** The subject as call records and messages name it: without one, `anonymous` (NO_SUBJECT). Not what the bounds count by. */
export const subjectOf = (principal: Principal): string => principal.subject ?? NO_SUBJECT;

/**
 * What the per-subject bounds count by: the subject within its tenant, no subject being `null`. Within its tenant: an
 * issuer whose `sub` is unique only within a tenant (a user store per tenant) gave `alice` of one tenant the power to
 * take every session and call slot of `alice` of another, and told her how many the other held. `null`, not
 * `anonymous`: keyed by subjectOf, a token with the `sub` "anonymous" shared (and could exhaust) the bounds of every
 * unauthenticated caller, and they its. JSON, so that no tenant or subject can reach across the separator (a NUL in
 * either made `a`+`b\0c` and `a\0b`+`c` one caller). Messages still name the subject alone, by subjectOf.
 */
export const boundKey = (principal: Principal): string => JSON.stringify([principal.tenant, principal.subject ?? null]);

export class SubjectCounts {
  /** Only subjects holding one or more. */
  private readonly held = new Map<string, number>();

  of(subject: string): number {
    return this.held.get(subject) ?? 0;
  }

  take(subject: string, n = 1): void {
    this.held.set(subject, this.of(subject) + n);
  }

  give(subject: string, n = 1): void {
    const left = this.of(subject) - n;
    if (left > 0) this.held.set(subject, left);
    else this.held.delete(subject);
  }
}
