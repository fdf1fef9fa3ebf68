import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Shared helpers for `npm run bench`. Every bench module exports `run(): Promise<BenchRow[]>`; bench/run.ts prints them
 * side by side (Estate vs a named peer or floor) as a table and as JSON. Timings are never asserted anywhere.
 */
export interface BenchRow {
  /** The group, e.g. `discovery`, `validation`, `replay`, `mcp`. */
  bench: string;
  /** What was measured, e.g. `tools/list-sized query, median`. */
  case: string;
  /** Unit of both values, e.g. `µs/op`, `ops/s`, `events/s`, `MiB`. */
  unit: string;
  estate: number;
  /** The peer or floor it is compared with, e.g. `naive filter (deep dive §5)`, `raw Ajv`. Omit for absolute figures. */
  peerName?: string;
  peer?: number;
  /** Free text: sizes, counts, caveats. */
  notes?: string;
}

/** Run `fn` `iterations` times after `warmup` runs; returns per-run durations in microseconds. */
export const sample = (fn: () => unknown, iterations: number, warmup = Math.min(100, iterations)): number[] => {
  for (let i = 0; i < warmup; i++) fn();
  const out: number[] = [];
  for (let i = 0; i < iterations; i++) {
    const t0 = process.hrtime.bigint();
    fn();
    out.push(Number(process.hrtime.bigint() - t0) / 1000);
  }
  return out;
};

export const percentile = (values: readonly number[], p: number): number => {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const idx = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[idx] as number;
};

export const median = (values: readonly number[]): number => percentile(values, 50);

/**
 * CPU time (user + system) another process has used so far, in µs, from Linux /proc: the whole process, or with
 * `mainThread` its main thread alone (`/proc/<pid>/task/<pid>`, the serving thread of a Node server). NaN where it
 * cannot be read.
 */
export const procCpuMicros = (pid: number, mainThread = false): number => {
  try {
    // Fields 14 and 15 (utime, stime) in clock ticks of 1/100 s, after the parenthesised command name.
    const fields = readFileSync(mainThread ? `/proc/${pid}/task/${pid}/stat` : `/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
    return (Number(fields[11]) + Number(fields[12])) * 10_000;
  } catch {
    return Number.NaN;
  }
};

export const mib = (bytes: number): number => Math.round((bytes / (1024 * 1024)) * 10) / 10;

const ROOT = new URL('..', import.meta.url).pathname;

/**
 * The compiled build, fresh: what `estate` runs once installed, not tsx (whose loader a worker thread must load again).
 * `bench` names who asked, in the line printed when it builds. Returns how the build was found, for a row's notes.
 */
export const ensureBuild = (bench: string): string => {
  const stamp = join(ROOT, 'dist', '.built');
  const newest = (dir: string): number => Math.max(0, ...execFileSync('find', [dir, '-type', 'f', '-newer', stamp], { encoding: 'utf8' }).split('\n').filter(Boolean).map((f) => statSync(f).mtimeMs));
  if (existsSync(stamp) && newest(join(ROOT, 'src')) === 0 && newest(join(ROOT, 'projections')) === 0) return 'compiled build';
  process.stderr.write(`${bench}: building dist/ first (measured on the compiled build)...\n`);
  execFileSync(process.execPath, [join(ROOT, 'scripts', 'build.mjs')], { cwd: ROOT, stdio: 'inherit' });
  return 'compiled build (rebuilt)';
};

/** A module of the compiled build, e.g. `src/app/replay.js`, loaded from dist/ (call `ensureBuild` first). */
export const importBuilt = <T>(path: string): Promise<T> => import(new URL(`../dist/${path}`, import.meta.url).href) as Promise<T>;
