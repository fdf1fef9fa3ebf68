/** `estate replay --at <time|position>`: the catalogue as it was then (read-only). */
import type { Command } from 'commander';
import { withCatalogue } from '../commands/open.ts';
import { printJson, replayHeader, say, toolTable } from '../output.ts';

export const register = (program: Command): void => {
  program
    .command('replay')
    .description('rebuild the catalogue as it was at a time or a position (read-only)')
    .requiredOption('--at <time|position>', 'an ISO-8601 time, or a position printed by publish')
    .option('--include-deprecated', 'include deprecated versions')
    .action(
      withCatalogue(async (catalogue, opts, f: { at: string; includeDeprecated?: boolean }) => {
        const { tools, position, eventCount } = await catalogue.replay(f.at, Boolean(f.includeDeprecated));
        if (opts.json) printJson({ tools, asOf: f.at, position });
        else say([replayHeader(f.at, position, eventCount), ...toolTable(tools)]);
      }, { readOnly: true }),
    );
};
