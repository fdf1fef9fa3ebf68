/**
 * `estate calls` without a run id lists runs newest latest call first (src/app/runs.ts). Call times are ISO strings
 * to the millisecond, and two calls often share one: those runs are ordered as their calls were written.
 */
import { describe, expect, it } from 'vitest';
import { listRuns } from '#app/runs';
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
