/**
 * The circuit breaker per upstream (SPEC §7): after `threshold` consecutive failures the upstream is down for
 * `downMs` (calls fail fast, nothing is sent), then ONE probe call decides: success closes it, failure opens it again.
 */
export interface BreakerOptions {
  threshold?: number;
  downMs?: number;
  now?: () => number;
}

export class CircuitBreaker {
  private failures = 0;
  private downUntil = 0;
  private probing = false;
  private readonly threshold: number;
  private readonly downMs: number;
  private readonly now: () => number;

  constructor(o: BreakerOptions = {}) {
    this.threshold = o.threshold ?? 5;
    this.downMs = o.downMs ?? 30_000;
    this.now = o.now ?? Date.now;
  }

  /** 'up' | 'down' (failing fast) | 'probing' (the one call that decides is out). */
  get state(): 'up' | 'down' | 'probing' {
    if (this.probing) return 'probing';
    return this.downUntil > 0 ? 'down' : 'up';
  }

  /** Whether a call may go out now; the first call after the down period becomes the probe. */
  admit(): boolean {
    if (this.downUntil === 0) return true;
    if (this.probing || this.now() < this.downUntil) return false;
    this.probing = true;
    return true;
  }

  success(): void {
    this.failures = 0;
    this.downUntil = 0;
    this.probing = false;
  }

  /** The call ended without telling (cancelled by its caller): a probe slot is given back. */
  abandon(): void {
    this.probing = false;
  }

  failure(): void {
    this.failures++;
    if (this.probing || this.failures >= this.threshold) {
      this.downUntil = this.now() + this.downMs;
      this.probing = false;
    }
  }
}
