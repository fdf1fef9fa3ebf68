/**
 * How many of something each subject holds now (open sessions, running tools/calls, open listen streams), for the
 * per-subject bounds of docs/security.md. A subject is the token's `sub`, or without one (no authorization: the
 * flags' principal) `anonymous`; every bound keys callers the same way.
 */
import type { Principal } from '#domain/types';

export const subjectOf = (principal: Principal): string => principal.subject ?? 'anonymous';

export class SubjectCounts {
  /** Only subjects holding one or more. */
  private readonly held = new Map<string, number>();

  of(subject: string): number {
    return this.held.get(subject) ?? 0;
  }

  take(subject: string): void {
    this.held.set(subject, this.of(subject) + 1);
  }

  give(subject: string): void {
    const left = this.of(subject) - 1;
    if (left > 0) this.held.set(subject, left);
    else this.held.delete(subject);
  }
}
