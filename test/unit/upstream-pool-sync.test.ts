/**
 * An upstream's list_changed notices, as a hostile upstream may send them: without pause. They must neither starve the
 * sync (a restarted debounce would postpone it for as long as the flood lasts) nor cost a sync each.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { silentLog } from '#app/log';
import { UpstreamPool } from '#upstream/pool';
import type { UpstreamRegistry } from '#upstream/registry';

afterEach(() => {
  vi.useRealTimers();
});

describe('list_changed notices from an upstream', () => {
  it('a flood of notices is synced once per window, and the first sync is not postponed by the flood', async () => {
    vi.useFakeTimers();
    const syncs: number[] = [];
    // Every sync attempt asks the registry for the upstream; this one is gone, so each attempt ends in one warning.
    const registry = { active: () => Promise.reject(new Error('no such upstream')) } as unknown as UpstreamRegistry;
    const log = { ...silentLog, warn: (_f: object, msg?: string) => void (msg === 'upstream sync failed' && syncs.push(Date.now())) };
    const pool = new UpstreamPool({ registry, selection: 'all', env: {}, log, actor: 'test', syncIntervalMs: 0, debounceMs: 1000 });
    const start = Date.now();
    // 5 s of notices, one every 100 ms.
    for (let i = 0; i < 50; i++) {
      pool.scheduleSync('flood');
      await vi.advanceTimersByTimeAsync(100);
    }
    await vi.advanceTimersByTimeAsync(1000);
    await pool.close();
    expect(syncs.length).toBeGreaterThanOrEqual(4);
    expect(syncs.length).toBeLessThanOrEqual(6);
    // The first sync came one window after the first notice, in the middle of the flood.
    expect((syncs[0] ?? Infinity) - start).toBeLessThanOrEqual(1100);
  });

  it('a sync asked for while one runs runs once more after it (the running one may have listed before the change); many asks, one more', async () => {
    let asked = 0;
    let fail!: (e: Error) => void;
    // The first sync waits on the registry until the test lets it fail; each later one fails at once.
    const registry = {
      active: () => {
        asked++;
        return asked === 1 ? new Promise((_, reject) => (fail = reject)) : Promise.reject(new Error('no such upstream'));
      },
    } as unknown as UpstreamRegistry;
    const warned: string[] = [];
    const log = { ...silentLog, warn: (_f: object, msg?: string) => void (msg !== undefined && warned.push(msg)) };
    const pool = new UpstreamPool({ registry, selection: 'all', env: {}, log, actor: 'test', syncIntervalMs: 0 });
    const first = pool.sync('fx');
    const second = pool.sync('fx');
    const third = pool.sync('fx');
    expect(second).toBe(third);
    await new Promise((r) => setImmediate(r));
    expect(asked).toBe(1);
    fail(new Error('upstream busy'));
    await Promise.all([first, second, third]);
    expect(asked).toBe(2);
    expect(warned).toEqual(['upstream sync failed', 'upstream sync failed']);
    await pool.close();
  });
});

/** A registry each sync attempt waits 500 ms on, then fails: `started` says when each attempt began. */
const slowRegistry = () => {
  const started: number[] = [];
  const registry = {
    active: () => {
      started.push(Date.now());
      return new Promise((_, reject) => setTimeout(() => reject(new Error('gone')), 500));
    },
  } as unknown as UpstreamRegistry;
  return { registry, started };
};

describe('pacing an upstream\'s syncs', () => {
  it('a list_changed sync waits until ten times the last sync\'s duration has passed since it ended', async () => {
    vi.useFakeTimers();
    const { registry, started } = slowRegistry();
    const pool = new UpstreamPool({ registry, selection: 'all', env: {}, log: silentLog, actor: 'test', syncIntervalMs: 0, debounceMs: 1000 });
    const t0 = Date.now();
    pool.scheduleSync('busy');
    await vi.advanceTimersByTimeAsync(1500); // the first sync: started at 1 s, ended at 1.5 s
    pool.scheduleSync('busy');
    await vi.advanceTimersByTimeAsync(4000);
    expect(started.map((t) => t - t0)).toEqual([1000]); // not at 2.5 s: 1.5 s + 10 x 500 ms = 6.5 s
    await vi.advanceTimersByTimeAsync(1500);
    expect(started.map((t) => t - t0)).toEqual([1000, 6500]);
    await pool.close();
  });

  it('connecting is not the sync\'s work: a link that took 2 s to connect does not pace the next sync by 20 s', async () => {
    vi.useFakeTimers();
    const started: number[] = [];
    const registry = {
      sync: async () => {
        started.push(Date.now());
        await new Promise((r) => setTimeout(r, 100)); // the sync's own work: 100 ms
        return { ns: 'fx', listed: 0, drift: [], refused: [], vanished: [], deferred: [], deferredUntil: {}, autoApproved: [] };
      },
    } as unknown as UpstreamRegistry;
    const pool = new UpstreamPool({ registry, selection: 'all', env: {}, log: silentLog, actor: 'test', syncIntervalMs: 0, debounceMs: 1000 });
    let connected = false;
    pool.link = async () => {
      if (!connected) await new Promise((r) => setTimeout(r, 2000)); // a child's start, once
      connected = true;
      return { listTools: async () => [], describe: String } as never;
    };
    const t0 = Date.now();
    const first = pool.sync('fx');
    await vi.advanceTimersByTimeAsync(2100); // connected at 2 s, synced by 2.1 s
    await first;
    pool.scheduleSync('fx');
    await vi.advanceTimersByTimeAsync(1000);
    // 2.1 s + 10 x 100 ms = 3.1 s: the debounce's second decides (10 x 2.1 s would have waited until 23.1 s).
    expect(started.map((t) => t - t0)).toEqual([2000, 3100]);
    await vi.advanceTimersByTimeAsync(100); // let it end: close() waits for a running sync
    await pool.close();
  });

  it('the one more sync asked for while one ran is paced too; closing the pool cuts its wait short', async () => {
    vi.useFakeTimers();
    const { registry, started } = slowRegistry();
    const pool = new UpstreamPool({ registry, selection: 'all', env: {}, log: silentLog, actor: 'test', syncIntervalMs: 0 });
    const t0 = Date.now();
    const first = pool.sync('busy');
    const again = pool.sync('busy');
    await vi.advanceTimersByTimeAsync(5000);
    expect(started.map((t) => t - t0)).toEqual([0]); // ended at 0.5 s: the next from 5.5 s
    await vi.advanceTimersByTimeAsync(1000);
    expect(started.map((t) => t - t0)).toEqual([0, 5500]);
    await Promise.all([first, again]);

    const third = pool.sync('busy'); // runs 6 s .. 6.5 s
    const fourth = pool.sync('busy'); // waits for 11.5 s
    await vi.advanceTimersByTimeAsync(600);
    await pool.close(); // does not wait out the pace
    await Promise.all([third, fourth]);
    expect(started).toHaveLength(3);
  });

  it('a sync that left changes for later (retryAt) is followed by one then, the earliest asked for winning', async () => {
    vi.useFakeTimers();
    const t0 = Date.now();
    const retryAts = [t0 + 60_000, t0 + 30_000];
    let syncs = 0;
    const registry = {
      sync: async () => {
        syncs++;
        const at = retryAts.shift();
        // fx.t may be recorded from `at`, fx.u a minute later: the console shows each its own time.
        const until = at ? { 'fx.t': new Date(at).toISOString(), 'fx.u': new Date(at + 60_000).toISOString() } : {};
        return { ns: 'fx', listed: 0, drift: [], refused: [], vanished: [], deferred: Object.keys(until), deferredUntil: until, ...(at ? { retryAt: new Date(at).toISOString() } : {}), autoApproved: [] };
      },
    } as unknown as UpstreamRegistry;
    const pool = new UpstreamPool({ registry, selection: 'all', env: {}, log: silentLog, actor: 'test', syncIntervalMs: 0 });
    // The link is not what this is about: one that lists nothing.
    pool.link = async () => ({ listTools: async () => [], describe: String }) as never;
    await pool.sync('fx'); // asks for 60 s
    await pool.sync('fx'); // asks for 30 s: the earlier wins
    expect(syncs).toBe(2);
    expect(pool.changesWaiting('fx')).toBe(2); // for /metrics
    expect(pool.changeWaitingFor('fx', 'fx.t')).toBe(new Date(t0 + 30_000).toISOString()); // for the console
    expect(pool.changeWaitingFor('fx', 'fx.u')).toBe(new Date(t0 + 90_000).toISOString());
    expect(pool.changeWaitingFor('fx', 'fx.other')).toBeUndefined();
    await vi.advanceTimersByTimeAsync(30_000);
    expect(syncs).toBe(2); // a second past it
    await vi.advanceTimersByTimeAsync(1000);
    expect(syncs).toBe(3);
    expect(pool.changesWaiting('fx')).toBe(0);
    await vi.advanceTimersByTimeAsync(60_000);
    expect(syncs).toBe(3); // the later one was replaced, not kept
    await pool.close();
  });
});
