/** `estate serve`: registered by ../serve-command.ts, which loads the server only when the verb runs. */
import type { Command } from 'commander';
import { registerServeCommand } from '../serve-command.ts';

export const register = (program: Command): void => registerServeCommand(program);
