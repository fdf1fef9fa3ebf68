/** The principal flags (SPEC §5) that `list` and `serve` share, and the principal they describe. */
import { Option, type Command } from 'commander';
import { makePrincipal } from '#domain/access';
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
    .option('--subject <id>', 'the principal\'s subject id');

export const principalFromFlags = (f: PrincipalFlags) =>
  makePrincipal({
    ...(f.tenant !== undefined ? { tenant: f.tenant } : {}),
    scopes: (f.scopes ?? '').split(',').map((s) => s.trim()),
    clearance: f.clearance ?? null,
    ...(f.subject !== undefined ? { subject: f.subject } : {}),
  });

/** Whether any principal flag was given (`list` without them lists every tool, not a principal's view). */
export const hasPrincipalFlags = (f: PrincipalFlags): boolean => [f.tenant, f.scopes, f.clearance, f.subject].some((x) => x !== undefined);
