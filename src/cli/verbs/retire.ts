/** `estate retire <name>@<version> --reason <text>`. */
import type { Command } from 'commander';
import { registerLifecycleVerb } from '../lifecycle-verb.ts';

export const register = (program: Command): void => registerLifecycleVerb(program, 'retire', 'retire a version: never offered or callable again');
