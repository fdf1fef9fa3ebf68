/**
 * Issue 15's targets side by side over full runs (`npm run bench`), one column per run's JSON, as the tables of
 * docs/benchmarks.md show them: each figure beside its peer or floor and the ratio the target is judged by, in bold
 * where the target is not met (the targets and how each is read: bench/issue-targets.ts).
 *
 *     node --import tsx bench/issue-rows.ts Y=/tmp/run-y.json Z=bench/results/latest.json
 */
import { diskFloors, ISSUE_TARGETS } from './issue-targets.ts';
import { readRuns } from './runs-arg.ts';

const runs = readRuns(process.argv.slice(2), 'issue-rows.ts');
const lines = [`| target | ${runs.map((r) => r.label).join(' | ')} |`, `|---|${runs.map(() => '---|').join('')}`];
for (const t of ISSUE_TARGETS) lines.push(`| ${t.name} | ${runs.map((r) => t.read(r.rows)?.text ?? '(not run)').join(' | ')} |`);
const floors = runs.map((r) => `${r.label}: ${diskFloors(r.rows)}`);
process.stdout.write(`${lines.join('\n')}\n\nThe disk's floors: ${floors.join('; ')}.\n`);
