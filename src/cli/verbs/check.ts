/** `estate check <file>`: what the publish guard would decide for a definition; changes nothing. */
import type { Command } from 'commander';
import { serverOption, withCatalogueWrites } from '../commands/open.ts';
import { checkedLines } from '../output.ts';
import { judgeFile } from '../verdict.ts';

export const register = (program: Command): void => {
  program
    .command('check')
    .description('say what the publish guard would decide for a definition; changes nothing')
    .argument('<file>', 'tool definition file')
    .addOption(serverOption())
    .action(
      withCatalogueWrites(async (catalogue, opts, file: string) => judgeFile(catalogue, 'check', file, opts, checkedLines), {
        // It changes nothing, so it creates no store either: a store that does not exist is judged as an empty one.
        readOnly: true,
        absentIsEmpty: true,
      }),
    );
};
