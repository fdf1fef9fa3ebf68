/**
 * The last full run's table in docs/benchmarks.md from a run's JSON (default bench/results/latest.json): one Markdown
 * row per bench row, the figures and ratios formatted as `npm run bench` prints them, the notes left to the JSON.
 *
 *     node --import tsx bench/markdown.ts [bench/results/latest.json] > /tmp/table.md
 */
import { readFileSync } from 'node:fs';
import type { BenchRow } from './lib.ts';
import { fmt, ratio } from './print.ts';

const file = process.argv[2] ?? 'bench/results/latest.json';
const run = JSON.parse(readFileSync(file, 'utf8')) as { at: string; node: string; rows: BenchRow[]; failures?: unknown[] };
const cell = (s: string): string => s.replaceAll('|', '\\|');
const lines = ['| bench | case | unit | Estate | peer / floor | peer | ratio |', '|---|---|---|---|---|---|---|'];
for (const r of run.rows) lines.push(`| ${[r.bench, r.case, r.unit, fmt(r.estate), r.peerName ?? '', fmt(r.peer), ratio(r)].map(cell).join(' | ')} |`);
process.stdout.write(`${lines.join('\n')}\n`);
process.stderr.write(`${run.rows.length} rows from ${file} (${run.at}, node ${run.node}); ${run.failures?.length ?? 0} benches did not run\n`);
