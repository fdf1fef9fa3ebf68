/** How far a serving process's heap may grow between full collections (src/ops/heap-policy.ts), and its setting. */
import { describe, expect, it } from 'vitest';
import { loadConfig } from '#config';
import { DEFAULT_HEAP_GROWING_PERCENT, heapGrowingFlag } from '#ops/heap-policy';

describe('heap policy', () => {
  it('sets the growing percent; 0 leaves V8 its own; a flag given at start wins', () => {
    expect(heapGrowingFlag(20, [])).toBe('--heap-growing-percent=20');
    expect(heapGrowingFlag(20, ['--max-old-space-size=384'])).toBe('--heap-growing-percent=20');
    expect(heapGrowingFlag(0, [])).toBeNull();
    expect(heapGrowingFlag(20, ['--heap-growing-percent=50'])).toBeNull();
    expect(heapGrowingFlag(20, ['--heap_growing_percent=50'])).toBeNull();
  });

  it('is ESTATE_HEAP_GROWING_PERCENT, 20 by default, refused with a clear error outside 0..1000', () => {
    expect(loadConfig({}, {}).heapGrowingPercent).toBe(DEFAULT_HEAP_GROWING_PERCENT);
    expect(loadConfig({}, { ESTATE_HEAP_GROWING_PERCENT: '0' }).heapGrowingPercent).toBe(0);
    expect(loadConfig({}, { ESTATE_HEAP_GROWING_PERCENT: '35' }).heapGrowingPercent).toBe(35);
    for (const bad of ['-1', '1001', '2.5', 'lots']) {
      expect(() => loadConfig({}, { ESTATE_HEAP_GROWING_PERCENT: bad })).toThrow(/ESTATE_HEAP_GROWING_PERCENT must be a whole number from 0 to 1000/);
    }
  });
});
