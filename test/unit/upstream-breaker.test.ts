/** The circuit breaker per upstream: 5 consecutive failures → down for 30 s (fail fast), then one probe decides. */
import { describe, expect, it } from 'vitest';
import { CircuitBreaker } from '#upstream/breaker';

describe('circuit breaker', () => {
  it('opens after 5 consecutive failures, fails fast for 30 s, then admits exactly one probe', () => {
    let now = 1_000;
    const b = new CircuitBreaker({ now: () => now });
    for (let i = 0; i < 4; i++) {
      expect(b.admit()).toBe(true);
      b.failure();
    }
    b.success(); // a success resets the count: failures must be consecutive
    for (let i = 0; i < 5; i++) {
      expect(b.admit()).toBe(true);
      b.failure();
    }
    expect(b.state).toBe('down');
    expect(b.admit()).toBe(false);
    now += 29_999;
    expect(b.admit()).toBe(false);
    now += 1;
    expect(b.admit()).toBe(true); // the probe
    expect(b.admit()).toBe(false); // only one
    b.failure(); // the probe failed: down again for 30 s
    expect(b.admit()).toBe(false);
    now += 30_000;
    expect(b.admit()).toBe(true);
    b.success();
    expect(b.state).toBe('up');
    expect(b.admit()).toBe(true);
  });

  it('gives the probe slot back when the probing call was cancelled', () => {
    let now = 0;
    const b = new CircuitBreaker({ now: () => now, threshold: 1, downMs: 10 });
    b.failure();
    now = 10;
    expect(b.admit()).toBe(true);
    b.abandon();
    expect(b.admit()).toBe(true);
  });
});
