/** The soak's picture: memory and latency over time, drawn by vega-lite and rendered to SVG by vega (no browser). */
import { vegaLiteSvg } from './vega-svg.ts';

export interface SoakSample {
  minute: number;
  rssMb: number;
  heapMb: number;
  loopP99Ms: number;
  p50Ms: number;
  p99Ms: number;
  requests: number;
  http5xx: number;
  errors: number;
}

const panel = (title: string, unit: string, fields: Record<string, keyof SoakSample>) => ({
  title,
  width: 640,
  height: 200,
  transform: [{ fold: Object.keys(fields), as: ['series', 'value'] }],
  mark: { type: 'line', point: true },
  encoding: {
    x: { field: 'minute', type: 'quantitative', title: 'minutes' },
    y: { field: 'value', type: 'quantitative', title: unit },
    color: { field: 'series', type: 'nominal', title: null },
  },
});

export const renderSoakChart = async (samples: readonly SoakSample[], title: string): Promise<string> => {
  const rows = samples.map((s) => ({ minute: s.minute, RSS: s.rssMb, 'heap used': s.heapMb, p50: s.p50Ms, p99: s.p99Ms, 'event-loop p99': s.loopP99Ms }));
  const spec = {
    $schema: 'https://vega.github.io/schema/vega-lite/v5.json',
    title,
    data: { values: rows },
    vconcat: [
      panel('Server memory', 'MB', { RSS: 'rssMb', 'heap used': 'heapMb' }),
      panel('Latency per interval', 'ms', { p50: 'p50Ms', p99: 'p99Ms', 'event-loop p99': 'loopP99Ms' }),
    ],
  };
  return vegaLiteSvg(spec);
};
