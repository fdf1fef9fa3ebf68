/** `<label>=<a run's JSON>` arguments of the scripts that read several full runs (issue-rows.ts, targets-chart.ts). */
import { readFileSync } from 'node:fs';
import type { BenchRow } from './lib.ts';

export interface LabelledRun {
  label: string;
  rows: BenchRow[];
}

/** Each argument `label=file` (or just `file`, labelled by its path); exits 2 with a usage line when there is none. */
export const readRuns = (args: readonly string[], script: string): LabelledRun[] => {
  if (args.length === 0) {
    process.stderr.write(`usage: ${script} <label>=<a run's JSON> ...\n`);
    process.exit(2);
  }
  return args.map((arg) => {
    const eq = arg.indexOf('=');
    const [label, file] = eq > 0 ? [arg.slice(0, eq), arg.slice(eq + 1)] : [arg, arg];
    return { label, rows: (JSON.parse(readFileSync(file, 'utf8')) as { rows: BenchRow[] }).rows };
  });
};
