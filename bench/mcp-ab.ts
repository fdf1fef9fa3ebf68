/**
 * Two builds' serving paths side by side, for a change too small for runs of the whole bench to see: two `estate serve
 * --http` processes, one per checkout (each serving its own dist/), on stores of the MCP bench's 1,000 tools, warmed
 * alike; then rounds of tools/call at 16 in flight alternate between them (A B, B A, A B, ...). Each round prints both
 * sides' calls/s and their serving thread's CPU per call (Linux: /proc); the summary gives the medians of B/A.
 *
 *   node --import tsx bench/mcp-ab.ts --b /path/to/other/checkout [--a this checkout] [--mode stateless|session]
 *     [--rounds 10] [--calls 10000] [--concurrency 16] [--store-dir DIR] [--env-b NAME=value,...] [--once]
 *
 * A second checkout of a commit to compare with:
 *   git worktree add /tmp/estate-base <ref> && ln -s "$PWD/node_modules" /tmp/estate-base/ \
 *     && (cd /tmp/estate-base && node scripts/build.mjs)
 * `--env-b` sets variables for B's server only (a prototype behind a variable, against the same checkout: `--b .`).
 *
 * Why rounds and not runs: on the 2-core machines this project is measured on, speed moved by up to 2x for minutes at
 * a time (4,936 and 9,274 calls/s from the same server within one run), so two runs in turn cannot show a few percent,
 * and rounds of a second or two, alternating, can. And in A/A runs (the same product code on both sides) the server
 * started second tended to read faster (B/A rate medians 0.988, 1.034 and 1.044; this tool's first A/A: 1.029 with A
 * started first, 0.968 with B first), so unless `--once` the pair runs twice with the start order swapped, and the
 * figure is the geometric mean of the two runs' medians (0.998 for that A/A).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { median, procCpuMicros } from './lib.ts';
import { callOnce, listAll, openSession, openStateless, publishAll, REPO_ROOT, startEstate, stop, throughput, type Session } from './mcp-client.ts';
import { TOOL_COUNT } from './mcp-fixture.ts';

const { values } = parseArgs({
  options: {
    a: { type: 'string' },
    b: { type: 'string' },
    mode: { type: 'string', default: 'stateless' },
    rounds: { type: 'string', default: '10' },
    calls: { type: 'string', default: '10000' },
    concurrency: { type: 'string', default: '16' },
    'store-dir': { type: 'string' },
    'env-b': { type: 'string', default: '' },
    once: { type: 'boolean', default: false },
  },
});
const usage = 'usage: node --import tsx bench/mcp-ab.ts --b <checkout> [--a <checkout>] [--mode stateless|session] [--rounds 10] [--calls 10000] [--concurrency 16] [--store-dir DIR] [--env-b NAME=value,...] [--once]';
if (values.b === undefined) throw new Error(`--b is required\n${usage}`);
if (values.mode !== 'session' && values.mode !== 'stateless') throw new Error(`--mode must be session or stateless (got ${values.mode})\n${usage}`);
const count = (name: 'rounds' | 'calls' | 'concurrency'): number => {
  const n = Number(values[name]);
  if (!Number.isInteger(n) || n < 1) throw new Error(`--${name} must be a whole number of at least 1 (got ${values[name]})\n${usage}`);
  return n;
};
const rounds = count('rounds');
const calls = count('calls');
const concurrency = count('concurrency');
const envB = Object.fromEntries(
  values['env-b']
    .split(',')
    .filter((kv) => kv.trim() !== '')
    .map((kv) => {
      const at = kv.indexOf('=');
      if (at < 1) throw new Error(`--env-b wants NAME=value pairs separated by commas (got ${kv})`);
      return [kv.slice(0, at).trim(), kv.slice(at + 1)];
    }),
);
const roots = { A: resolve(values.a ?? REPO_ROOT), B: resolve(values.b) };
const open = values.mode === 'session' ? openSession : openStateless;

/** The serving thread's CPU time so far, in µs; undefined where /proc cannot be read. */
const threadCpu = (pid: number): number | undefined => {
  const us = procCpuMicros(pid, true);
  return Number.isNaN(us) ? undefined : us;
};

interface Side {
  name: 'A' | 'B';
  session: Session;
  pid: number;
  rates: number[];
  cpu: (number | undefined)[];
}

/** One pair of servers, started in `order`; the medians of B/A over the rounds. */
const runPair = async (order: readonly ('A' | 'B')[]): Promise<{ rate: number; cpu: number | undefined }> => {
  const children: Parameters<typeof startEstate>[1] = [];
  const dirs: string[] = [];
  try {
    const sides = {} as Record<'A' | 'B', Side>;
    for (const name of order) {
      const dir = mkdtempSync(join(values['store-dir'] ?? tmpdir(), `estate-ab-${name}-`));
      dirs.push(dir);
      const store = `sqlite:${join(dir, 'bench.db')}`;
      await publishAll(store);
      const { url, child } = await startEstate(store, children, { root: roots[name], ...(name === 'B' ? { env: envB } : {}) });
      const session = await open(url);
      await listAll(session);
      for (let i = 0; i < TOOL_COUNT; i++) await callOnce(session, i);
      await throughput(session, 3000, concurrency);
      sides[name] = { name, session, pid: child.pid!, rates: [], cpu: [] };
    }
    const one = async (s: Side): Promise<void> => {
      const before = threadCpu(s.pid);
      s.rates.push(await throughput(s.session, calls, concurrency));
      const after = threadCpu(s.pid);
      s.cpu.push(before === undefined || after === undefined ? undefined : (after - before) / calls);
    };
    const show = (s: Side) => `${s.name} ${s.rates.at(-1)!.toFixed(0)} calls/s${s.cpu.at(-1) === undefined ? '' : `, ${s.cpu.at(-1)!.toFixed(0)} µs/call`}`;
    for (let r = 0; r < rounds; r++) {
      const turn = r % 2 === 0 ? [sides.A, sides.B] : [sides.B, sides.A];
      for (const s of turn) await one(s);
      process.stdout.write(`  round ${r + 1}: ${show(sides.A)} | ${show(sides.B)} | B/A ${(sides.B.rates.at(-1)! / sides.A.rates.at(-1)!).toFixed(3)}\n`);
    }
    const rate = median(sides.B.rates.map((b, i) => b / sides.A.rates[i]!));
    const cpuPairs = sides.B.cpu.flatMap((b, i) => (b === undefined || sides.A.cpu[i] === undefined ? [] : [b / sides.A.cpu[i]!]));
    const cpu = cpuPairs.length > 0 ? median(cpuPairs) : undefined;
    process.stdout.write(
      `  medians: A ${median(sides.A.rates).toFixed(0)}, B ${median(sides.B.rates).toFixed(0)} calls/s; B/A calls/s ${rate.toFixed(3)}${cpu === undefined ? '' : `, serving thread CPU per call ${cpu.toFixed(3)}`}\n`,
    );
    return { rate, cpu };
  } finally {
    await Promise.all(children.map(stop));
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  }
};

process.stdout.write(
  `A ${roots.A}\nB ${roots.B}${Object.keys(envB).length > 0 ? ` with ${Object.keys(envB).join(', ')} set` : ''}\n` +
    `${values.mode} tools/call, ${concurrency} in flight, ${rounds} rounds of ${calls} calls each side, alternating\n`,
);
const orders: ('A' | 'B')[][] = values.once ? [['A', 'B']] : [['A', 'B'], ['B', 'A']];
const results: { rate: number; cpu: number | undefined }[] = [];
for (const order of orders) {
  process.stdout.write(`started ${order.join(' then ')}:\n`);
  results.push(await runPair(order));
}
if (results.length > 1) {
  const geo = (xs: readonly number[]) => Math.exp(xs.reduce((s, x) => s + Math.log(x), 0) / xs.length);
  const cpus = results.flatMap((r) => (r.cpu === undefined ? [] : [r.cpu]));
  process.stdout.write(
    `B/A over both start orders (geometric mean): calls/s ${geo(results.map((r) => r.rate)).toFixed(3)}${cpus.length === results.length ? `, serving thread CPU per call ${geo(cpus).toFixed(3)}` : ''}\n`,
  );
}
