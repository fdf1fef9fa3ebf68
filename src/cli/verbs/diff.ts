/** `estate diff <a> <b>`: classify the change from a to b, each a definition file, else a published name@version. */
import type { Command } from 'commander';
import { withCatalogue } from '../commands/open.ts';
import { looksLikeFile } from '../definition-file.ts';
import { diffLines, printJson, say } from '../output.ts';

export const register = (program: Command): void => {
  program
    .command('diff')
    .description('classify the change from <a> to <b> (each a definition file, else name@version)')
    .argument('<a>')
    .argument('<b>')
    .action(
      withCatalogue(
        async (catalogue, opts, a: string, b: string) => {
          const { level, reasons } = await catalogue.diff(a, b);
          if (opts.json) printJson({ level, reasons });
          else say(diffLines(level, reasons));
        },
        // Two files need no store: no --store is opened (or required to exist) for them.
        { readOnly: true, storeless: (a: string, b: string) => looksLikeFile(a) && looksLikeFile(b) },
      ),
    );
};
