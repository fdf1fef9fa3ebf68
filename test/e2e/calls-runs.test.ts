/**
 * `estate calls` without a run id (SPEC §9): recent runs with run id, calls, first and last time, subject, tenant;
 * `--since`, `--tool`, `--limit`; a started call without an outcome is counted as such; bad filters are usage errors.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makePrincipal } from '#domain/access';
import type { HandlerMap } from '#handlers/types';
import { createSqliteEventStore } from '#store/sqlite-event-store';
import { aDefinition } from '../fixtures/builders.ts';
import { makeHarness } from '../fixtures/handlers/harness.ts';
import { makeTempStore, runCli, type TempStore } from './helpers.ts';

const OBJ = { type: 'object' } as never;
let tmp: TempStore;
beforeAll(async () => {
  tmp = makeTempStore('estate-runs-');
  const store = createSqliteEventStore({ path: tmp.store.slice('sqlite:'.length) });
  const handlers: HandlerMap = {
    'payments.lookup': () => ({ content: [{ type: 'text', text: 'ok' }] }),
    'payments.send': () => ({ content: [{ type: 'text', text: 'sent' }] }),
  };
  const h = await makeHarness(
    [
      aDefinition({ name: 'payments.lookup', inputSchema: OBJ, access: { classification: 'public' } }),
      aDefinition({ name: 'payments.send', handler: 'payments.send', sideEffect: 'non_idempotent', inputSchema: OBJ, access: { classification: 'public' } }),
    ],
    handlers,
    { store },
  );
  const s = h.session(makePrincipal({ tenant: 'acme', subject: 'alice' }));
  await s.initialize();
  const call = (name: string, runId: string) => s.request('tools/call', { name, arguments: {}, _meta: { 'io.estate/runId': runId } });
  await call('payments.lookup', 'run-a');
  await call('payments.lookup', 'run-a');
  await call('payments.send', 'run-b');
  // An intent whose outcome never came (the process died between the two commits).
  await h.recorder.start({ callId: 'c-lost', runId: 'run-c', subject: 'bob', tenant: 'beta', tool: 'payments.send', version: '1.0.0', argsHash: 'x', at: new Date().toISOString() });
  await store.close();
});
afterAll(() => tmp?.cleanup());

const runs = async (...args: string[]) => {
  const r = await runCli(['calls', '--json', '--store', tmp.store, ...args]);
  expect(r.code, r.stderr).toBe(0);
  return (JSON.parse(r.stdout) as { runs: { runId: string; calls: number; unfinished: number; subject: string; tenant: string; first: string; last: string }[] }).runs;
};

describe('estate calls (no run id)', () => {
  it('lists runs newest first with calls, times, subject and tenant; started-only calls are shown as unfinished', async () => {
    const all = await runs();
    expect(all.map((r) => r.runId)).toEqual(['run-c', 'run-b', 'run-a']);
    expect(all.find((r) => r.runId === 'run-a')).toMatchObject({ calls: 2, unfinished: 0, subject: 'alice', tenant: 'acme' });
    expect(all.find((r) => r.runId === 'run-b')).toMatchObject({ calls: 1, unfinished: 0 });
    expect(all.find((r) => r.runId === 'run-c')).toMatchObject({ calls: 0, unfinished: 1, subject: 'bob', tenant: 'beta' });
    const a = all.find((r) => r.runId === 'run-a');
    expect(a && a.first <= a.last).toBe(true);
    const text = await runCli(['calls', '--store', tmp.store]);
    expect(text.stdout).toContain('run-c  0 calls + 1 started without outcome');
  });

  it('filters by tool, since and limit', async () => {
    expect((await runs('--tool', 'payments.lookup')).map((r) => r.runId)).toEqual(['run-a']);
    expect((await runs('--limit', '1')).map((r) => r.runId)).toEqual(['run-c']);
    expect(await runs('--since', '2999-01-01T00:00:00Z')).toEqual([]);
  });

  it.each([
    ['a zero limit', ['--limit', '0'], /--limit "0" is not a whole number/],
    ['a word for a limit', ['--limit', 'ten'], /--limit "ten" is not a whole number/],
    ['a non-ISO time', ['--since', 'yesterday'], /--since "yesterday" is not an ISO-8601 time/],
    ['a 5,000-character time (bounded message)', ['--since', 'x'.repeat(5000)], /--since "x{40}" is not/],
  ])('refuses %s with a usage error', async (_label, args, message) => {
    const r = await runCli(['calls', '--store', tmp.store, ...args]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(message);
  });
});
