/** `estate deprecate <name>@<version> --reason <text>`. */
import type { Command } from 'commander';
import { registerLifecycleVerb } from '../lifecycle-verb.ts';

export const register = (program: Command): void =>
  registerLifecycleVerb(program, 'deprecate', 'mark a version deprecated (still callable when pinned; hidden from discovery by default)');
