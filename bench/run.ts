/**
 * `npm run bench [-- name ...]`: every benchmark side by side with its peer or floor, in one run; a table, then JSON
 * (also written to bench/results/latest.json). A benchmark whose engine is missing (Kafka, PostgreSQL) says so and
 * the others still run.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import type { BenchRow } from './lib.ts';
import { printRows } from './print.ts';

const BENCHES: Record<string, () => Promise<{ run(): Promise<BenchRow[]> }>> = {
  discovery: () => import('./discovery.ts'),
  validation: () => import('./validation.ts'),
  replay: () => import('./replay.ts'),
  startup: () => import('./startup.ts'),
  mcp: () => import('./mcp.ts'),
  bus: () => import('./bus.ts'),
  upstream: () => import('./upstream.ts'),
  'stdio-read': () => import('./stdio-read.ts'),
  'client-cache': () => import('./client-cache.ts'),
  console: () => import('./console.ts'),
  ops: () => import('./ops.ts'),
  'catalogue-reads': () => import('./catalogue-reads.ts'),
};

const wanted = process.argv.slice(2).filter((a) => !a.startsWith('-'));
const unknown = wanted.filter((w) => !(w in BENCHES));
if (unknown.length) {
  console.error(`bench: unknown benchmark(s) ${unknown.join(', ')}; choose from ${Object.keys(BENCHES).join(', ')}`);
  process.exit(2);
}

const rows: BenchRow[] = [];
const failures: string[] = [];
for (const name of wanted.length ? wanted : Object.keys(BENCHES)) {
  const t0 = Date.now();
  process.stderr.write(`bench: ${name}...\n`);
  try {
    const mod = await BENCHES[name]?.();
    if (!mod) continue;
    rows.push(...(await mod.run()));
    process.stderr.write(`bench: ${name} done in ${((Date.now() - t0) / 1000).toFixed(1)} s\n`);
  } catch (e) {
    const msg = e instanceof Error ? (e.message.split('\n')[0] ?? e.message) : String(e);
    const missing = /Cannot find module|ERR_MODULE_NOT_FOUND/.test(msg);
    failures.push(`${name}: ${missing ? 'not built yet' : msg}`);
    process.stderr.write(`bench: ${name} did not run: ${msg}\n`);
  }
}

console.log(`Estate benchmarks, ${new Date().toISOString()}, node ${process.version}, ${process.platform}/${process.arch}\n`);
printRows(rows);
if (failures.length) console.log(`\nNot run: ${failures.join('; ')}`);
mkdirSync('bench/results', { recursive: true });
writeFileSync('bench/results/latest.json', JSON.stringify({ at: new Date().toISOString(), node: process.version, rows, failures }, null, 2));
process.exitCode = failures.some((f) => !f.endsWith('not built yet')) ? 1 : 0;
