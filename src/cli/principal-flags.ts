/** The principal flags (SPEC §5) that `list` and `serve` share, and the principal they describe. */
import { Option, type Command } from 'commander';
import { NO_SUBJECT, makePrincipal } from '#domain/access';
import { DomainError } from '#domain/errors';
import { CLASSIFICATIONS } from '#domain/types';

export interface PrincipalFlags {
  tenant?: string;
  scopes?: string;
  clearance?: string;
  subject?: string;
}

export const addPrincipalFlags = (cmd: Command): Command =>
  cmd
    .option('--tenant <tenant>', 'the principal\'s tenant')
    .option('--scopes <scopes>', 'scopes the principal holds, comma-separated')
    .addOption(new Option('--clearance <level>', 'the principal\'s clearance').choices([...CLASSIFICATIONS]))
    .option('--subject <id>', `the principal's subject id (not '${NO_SUBJECT}': without --subject, calls are recorded under that name)`);

/** A subject the flags may not give: empty (no one), or the name of callers without one (NO_SUBJECT). */
const checkSubject = (subject: string | undefined): void => {
  if (subject === '') throw new DomainError('usage', 'invalid-subject', '--subject: give a subject id, or leave the flag out for a caller without one');
  if (subject === NO_SUBJECT) {
    throw new DomainError('usage', 'reserved-subject', `--subject: '${NO_SUBJECT}' is reserved for a caller without a subject (leave the flag out): calls recorded under it would join that caller's runs`);
  }
};

export const principalFromFlags = (f: PrincipalFlags) => {
  checkSubject(f.subject);
  return makePrincipal({
    ...(f.tenant !== undefined ? { tenant: f.tenant } : {}),
    scopes: (f.scopes ?? '').split(',').map((s) => s.trim()),
    clearance: f.clearance ?? null,
    ...(f.subject !== undefined ? { subject: f.subject } : {}),
  });
};

/** Whether any principal flag was given (`list` without them lists every tool, not a principal's view). */
export const hasPrincipalFlags = (f: PrincipalFlags): boolean => [f.tenant, f.scopes, f.clearance, f.subject].some((x) => x !== undefined);
