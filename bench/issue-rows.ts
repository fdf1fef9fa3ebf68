/**
 * Issue 15's targets side by side over full runs (`npm run bench`), one column per run's JSON, as the tables of
 * docs/benchmarks.md show them: each figure beside its peer or floor and the ratio the target is judged by, in bold
 * where the target is not met.
 *
 *     node --import tsx bench/issue-rows.ts Y=/tmp/run-y.json Z=bench/results/latest.json
 */
import { readFileSync } from 'node:fs';
import type { BenchRow } from './lib.ts';
import { fmt } from './print.ts';

const runs = process.argv.slice(2).map((arg) => {
  const eq = arg.indexOf('=');
  const [label, file] = eq > 0 ? [arg.slice(0, eq), arg.slice(eq + 1)] : [arg, arg];
  return { label, rows: (JSON.parse(readFileSync(file, 'utf8')) as { rows: BenchRow[] }).rows };
});
if (runs.length === 0) {
  process.stderr.write('usage: issue-rows.ts <label>=<a run\'s JSON> ...\n');
  process.exit(2);
}

type Rows = BenchRow[];
const row = (rows: Rows, bench: string, kase: string): BenchRow | undefined => rows.find((r) => r.bench === bench && r.case === kase);
const MCP = (c: string) => (rows: Rows) => row(rows, 'mcp', c);
const x = (n: number): string => `${n.toFixed(2)}x`;
const bold = (s: string, met: boolean): string => (met ? s : `**${s}**`);

/** A target: how a run's rows read against it ('' when the run lacks the rows). */
const targets: [string, (rows: Rows) => string][] = [
  ['tools/call p50 on disk within 1.3x of McpServer', (rows) => {
    const r = MCP('tools/call, valid arguments, p50')(rows);
    return r?.peer ? `${fmt(r.estate)} vs ${fmt(r.peer)} µs = ${bold(x(r.estate / r.peer), r.estate / r.peer <= 1.3)}` : '';
  }],
  ['on tmpfs no worse than McpServer', (rows) => {
    const r = MCP('tools/call p50, Estate store on tmpfs')(rows);
    return r?.peer ? `${fmt(r.estate)} vs ${fmt(r.peer)} = ${bold(x(r.estate / r.peer), r.estate <= r.peer)}` : '';
  }],
  ['16 in flight ≥ 1.5x', (rows) => {
    const r = MCP('tools/call throughput, 16 in flight')(rows);
    return r?.peer ? `${fmt(r.estate)} vs ${fmt(r.peer)} = ${bold(x(r.estate / r.peer), r.estate / r.peer >= 1.5)}` : '';
  }],
  ['2026-07-28 stateless on disk ≥ 2x McpServer\'s session', (rows) => {
    const r = MCP('tools/call throughput, 16 in flight, Estate 2026-07-28 stateless vs McpServer 2025 session')(rows);
    const t = MCP('tools/call throughput, 16 in flight, Estate 2026-07-28 stateless, store on tmpfs')(rows);
    if (!r?.peer) return '';
    return `${fmt(r.estate)} = ${bold(x(r.estate / r.peer), r.estate / r.peer >= 2)}${t?.peer ? ` (tmpfs ${x(t.estate / t.peer)})` : ''}`;
  }],
  ['full list within 3x of the JSON floor', (rows) => {
    const r = MCP('tools/list full list p50 vs JSON floor of all its pages')(rows);
    return r?.peer ? `${fmt(r.estate)} vs ${fmt(r.peer)} = ${bold(x(r.estate / r.peer), r.estate / r.peer <= 3)}` : '';
  }],
  ['first call within 2x of a warm call', (rows) => {
    const r = MCP('tools/call, first call of each tool vs a warm call, p50')(rows);
    return r?.peer ? `${fmt(r.estate)} vs ${fmt(r.peer)} = ${bold(x(r.estate / r.peer), r.estate / r.peer <= 2)}` : '';
  }],
  ['bus p50 within 10 ms of raw', (rows) => {
    const r = row(rows, 'bus', 'publish → list_changed at a client of another replica, p50');
    return r?.peer ? `${fmt(r.estate)} vs ${fmt(r.peer)}: ${bold((r.estate - r.peer).toFixed(1), r.estate - r.peer <= 10)}` : '';
  }],
  ['bus p99 within 2x of raw', (rows) => {
    const r = row(rows, 'bus', 'publish → list_changed at a client of another replica, p99');
    const d = row(rows, 'bus', 'publish → list_changed at a client of another replica, p99, vs a durable floor');
    if (!r?.peer) return '';
    return `${fmt(r.estate)} vs ${fmt(r.peer)} = ${bold(x(r.estate / r.peer), r.estate / r.peer <= 2)}${d?.peer ? ` (durable ${fmt(d.peer)}: ${x(d.estate / d.peer)})` : ''}`;
  }],
  ['start-up from a snapshot < 2 s', (rows) => {
    const r = row(rows, 'startup', 'serve: spawn to ready, from a snapshot');
    if (!r) return '';
    const starts = /starts \(([^)]*)\)/.exec(r.notes ?? '')?.[1];
    return `${bold(`${fmt(r.estate)} ms`, r.estate < 2000)}${starts ? ` (${starts.replace(/ ms$/, '')})` : ''}`;
  }],
  ['RSS at ready (after a session; after listing every tool) < 300 MiB', (rows) => {
    const f = (c: string) => row(rows, 'startup', c)?.estate;
    const [a, b, c] = [f('serve: peak RSS at ready, from a snapshot'), f('serve: peak RSS after a session (1 page + 200 calls), from a snapshot'), f('serve: peak RSS after a client listed every tool, from a snapshot')];
    if (a === undefined) return '';
    return bold(`${a.toFixed(1)} (${b?.toFixed(1) ?? '?'}; ${c?.toFixed(1) ?? '?'})`, Math.max(a, b ?? 0, c ?? 0) < 300);
  }],
  ['`estate replay` ≥ 100k events/s', (rows) => {
    const r = row(rows, 'replay', 'estate replay (full replay, no snapshot), vs target');
    return r ? bold(fmt(r.estate), r.estate >= 100_000) : '';
  }],
  ['PostgreSQL publish, serving process (new tool / next version) ≥ 0.6x', (rows) => {
    const a = row(rows, 'bus', 'publish throughput on PostgreSQL, serving process, new tool');
    const b = row(rows, 'bus', 'publish throughput on PostgreSQL, serving process, next version');
    if (!a?.peer || !b?.peer) return '';
    return `${bold(x(a.estate / a.peer), a.estate / a.peer >= 0.6)} / ${bold(x(b.estate / b.peer), b.estate / b.peer >= 0.6)}`;
  }],
  ['invalid arguments within 5x of raw Ajv', (rows) => {
    const r = row(rows, 'validation', 'invalid args: Estate validate vs Ajv, same options');
    return r?.peer ? `${fmt(r.estate)} vs ${fmt(r.peer)} µs = ${bold(x(r.estate / r.peer), r.estate / r.peer <= 5)}` : '';
  }],
];

const lines = [`| target | ${runs.map((r) => r.label).join(' | ')} |`, `|---|${runs.map(() => '---|').join('')}`];
for (const [name, read] of targets) lines.push(`| ${name} | ${runs.map((r) => read(r.rows) || '(not run)').join(' | ')} |`);
const floors = runs.map((r) => {
  const fsync = MCP('tools/call p50, durable record on disk vs one fsync of the disk')(r.rows)?.peer;
  const commit = MCP('floor: one SQLite commit of a call-sized row (WAL, synchronous=FULL), p50')(r.rows)?.peer;
  return `${r.label}: fsync ${fmt(fsync)} µs, one SQLite commit ${fmt(commit)} µs`;
});
process.stdout.write(`${lines.join('\n')}\n\nThe disk's floors: ${floors.join('; ')}.\n`);
