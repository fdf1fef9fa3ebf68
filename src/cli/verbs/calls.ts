/** `estate calls [runId]` (SPEC §5, §9): a run's recorded calls, or without a run id the recent runs. */
import type { Command } from 'commander';
import { DomainError } from '#domain/errors';
import { RUN_ID_PATTERN } from '#domain/events';
import { withCatalogue } from '../commands/open.ts';
import { callLine, printJson, runHeader, runLines, say } from '../output.ts';
import { parseRunFilter } from '../runs-listing.ts';

export const register = (program: Command): void => {
  program
    .command('calls')
    .description('the calls recorded for a run: which tool version each used, with which schema, and the outcome; without a run id, the recent runs')
    .argument('[runId]')
    .option('--since <time>', 'without a run id: runs with a call at or after this ISO-8601 time')
    .option('--tool <name>', 'without a run id: runs that called this tool')
    .option('--limit <n>', 'without a run id: at most this many runs, newest first (default 20)')
    .action(
      withCatalogue(async (catalogue, opts, runId: string | undefined, f: { since?: string; tool?: string; limit?: string }) => {
        if (runId === undefined) {
          const runs = await catalogue.runs(parseRunFilter(f));
          if (opts.json) printJson({ runs });
          else say(runLines(runs));
          return;
        }
        if (!RUN_ID_PATTERN.test(runId)) throw new DomainError('usage', 'invalid-run-id', `run id ${JSON.stringify(runId.length > 40 ? `${runId.slice(0, 40)}...` : runId)} is not 1 to 128 characters of A-Z a-z 0-9 . _ : -, starting with a letter or digit`);
        // One run per owner: the same id used by two tenants (or subjects) is two runs, shown one after the other.
        const runs = await catalogue.calls(runId);
        if (runs.length === 0) throw new DomainError('not-found', 'unknown-run', `no calls recorded for run '${runId}'`);
        // A `started` call (an intent with no outcome on record) has SPEC §5's fields too: null where nothing is known.
        const shaped = (c: (typeof runs)[number]['calls'][number]) =>
          c.outcome === 'started' ? { schemaHash: null, repaired: null, durationMs: null, ...c } : c;
        if (opts.json) printJson({ runId, owners: runs.map((r) => r.owner), calls: runs.flatMap((r) => r.calls.map(shaped)) });
        else for (const { owner, calls } of runs) say([runHeader(runId, owner), ...calls.map(callLine)]);
      }, { readOnly: true }),
    );
};
