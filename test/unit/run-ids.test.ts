/**
 * Issue 9, Medium 4: run ids are validated (a documented alphabet and a length bound, else -32602 `Invalid run id`)
 * and a run belongs to its owner (tenant and subject): a caller naming another owner's run id writes to a run of its
 * own, and no answer differs with whether that other run exists.
 */
import { describe, expect, it } from 'vitest';
import { readRunStreams } from '#app/call-recorder';
import { decodeToolCalled } from '#app/event-codec';
import { makePrincipal } from '#domain/access';
import { aDefinition } from '../fixtures/builders.ts';
import { errorOf, makeHarness, resultOf } from '../fixtures/handlers/harness.ts';

const echo = aDefinition({ name: 'test.echo', handler: 'test.echo', inputSchema: { type: 'object' }, access: { requiredScopes: [], tenants: [], classification: 'public' } });
const handlers = { 'test.echo': () => ({ content: [{ type: 'text' as const, text: 'ok' }] }) };
const acme = makePrincipal({ tenant: 'acme', subject: 'alice' });
const globex = makePrincipal({ tenant: 'globex', subject: 'mallory' });

const callWith = (runId: unknown) => ({ name: 'test.echo', arguments: {}, _meta: { 'io.estate/runId': runId } });

describe('run ids', () => {
  it.each([
    ['900 KB', 'r'.repeat(900 * 1024)],
    ['129 characters', `r${'x'.repeat(128)}`],
    ['empty', ''],
    ['starting with a dot', '.run'],
    ['a slash', 'run/1'],
    ['a space', 'run 1'],
    ['an at sign', 'run@1'],
    ['a NUL', 'run\u00001'],
    ['non-ASCII', 'rün'],
    ['a number', 42],
    ['null', null],
  ])('%s: -32602 Invalid run id, with a bounded message, nothing runs or is recorded', async (_why, runId) => {
    let ran = 0;
    const h = await makeHarness([echo], { 'test.echo': () => (ran++, { content: [] }) });
    const s = h.session(acme);
    await s.initialize();
    const e = errorOf(await s.request('tools/call', callWith(runId)));
    expect(e.code).toBe(-32602);
    expect(e.message).toMatch(/^Invalid run id: /);
    expect(e.message.length).toBeLessThan(200);
    expect(ran).toBe(0);
    await h.recorder.flush();
  });

  it.each(['a', 'R1', `a${'x'.repeat(127)}`, 'run-2026.01:batch_7', '0'])('%s is a valid run id', async (runId) => {
    const h = await makeHarness([echo], handlers);
    const s = h.session(acme);
    await s.initialize();
    const r = resultOf(await s.request('tools/call', callWith(runId)));
    expect((r._meta as Record<string, unknown>)['io.estate/runId']).toBe(runId);
    expect(await h.calls(runId)).toHaveLength(1);
  });

  it("another tenant naming acme's run id gets a run of its own: acme's run holds only acme's records", async () => {
    const h = await makeHarness([echo], handlers);
    const alice = h.session(acme);
    await alice.initialize();
    resultOf(await alice.request('tools/call', callWith('acme-run-1')));

    const mallory = h.session(globex);
    await mallory.initialize();
    const into = resultOf(await mallory.request('tools/call', callWith('acme-run-1')));
    const fresh = resultOf(await mallory.request('tools/call', callWith('never-used-1')));
    // The same answer whether or not another owner's run of that id exists (only the echoed id differs).
    expect({ ...into, _meta: { ...(into._meta as object), 'io.estate/runId': 'x' } }).toEqual({ ...fresh, _meta: { ...(fresh._meta as object), 'io.estate/runId': 'x' } });

    const runs = (await readRunStreams(h.store, 'acme-run-1')).map((events) => events.map((e) => decodeToolCalled(e).data));
    expect(runs).toHaveLength(2);
    const owners = runs.map((r) => [...new Set(r.map((c) => `${c.tenant}/${c.subject}`))]);
    expect(owners.sort()).toEqual([['acme/alice'], ['globex/mallory']]);
  });

  it('the same subject in another tenant is another owner', async () => {
    const h = await makeHarness([echo], handlers);
    for (const p of [makePrincipal({ tenant: 'acme', subject: 'bob' }), makePrincipal({ tenant: 'globex', subject: 'bob' })]) {
      const s = h.session(p);
      await s.initialize();
      resultOf(await s.request('tools/call', callWith('shared')));
    }
    expect(await readRunStreams(h.store, 'shared')).toHaveLength(2);
  });

  it('a run is read from its own streams where the store finds streams by id, not from the log past every other event', async () => {
    const h = await makeHarness([echo], handlers);
    for (const p of [acme, globex]) {
      const s = h.session(p);
      await s.initialize();
      for (const run of ['mine', 'other-1', 'other-2', 'mine']) resultOf(await s.request('tools/call', callWith(run)));
    }
    let logReads = 0;
    const counted = Object.create(h.store) as typeof h.store;
    counted.readAll = async (o) => (logReads++, h.store.readAll(o));
    counted.readAllPage = async (o) => (logReads++, h.store.readAllPage!(o));
    const byIds = await readRunStreams(counted, 'mine');
    expect(logReads).toBe(0);
    expect(byIds.map((events) => events.length)).toEqual([2, 2]);
    // A store without `streamIds` (KurrentDB) reads the log under the prefix, and finds the same.
    Object.defineProperty(counted, 'streamIds', { value: undefined });
    expect(await readRunStreams(counted, 'mine')).toEqual(byIds);
    expect(logReads).toBeGreaterThan(0);
  });
});
