/** `estate history <name>`: every version of a tool, with its level, reasons and lifecycle. */
import type { Command } from 'commander';
import { withCatalogue } from '../commands/open.ts';
import { historyLines, printJson, say } from '../output.ts';
import { parseToolName } from '../ref.ts';

export const register = (program: Command): void => {
  program
    .command('history')
    .description('every version of a tool, with its level, reasons and lifecycle')
    .argument('<name>')
    .action(
      withCatalogue(async (catalogue, opts, name: string) => {
        const versions = await catalogue.history(parseToolName(name, 'history'));
        if (opts.json) printJson({ name, versions });
        else say(historyLines(versions));
      }, { readOnly: true }),
    );
};
