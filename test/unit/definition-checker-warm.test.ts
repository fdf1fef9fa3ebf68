/**
 * The definition checker's warm(): a serving process that fronts upstreams starts the checker's worker at start, so
 * the first sync's checks find it ready (the sync's duration paces the syncs after it: src/upstream/pool.ts). The
 * worker is seen from outside, as a thread of this process (Linux's /proc): warm() must start it, not merely resolve.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { createDefinitionChecker } from '#app/definition-budget';

const threads = (): number => Number(/^Threads:\s+(\d+)$/m.exec(readFileSync('/proc/self/status', 'utf8'))?.[1]);
const onLinux = process.platform === 'linux';

describe('the definition checker, warmed', () => {
  it.runIf(onLinux)('warm() starts the worker before any job and resolves once it is ready; a check then runs on it', async () => {
    const checker = createDefinitionChecker();
    try {
      const before = threads();
      await checker.warm();
      expect(threads()).toBeGreaterThan(before);
      const started = threads();
      await checker.warm(); // ready already: nothing more is started
      await expect(checker.check({ name: 'a.b' })).rejects.toThrow(/sideEffect: is required/); // answered by the worker
      expect(threads()).toBe(started);
    } finally {
      await checker.close();
    }
  });

  it('a closed checker is not started by warm()', async () => {
    const checker = createDefinitionChecker();
    await checker.close();
    await expect(checker.warm()).resolves.toBeUndefined();
    await expect(checker.check({})).rejects.toThrow('the definition checker is closed');
  });
});
