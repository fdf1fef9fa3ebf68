/**
 * Profiles a serving process under a tools/call loop: `estate serve --http` from a checkout (`--root`, default this
 * one) runs under `node --cpu-prof`, on a store of the MCP bench's 1,000 tools, while this process sends it calls as
 * one 2025-11-25 session or as 2026-07-28 stateless requests; the server is then stopped and its .cpuprofile
 * summarised by bench/cpuprofile-summary.ts (self time per function and per file, as shares of the profile).
 *
 *   node --import tsx bench/mcp-profile.ts --mode session|stateless [--calls 4000] [--concurrency 1] \
 *     [--store-dir /dev/shm] [--root /path/to/other/checkout] [--out /tmp/prof-x] [--top 40]
 *
 * Comparing two checkouts on a shared machine: read the proportions, not the wall times.
 */
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { summarise } from './cpuprofile-summary.ts';
import { callOnce, listAll, openSession, openStateless, publishAll, startEstate, stop, throughput } from './mcp-client.ts';
import { TOOL_COUNT } from './mcp-fixture.ts';

const { values } = parseArgs({
  options: {
    mode: { type: 'string', default: 'session' },
    calls: { type: 'string', default: '4000' },
    concurrency: { type: 'string', default: '1' },
    'store-dir': { type: 'string' },
    root: { type: 'string' },
    out: { type: 'string' },
    top: { type: 'string', default: '40' },
  },
});
if (values.mode !== 'session' && values.mode !== 'stateless') throw new Error(`--mode must be session or stateless (got ${values.mode})`);

const storeDir = mkdtempSync(join(values['store-dir'] ?? tmpdir(), 'estate-profile-'));
const out = values.out ?? mkdtempSync(join(tmpdir(), 'prof-'));
const children: Parameters<typeof startEstate>[1] = [];
try {
  const store = `sqlite:${join(storeDir, 'bench.db')}`;
  await publishAll(store);
  const { url, child } = await startEstate(store, children, { nodeArgs: [`--cpu-prof`, `--cpu-prof-interval=250`, `--cpu-prof-dir=${out}`], ...(values.root ? { root: resolve(values.root) } : {}) });
  const s = await (values.mode === 'session' ? openSession(url) : openStateless(url));
  await listAll(s);
  for (let i = 0; i < TOOL_COUNT; i++) await callOnce(s, i);
  // Only the loop is counted: start-up and the first calls (validators compiled ahead) are outside the window.
  const from = Number(process.hrtime.bigint() / 1000n);
  const rate = await throughput(s, Number(values.calls), Number(values.concurrency));
  const to = Number(process.hrtime.bigint() / 1000n);
  process.stderr.write(`profile: ${values.calls} calls at ${values.concurrency} in flight, ${rate.toFixed(0)} calls/s (loaded machine: indicative)\n`);
  await stop(child);
  // The main thread's profile (thread 0); a worker's would be `.1.`.
  const file = readdirSync(out).find((f) => /\.0\.\d+\.cpuprofile$/.test(f));
  if (!file) throw new Error(`no .cpuprofile in ${out}: did the server exit on SIGTERM?`);
  // The window beside the profile, for other readings of it (times on the monotonic clock, µs).
  writeFileSync(join(out, 'window.json'), JSON.stringify({ from, to, calls: Number(values.calls) }));
  process.stdout.write(`${join(out, file)}\n${summarise(join(out, file), Number(values.top), { from, to })}`);
} finally {
  await Promise.all(children.map(stop));
  rmSync(storeDir, { recursive: true, force: true });
}
