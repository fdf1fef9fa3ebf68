/**
 * How many of something each subject holds now (open sessions, running tools/calls, open listen streams, bytes of
 * answers its clients have not taken), for the
 * per-subject bounds of docs/security.md. A subject is the token's `sub`, or without one (no authorization: the
 * flags' principal) `anonymous`; every bound keys callers the same way, by the subject within its tenant (boundKey).
 */
import type { Principal } from '#domain/types';

export const subjectOf = (principal: Principal): string => principal.subject ?? 'anonymous';

/**
 * What the per-subject bounds count by: the subject within its tenant. An issuer whose `sub` is unique only within a
 * tenant (a user store per tenant) gave `alice` of one tenant the power to take every session and call slot of `alice`
 * of another, and told her how many the other held. Messages still name the subject alone.
 */
export const boundKey = (principal: Principal): string => `${principal.tenant}\u0000${subjectOf(principal)}`;

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
