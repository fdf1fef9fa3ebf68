/**
 * What repair may write into a call record and an answer's `_meta`: at most 100 changes, each naming a path of at most
 * 1,000 characters, 16,384 in all. A dropped property is named by the caller's own key, so 50,000 junk properties (or one with a
 * 500 KB name) made each call record as large as its body; past either bound the call is refused as invalid
 * arguments, nothing runs, nothing is recorded, and the refusal does not echo the paths back.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { makePrincipal } from '#domain/access';
import { MAX_REPAIR_CHARS, MAX_REPAIR_PATH_CHARS, MAX_REPAIRS } from '#mcp/tool-call/admit';
import { makeCountingHarness, resultOf, textOf, type Harness, type TestSession } from '../fixtures/handlers/harness.ts';

let h: Harness;
let s: TestSession;
let ran: () => number;
beforeAll(async () => {
  ({ h, ran } = await makeCountingHarness());
  s = h.session(makePrincipal({ subject: 'repairs' }));
  await s.initialize();
});

/** `extra` properties the schema does not declare (each dropped), beside a valid reference; include_legs is defaulted. */
const withJunk = (extra: number, name = (i: number) => `junk_${i}`): Record<string, unknown> => ({
  reference: 'PMT-100',
  ...Object.fromEntries(Array.from({ length: extra }, (_, i) => [name(i), i])),
});
const call = (args: Record<string, unknown>, runId: string) => s.request('tools/call', { name: 'payments.lookup', arguments: args, _meta: { 'io.estate/runId': runId } });

describe('repairs per call', () => {
  it('at the bound (99 dropped and one default): the call runs and its record names all 100', async () => {
    const r = resultOf(await call(withJunk(MAX_REPAIRS - 1), 'run-rep-at'));
    expect(r.isError).toBeUndefined();
    expect((r._meta as Record<string, unknown[]>)['io.estate/repairs']).toHaveLength(MAX_REPAIRS);
    await h.recorder.flush();
    expect((await h.calls('run-rep-at'))[0]?.repairs).toHaveLength(MAX_REPAIRS);
  });

  it('past it: refused as invalid arguments, nothing runs, nothing is recorded, no paths echoed', async () => {
    const before = ran();
    const r = resultOf(await call(withJunk(50_000), 'run-rep-many'));
    expect(r.isError).toBe(true);
    expect(textOf(r)).toBe('$: arguments need 50001 repairs (at most 100 are made): send only the properties the schema declares');
    expect(JSON.stringify(r).length).toBeLessThan(1000);
    expect(ran()).toBe(before);
    await h.recorder.flush();
    expect(await h.calls('run-rep-many')).toEqual([]);
  });

  it('a dropped property whose name is longer than 1,000 characters: refused the same way', async () => {
    const before = ran();
    const r = resultOf(await call(withJunk(1, () => 'k'.repeat(500_000)), 'run-rep-long'));
    expect(r.isError).toBe(true);
    expect(textOf(r)).toBe(`$: a repair would name a path of ${500_002} characters (at most ${MAX_REPAIR_PATH_CHARS}): send only the properties the schema declares`);
    expect(JSON.stringify(r).length).toBeLessThan(1000);
    expect(ran()).toBe(before);
    // A name of 998 characters (a path of 1,000 with its `$.`) is named whole.
    const ok = resultOf(await call(withJunk(1, () => 'k'.repeat(MAX_REPAIR_PATH_CHARS - 2)), 'run-rep-998'));
    expect(ok.isError).toBeUndefined();
    expect((ok._meta as Record<string, { path: string }[]>)['io.estate/repairs']?.map((x) => x.path.length)).toContain(MAX_REPAIR_PATH_CHARS);
  });

  it('paths of more than 16,384 characters in all: refused the same way, though each is short enough', async () => {
    const before = ran();
    // 20 names of 900 characters: 18,000 in all, each within 1,000, 21 changes with the default.
    const r = resultOf(await call(withJunk(20, (i) => `k${String(i).padStart(2, '0')}${'k'.repeat(897)}`), 'run-rep-total'));
    expect(r.isError).toBe(true);
    expect(textOf(r)).toBe(`$: the repairs would name paths of ${20 * 902 + '$.include_legs'.length} characters in all (at most ${MAX_REPAIR_CHARS}): send only the properties the schema declares`);
    expect(ran()).toBe(before);
    await h.recorder.flush();
    expect(await h.calls('run-rep-total')).toEqual([]);
  });
});
