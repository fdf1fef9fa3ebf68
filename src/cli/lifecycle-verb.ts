/** What deprecate and retire share: `<name>@<version> --reason <text>`, local or through a server's API. */
import type { Command } from 'commander';
import { serverOption, withCatalogueWrites } from './commands/open.ts';
import { lifecycleLine, printJson, say } from './output.ts';
import { parseRef } from './ref.ts';

export const registerLifecycleVerb = (program: Command, verb: 'deprecate' | 'retire', description: string): void => {
  program
    .command(verb)
    .description(description)
    .argument('<ref>', '<name>@<version>')
    .requiredOption('--reason <text>', 'why (shown to callers)')
    .option('--by <who>', 'who does it (env ESTATE_ACTOR, default the OS user)')
    .addOption(serverOption())
    .action(
      withCatalogueWrites(async (catalogue, opts, ref: string, flags: { reason: string }) => {
        const { name, version } = parseRef(ref, true);
        const out = await catalogue[verb]({ name, version }, flags.reason);
        if (opts.json) printJson(out);
        // The ref as given names the version, whatever a server's body says.
        else say([lifecycleLine({ ...out, name, version })]);
      }, { neverCreates: true }),
    );
};
