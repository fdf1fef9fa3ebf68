/**
 * How far V8 lets a serving process's heap grow past what it held after its last full collection (issue 15). Left
 * to itself on a machine with memory to spare, V8 sizes the heap from the machine (here a ~4 GiB limit) and grows it
 * by up to 4x between full collections: a client listing every tool of a 100,000-tool catalogue took a process from
 * ~205 MiB to ~445 MiB of garbage it had no reason to collect yet. Growing by at most 20% kept the same walk under
 * ~280 MiB, with no heap limit (nothing stops with out-of-memory). Set once the process is ready, so the start-up
 * (restoring the catalogue) grows as V8 likes; a process started with its own `--heap-growing-percent` keeps it.
 *
 * V8 reads this setting at every full collection, which is why it can be changed in a running process (unlike the
 * heap limit, which `--max-old-space-size` must give at start); Node starts V8 with `--no-freeze-flags-after-init`,
 * which is what keeps `v8.setFlagsFromString` working after start.
 */
import { setFlagsFromString } from 'node:v8';
import type { Log } from '#app/log';

export const DEFAULT_HEAP_GROWING_PERCENT = 20;

/** The V8 flag to set, or null: 0 asks for V8's own heuristics, and a flag given at start wins. */
export const heapGrowingFlag = (percent: number, execArgv: readonly string[]): string | null =>
  percent === 0 || execArgv.some((a) => /^--heap[-_]growing[-_]percent\b/.test(a)) ? null : `--heap-growing-percent=${percent}`;

export const applyHeapPolicy = (percent: number, log: Log): void => {
  const flag = heapGrowingFlag(percent, process.execArgv);
  if (flag === null) return;
  setFlagsFromString(flag);
  log.debug({ heapGrowingPercent: percent }, 'heap: grown by at most this much between full collections');
};
