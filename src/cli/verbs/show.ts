/** `estate show <name>[@<version>]`: one version's full definition (no version: the latest active one). */
import type { Command } from 'commander';
import { withCatalogue } from '../commands/open.ts';
import { printJson } from '../output.ts';
import { parseRef } from '../ref.ts';

export const register = (program: Command): void => {
  program
    .command('show')
    .description('show one version\'s full definition (no version: the latest active one)')
    .argument('<ref>', '<name>[@<version>]')
    .action(
      withCatalogue(async (catalogue, opts, ref: string) => {
        const out = await catalogue.show(parseRef(ref, false));
        // The human form is the JSON too (a definition is read best as it is written), hidden characters escaped.
        printJson(out);
      }, { readOnly: true }),
    );
};
