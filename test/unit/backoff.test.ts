/** The one backoff rule shared by the relay's publish retry and an upstream child's restart (src/app/backoff.ts). */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { exponentialBackoff } from '#app/backoff';

describe('exponentialBackoff', () => {
  it("doubles from the first delay up to the cap: the relay's and the upstream restart's schedules", () => {
    const relay = exponentialBackoff({ initialMs: 200, maxMs: 5000 });
    expect([1, 2, 3, 4, 5, 6, 7].map(relay)).toEqual([200, 400, 800, 1600, 3200, 5000, 5000]);
    const restart = exponentialBackoff({ initialMs: 100, maxMs: 10_000 });
    expect([1, 2, 8, 9].map(restart)).toEqual([100, 200, 10_000, 10_000]);
  });

  it('property: never below the first delay nor above the cap, never decreasing, whatever the retry count', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 1000 }), fc.integer({ min: 0, max: 100_000 }), fc.integer({ min: -5, max: 5000 }), (initialMs, extra, retry) => {
        const delay = exponentialBackoff({ initialMs, maxMs: initialMs + extra });
        const d = delay(retry);
        expect(d).toBeGreaterThanOrEqual(initialMs);
        expect(d).toBeLessThanOrEqual(initialMs + extra);
        expect(delay(retry + 1)).toBeGreaterThanOrEqual(d);
        expect(Number.isFinite(d)).toBe(true);
      }),
    );
  });
});
