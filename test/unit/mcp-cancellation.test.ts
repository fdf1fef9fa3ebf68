/**
 * A tools/call's cancellation (src/mcp/cancellation.ts): callbacks run once, an undone one never runs, and the
 * AbortSignal a handler reads follows it whether it was read before or after the cancellation.
 */
import { describe, expect, it } from 'vitest';
import { Cancellation } from '#mcp/cancellation';

describe('Cancellation', () => {
  it('runs each callback once, skips undone ones, and runs late ones at once', () => {
    const c = new Cancellation();
    const seen: string[] = [];
    c.onAbort(() => seen.push('a'));
    const undo = c.onAbort(() => seen.push('b'));
    undo();
    c.abort('why');
    c.abort('again');
    c.onAbort(() => seen.push('late'));
    expect(seen).toEqual(['a', 'late']);
    expect(c.aborted).toBe(true);
  });

  it('gives an AbortSignal that follows it, read before or after', () => {
    const early = new Cancellation();
    const signal = early.signal;
    expect(signal.aborted).toBe(false);
    early.abort('stop');
    expect([signal.aborted, signal.reason]).toEqual([true, 'stop']);
    const late = new Cancellation();
    late.abort('gone');
    expect([late.signal.aborted, late.signal.reason]).toEqual([true, 'gone']);
    expect(late.signal).toBe(late.signal);
  });
});
