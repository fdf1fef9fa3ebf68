/** `estate list [principal flags] [--include-deprecated]`: a principal's view, or every tool's latest active version. */
import type { Command } from 'commander';
import { withCatalogue } from '../commands/open.ts';
import { printJson, say, toolTable } from '../output.ts';
import { addPrincipalFlags, hasPrincipalFlags, principalFromFlags, type PrincipalFlags } from '../principal-flags.ts';

export const register = (program: Command): void => {
  addPrincipalFlags(
    program
      .command('list')
      .description('list tools: with principal flags, what that principal discovers; without, every tool\'s latest active version')
      .option('--include-deprecated', 'include deprecated versions'),
  ).action(
    withCatalogue(async (catalogue, opts, f: PrincipalFlags & { includeDeprecated?: boolean }) => {
      const tools = await catalogue.list({ ...(hasPrincipalFlags(f) ? { principal: principalFromFlags(f) } : {}), includeDeprecated: Boolean(f.includeDeprecated) });
      if (opts.json) printJson({ tools });
      else say(toolTable(tools));
    }, { readOnly: true }),
  );
};
