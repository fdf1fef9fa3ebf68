/**
 * Issue 9, High 1: 50,000 distinct patterns compiled and used in one process with flat memory. re2-wasm failed for
 * good after ~8,300 (a fixed 16 MiB heap never freed); native re2 frees a program with its object, and the LRU of
 * linear-regexp.ts keeps at most PATTERN_CACHE_SIZE of them alive.
 *
 *   node --expose-gc --import tsx bench/regex-memory.ts [count]
 */
import { linearRegExp, linearRegExpCacheSize, PATTERN_CACHE_SIZE } from '#domain/linear-regexp';

const count = Number(process.argv[2] ?? 50_000);
const gc = (globalThis as { gc?: () => void }).gc;
const rss = (): number => {
  gc?.();
  return process.memoryUsage().rss / 2 ** 20;
};

const shape = (prefix: string, i: number): string => `^${prefix}${i}(x|yz)+[a-f0-9]{2,8}-(${i % 97}|q)$`; // not backtrack-safe: RE2
// Warm up with one cache's worth of the same shape, so "before" already holds a full cache: the steady state of a
// large catalogue. What must not grow is everything after.
for (let i = 0; i < PATTERN_CACHE_SIZE; i++) linearRegExp(shape('w', i)).test(`w${i}xyz0af-q`);
const before = rss();
const started = performance.now();
const samples: string[] = [];
for (let i = 0; i < count; i++) {
  const p = shape('p', i);
  const m = linearRegExp(p);
  if (!m.test(`p${i}xyz0af-q`) || m.test(`p${i}w`)) throw new Error(`pattern ${p} answered wrongly`);
  if ((i + 1) % 10_000 === 0) samples.push(`${i + 1}: ${rss().toFixed(0)} MiB`);
}
const after = rss();
console.log(`${count} distinct patterns compiled and used in ${((performance.now() - started) / 1000).toFixed(1)} s; cache ${linearRegExpCacheSize()} (cap ${PATTERN_CACHE_SIZE})`);
console.log(`RSS before ${before.toFixed(0)} MiB, after ${after.toFixed(0)} MiB (growth ${(after - before).toFixed(0)} MiB); ${samples.join(', ')}${gc ? '' : ' (run with --expose-gc for steadier numbers)'}`);
