/**
 * Group commit: calls that arrive while a commit is in flight go into ONE appendMany; each caller resolves only
 * after its own record's commit; a failed commit rejects exactly the calls in it.
 */
import { describe, expect, it } from 'vitest';
import { createCallRecorder, type CallRecord } from '#app/call-recorder';
import type { AppendRequest, AppendResult, EventStore } from '#app/ports';
import { runStream } from '#domain/events';

const OWNER = { tenant: 't', subject: 's' };

const aCall = (runId: string, n: number): CallRecord => ({
  runId,
  subject: 's',
  tenant: 't',
  client: null,
  protocolVersion: '2025-11-25',
  tool: 'payments.lookup',
  version: '1.0.0',
  schemaHash: 'h',
  argsHash: `a${n}`,
  repaired: false,
  repairs: [],
  outcome: 'ok',
  attempts: 1,
  durationMs: 1,
  at: '2026-01-01T00:00:00.000Z',
});

/** A store whose appendMany commits only when the test says so. */
const gatedStore = () => {
  const commits: AppendRequest[][] = [];
  const gates: { release(): void; fail(e: Error): void }[] = [];
  const store = {
    appendMany(requests: AppendRequest[]): Promise<AppendResult[]> {
      commits.push(requests);
      return new Promise((resolve, reject) => {
        gates.push({ release: () => resolve(requests.map(() => ({ revision: 0, positions: [] }))), fail: reject });
      });
    },
  } as unknown as EventStore;
  return { store, commits, gates };
};

const tick = () => new Promise((r) => setImmediate(r));

describe('call recorder (group commit)', () => {
  it('batches everything that waits behind an in-flight commit into one appendMany', async () => {
    const { store, commits, gates } = gatedStore();
    const rec = createCallRecorder(store);
    const done: number[] = [];
    const first = rec.record(aCall('r1', 0)).then(() => done.push(0));
    await tick();
    expect(commits).toHaveLength(1);
    const rest = Array.from({ length: 50 }, (_, i) => rec.record(aCall(i % 2 ? 'r1' : 'r2', i + 1)).then(() => done.push(i + 1)));
    await tick();
    expect(commits).toHaveLength(1); // still waiting on the first commit
    gates[0]?.release();
    await first;
    await tick();
    expect(commits).toHaveLength(2);
    expect(done).toEqual([0]); // the 50 are not acknowledged before their own commit
    const second = commits[1] as AppendRequest[];
    expect(second.map((r) => r.streamId).sort()).toEqual([runStream('r1', OWNER), runStream('r2', OWNER)].sort());
    expect(second.reduce((n, r) => n + r.events.length, 0)).toBe(50);
    // records of one run keep arrival order inside the batch
    const r1 = second.find((r) => r.streamId === runStream('r1', OWNER))?.events.map((e) => (e.data as CallRecord).argsHash);
    expect(r1).toEqual(Array.from({ length: 25 }, (_, i) => `a${2 * i + 2}`));
    gates[1]?.release();
    await Promise.all(rest);
    expect(done).toHaveLength(51);
  });

  it('a failed commit rejects the calls in it, and later calls still commit', async () => {
    const { store, commits, gates } = gatedStore();
    const rec = createCallRecorder(store);
    const a = rec.record(aCall('r', 1));
    const b = rec.record(aCall('r', 2));
    await tick();
    expect(commits).toHaveLength(1);
    gates[0]?.fail(new Error('disk full'));
    await expect(a).rejects.toThrow('disk full');
    await expect(b).rejects.toThrow('disk full');
    const c = rec.record(aCall('r', 3));
    await tick();
    gates[1]?.release();
    await expect(c).resolves.toBeUndefined();
    expect(commits).toHaveLength(2);
  });

  it('respects maxBatch', async () => {
    const { store, commits, gates } = gatedStore();
    const rec = createCallRecorder(store, { maxBatch: 3 });
    const all = Array.from({ length: 7 }, (_, i) => rec.record(aCall('r', i)));
    for (let i = 0; i < 3; i++) {
      await tick();
      gates[i]?.release();
      await tick();
    }
    await Promise.all(all);
    expect(commits.map((c) => c[0]?.events.length)).toEqual([3, 3, 1]);
  });
});
