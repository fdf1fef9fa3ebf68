/**
 * Issue 15's targets as the bench's table and picture read them (bench/issue-targets.ts): a margin of 1 is the line
 * whatever the target's direction, a missing row reads as not run, and the picture places every read target.
 */
import { describe, expect, it } from 'vitest';
import { ISSUE_TARGETS } from '../../bench/issue-targets.ts';
import type { BenchRow } from '../../bench/lib.ts';
import { targetsChartSpec } from '../../bench/targets-chart.ts';

const target = (name: string) => {
  const t = ISSUE_TARGETS.find((x) => x.name === name);
  if (!t) throw new Error(`no target ${name}`);
  return t;
};
const mcp = (kase: string, estate: number, peer: number): BenchRow => ({ bench: 'mcp', case: kase, unit: 'µs', estate, peer });

describe('issue 15 targets', () => {
  it('reads an upper bound: 1.3x allowed, 0.9x measured is inside by 1.3/0.9', () => {
    const r = target('tools/call p50 on disk within 1.3x of McpServer').read([mcp('tools/call, valid arguments, p50', 900, 1000)]);
    expect(r?.margin).toBeCloseTo(1.3 / 0.9, 6);
    expect(r?.text).toBe('900 vs 1,000 µs = 0.90x');
  });

  it('reads a lower bound: 2x wanted, 1.89x measured is outside, in bold', () => {
    const r = target("2026-07-28 stateless on disk ≥ 2x McpServer's session").read([
      mcp('tools/call throughput, 16 in flight, Estate 2026-07-28 stateless vs McpServer 2025 session', 7014, 3707),
    ]);
    expect(r?.margin).toBeCloseTo(7014 / 3707 / 2, 6);
    expect(r!.margin).toBeLessThan(1);
    expect(r?.text).toBe('7,014 = **1.89x**');
  });

  it('is met exactly on the line', () => {
    const r = target('16 in flight ≥ 1.5x').read([mcp('tools/call throughput, 16 in flight', 1500, 1000)]);
    expect(r?.margin).toBe(1);
    expect(r?.text).not.toContain('**');
  });

  it('judges the PostgreSQL publish by the worse of its two rows', () => {
    const bus = (kase: string, estate: number): BenchRow => ({ bench: 'bus', case: kase, unit: 'publishes/s', estate, peer: 1000 });
    const r = target('PostgreSQL publish, serving process (new tool / next version) ≥ 0.6x').read([
      bus('publish throughput on PostgreSQL, serving process, new tool', 800),
      bus('publish throughput on PostgreSQL, serving process, next version', 540),
    ]);
    expect(r?.margin).toBeCloseTo(0.54 / 0.6, 6);
    expect(r?.text).toBe('0.80x / **0.54x**');
  });

  it('says nothing for a run without the rows', () => {
    for (const t of ISSUE_TARGETS) expect(t.read([])).toBeUndefined();
  });

  it('places one point per target a run read, clamped to the picture, marked met or not', () => {
    const rows = [mcp('tools/call, valid arguments, p50', 100, 1000), mcp('tools/call throughput, 16 in flight', 1000, 1000)];
    const spec = targetsChartSpec([{ label: 'A', rows }], 't') as { layer: { data: { values: { target: string; margin: number; met: string }[] } }[] };
    const points = spec.layer[2]!.data.values;
    expect(points.map((p) => [p.target, p.margin, p.met])).toEqual([
      ['tools/call p50 on disk within 1.3x of McpServer', 8, 'met'],
      ['16 in flight ≥ 1.5x', 1 / 1.5, 'not met'],
    ]);
  });
});
