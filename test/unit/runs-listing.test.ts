/**
 * `estate calls` without a run id lists runs newest latest call first (src/app/runs.ts). Call times are ISO strings
 * to the millisecond, and two calls often share one: those runs are ordered as their calls were written. One run read
 * for the console keeps only its newest calls, and says how many came before.
 */
import { describe, expect, it } from 'vitest';
import { readRun } from '#app/runs';
import { listRuns } from '#app/runs-index';
import { runPage } from '#console/run-pages';
import { runStream } from '#domain/events';
import { createMemoryEventStore } from '#store/memory-event-store';

const called = (runId: string, at: string, callId: string) => ({
  type: 'ToolCalled',
  data: { callId, runId, subject: 'alice', tenant: 'acme', tool: 'payments.lookup', version: '1.0.0', at, outcome: 'ok' },
});

describe('listRuns', () => {
  it('orders runs whose latest calls share a millisecond by the order they were written, newest first', async () => {
    const store = createMemoryEventStore();
    const owner = { subject: 'alice', tenant: 'acme' };
    const same = '2026-12-01T07:00:00.123Z';
    await store.append(runStream('run-a', owner), [called('run-a', '2026-12-01T07:00:00.100Z', 'c1')], { expectedRevision: 'any' });
    await store.append(runStream('run-b', owner), [called('run-b', same, 'c2')], { expectedRevision: 'any' });
    await store.append(runStream('run-a', owner), [called('run-a', same, 'c3')], { expectedRevision: 'any' });
    await store.append(runStream('run-c', owner), [called('run-c', '2026-12-01T07:00:00.001Z', 'c4')], { expectedRevision: 'any' });
    expect((await listRuns(store)).map((r) => r.runId)).toEqual(['run-a', 'run-b', 'run-c']);
    await store.append(runStream('run-b', owner), [called('run-b', same, 'c5')], { expectedRevision: 'any' });
    expect((await listRuns(store)).map((r) => [r.runId, r.calls])).toEqual([['run-b', 2], ['run-a', 2], ['run-c', 1]]);
    expect(Object.keys((await listRuns(store))[0] ?? {}).sort()).toEqual(['calls', 'first', 'last', 'runId', 'subject', 'tenant', 'tools', 'unfinished']);
  });
});

describe('readRun with newest', () => {
  const owner = { subject: 'alice', tenant: 'acme' };
  const at = (i: number) => new Date(Date.UTC(2026, 11, 1) + i * 1000).toISOString();
  const base = { runId: 'long', ...owner, tool: 'payments.lookup', version: '1.0.0' };
  const called = (i: number, callId?: string) => ({
    type: 'ToolCalled',
    data: { ...base, ...(callId ? { callId } : {}), schemaHash: 'h'.repeat(64), argsHash: `a${i}`, repaired: false, outcome: 'ok', durationMs: 1, at: at(i), attempts: 1, protocolVersion: '2025-11-25', client: { name: 't', version: '1' }, repairs: [] },
  });
  const started = (i: number, callId: string) => ({ type: 'ToolCallStarted', data: { ...base, callId, argsHash: `a${i}`, at: at(i) } });

  it("keeps an owner's newest calls, the same as the tail of the whole run, and counts the earlier ones", async () => {
    const store = createMemoryEventStore();
    // 2,500 calls: every third a non_idempotent one (intent, then outcome), every hundredth from 50 an intent alone.
    const events = [];
    for (let i = 0; i < 2500; i++) {
      if (i % 100 === 50) events.push(started(i, `c${i}`));
      else if (i % 3 === 0) events.push(started(i, `c${i}`), called(i, `c${i}`));
      else events.push(called(i));
    }
    for (let k = 0; k < events.length; k += 100) await store.append(runStream('long', owner), events.slice(k, k + 100), { expectedRevision: 'any' });

    // The listing counts the same run: outcomes on record, and the 25 intents without one.
    expect((await listRuns(store)).map((r) => [r.runId, r.calls, r.unfinished])).toEqual([['long', 2475, 25]]);
    const [whole] = await readRun(store, 'long');
    expect(whole?.calls).toHaveLength(2500);
    expect(whole?.earlier).toBe(0);
    const [tail] = await readRun(store, 'long', { newest: 1000 });
    expect(tail?.calls).toEqual(whole?.calls.slice(-1000));
    expect(tail?.earlier).toBe(1500);
    expect(tail?.owner).toEqual(owner);
    const [last] = await readRun(store, 'long', { newest: 1 });
    expect(last?.calls.map((c) => c.argsHash)).toEqual(['a2499']);
    expect(last?.earlier).toBe(2499);

    expect(String(runPage('long', [tail as NonNullable<typeof tail>]))).toContain('The newest 1000 calls are shown; 1500 earlier ones are not. <code>estate calls long</code> lists every one.');
    expect(String(runPage('long', [whole as NonNullable<typeof whole>]))).not.toContain('earlier ones');
  });
});
