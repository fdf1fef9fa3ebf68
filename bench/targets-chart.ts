/**
 * The picture at the top of docs/benchmarks.md: each of issue 15's targets, one dot per full run, placed by its margin
 * (bench/issue-targets.ts: ≥ 1 is inside the line, < 1 outside it, whatever the target's direction), on a log scale so
 * 2x inside and 2x outside sit equally far from the line. Drawn by vega-lite and rendered to SVG by vega (no browser).
 *
 *     node --import tsx bench/targets-chart.ts --out docs/benchmarks-targets.svg AH=/tmp/run-ah.json AI=/tmp/run-ai.json
 */
import { writeFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { ISSUE_TARGETS } from './issue-targets.ts';
import { readRuns, type LabelledRun } from './runs-arg.ts';
import { vegaLiteSvg } from './vega-svg.ts';

/** Margins past these are drawn at the edge: the picture is about the line, not how far past it a row sails. */
const LOW = 0.25;
const HIGH = 8;

export const targetsChartSpec = (runs: readonly LabelledRun[], title: string): Record<string, unknown> => {
  const values = runs.flatMap((run) =>
    ISSUE_TARGETS.flatMap((t) => {
      const r = t.read(run.rows);
      if (!r) return [];
      return [{ target: t.name.replaceAll('`', ''), run: run.label, margin: Math.min(HIGH, Math.max(LOW, r.margin)), met: r.margin >= 1 ? 'met' : 'not met' }];
    }),
  );
  const order = ISSUE_TARGETS.map((t) => t.name.replaceAll('`', ''));
  const x = { field: 'margin', type: 'quantitative', scale: { type: 'log', domain: [LOW, HIGH] }, title: 'margin: the target / the figure, or the figure / the target (≥ 1: met)' };
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v5.json',
    title,
    width: 560,
    height: { step: 26 },
    layer: [
      { data: { values: [{ from: LOW, to: 1 }] }, mark: { type: 'rect', color: '#fbe3e3' }, encoding: { x: { field: 'from', type: 'quantitative', scale: x.scale }, x2: { field: 'to' } } },
      { data: { values: [{ margin: 1 }] }, mark: { type: 'rule', color: '#444', strokeDash: [4, 3] }, encoding: { x: { field: 'margin', type: 'quantitative', scale: x.scale } } },
      {
        data: { values },
        mark: { type: 'point', filled: true, size: 90, opacity: 0.85 },
        encoding: {
          y: { field: 'target', type: 'nominal', sort: order, title: null, axis: { labelLimit: 0 } },
          x,
          color: { field: 'run', type: 'nominal', title: 'run' },
          shape: { field: 'met', type: 'nominal', title: null, scale: { domain: ['met', 'not met'], range: ['circle', 'cross'] } },
        },
      },
    ],
  };
};

export const renderTargetsChart = (runs: readonly LabelledRun[], title: string): Promise<string> => vegaLiteSvg(targetsChartSpec(runs, title));

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const { values, positionals } = parseArgs({ allowPositionals: true, options: { out: { type: 'string', default: 'docs/benchmarks-targets.svg' }, title: { type: 'string' } } });
  const runs = readRuns(positionals, 'targets-chart.ts');
  const title = values.title ?? `Issue 15's targets over full runs ${runs.map((r) => r.label).join(', ')} (npm run bench)`;
  writeFileSync(values.out, await renderTargetsChart(runs, title));
  process.stderr.write(`targets-chart: wrote ${values.out}\n`);
}
