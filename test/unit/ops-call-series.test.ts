/**
 * The call path's series (src/ops/call-series.ts) are kept by Estate and only read out by prom-client's Registry: fed
 * the same observations, they must read exactly as prom-client's own Counter and Histogram do, in the text a scrape
 * gets and in the JSON form, after a reset too.
 */
import { Counter, Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { createCallCounter, createCallHistogram } from '#ops/call-series';
import { TOOL_CALL_SECONDS_BUCKETS } from '#ops/metrics';

const LABELS = ['tool', 'version', 'outcome'] as const;

/** A small deterministic generator (mulberry32), so a failure names its seed. */
const random = (seed: number) => () => {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};

const pair = () => {
  const ours = new Registry();
  const theirs = new Registry();
  const counter = createCallCounter({ name: 'x_calls_total', help: 'calls', labelNames: LABELS, registry: ours });
  const histogram = createCallHistogram({ name: 'x_call_seconds', help: 'call time', labelNames: LABELS, buckets: TOOL_CALL_SECONDS_BUCKETS, registry: ours });
  const promCounter = new Counter({ name: 'x_calls_total', help: 'calls', labelNames: [...LABELS], registers: [theirs] });
  const promHistogram = new Histogram({ name: 'x_call_seconds', help: 'call time', labelNames: [...LABELS], buckets: [...TOOL_CALL_SECONDS_BUCKETS], registers: [theirs] });
  const observe = (tool: string, version: string, outcome: string, seconds: number) => {
    counter.inc(tool, version, outcome);
    histogram.observe(tool, version, outcome, seconds);
    promCounter.inc({ tool, version, outcome });
    promHistogram.observe({ tool, version, outcome }, seconds);
  };
  const same = async () => {
    expect(await ours.metrics()).toBe(await theirs.metrics());
    expect(await ours.getMetricsAsJSON()).toEqual(await theirs.getMetricsAsJSON());
  };
  return { ours, theirs, observe, same };
};

describe('call series read as prom-client writes them', () => {
  it('nothing observed: the HELP and TYPE lines alone', async () => {
    const { ours, same } = pair();
    await same();
    expect(await ours.metrics()).toContain('# TYPE x_call_seconds histogram');
  });

  it('values on every bound, between them, past the last, zero, and label values that must be escaped', async () => {
    const { observe, same } = pair();
    for (const b of TOOL_CALL_SECONDS_BUCKETS) {
      observe('payments.lookup', '1.0.0', 'ok', b);
      observe('payments.lookup', '1.0.0', 'ok', b * 1.0001);
    }
    observe('payments.lookup', '1.0.0', 'timeout', 31);
    observe('payments.lookup', '1.0.0', 'ok', 0);
    observe('odd "tool"\\name\nline', '2.0.0-rc.1', '-32602', 0.0042);
    await same();
  });

  it.each([1, 2, 3])('many label sets and observations, in any order (seed %i)', async (seed) => {
    const next = random(seed);
    const { observe, same } = pair();
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)]!;
    const tools = Array.from({ length: 40 }, (_, i) => `t${i}.call`);
    for (let i = 0; i < 3000; i++) {
      observe(pick(tools), pick(['1.0.0', '1.1.0', '2.0.0']), pick(['ok', 'tool_error', 'timeout', 'store_unavailable']), next() < 0.05 ? next() * 60 : next() * 0.05);
    }
    await same();
  });

  it('a reset empties both alike, and counting starts again', async () => {
    const { ours, theirs, observe, same } = pair();
    observe('a', '1.0.0', 'ok', 0.002);
    ours.resetMetrics();
    theirs.resetMetrics();
    await same();
    observe('b', '1.0.0', 'ok', 0.02);
    await same();
  });
});
