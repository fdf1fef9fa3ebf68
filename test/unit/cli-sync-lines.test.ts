/** What `estate upstream sync` prints (src/cli/output.ts): every kind of outcome named, the deferred ones with when. */
import { describe, expect, it } from 'vitest';
import { syncLines } from '#cli/output';

const empty = { ns: 'fx', listed: 3, drift: [], refused: [], vanished: [], deferred: [], deferredUntil: {}, autoApproved: [], protocolVersion: '2025-11-25' };

describe('syncLines', () => {
  it('says nothing of deferral when nothing waits', () => {
    expect(syncLines('fx', empty)).toEqual(['fx: 3 tools listed (2025-11-25); 0 new drift, 0 refused, 0 vanished']);
  });

  it('names the changes a window held back and when a sync records them, the first ten and how many more', () => {
    const deferred = Array.from({ length: 12 }, (_, i) => `fx.t${i}`);
    const lines = syncLines('fx', { ...empty, deferred, retryAt: '2026-12-01T00:10:00.000Z' });
    expect(lines[1]).toBe(
      '  not recorded yet, past what one change window records (a sync from 2026-12-01T00:10:00.000Z records them): fx.t0, fx.t1, fx.t2, fx.t3, fx.t4, fx.t5, fx.t6, fx.t7, fx.t8, fx.t9 and 2 more',
    );
  });
});
