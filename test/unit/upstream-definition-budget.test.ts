/**
 * Issue 9 on the upstream path: an upstream's schemas are as hostile as a publisher's. A sync checks and classifies
 * what the upstream lists in the definition checker's worker, under the schema budget, so a costly schema is refused
 * (`schema-too-costly`) instead of holding the serving thread; approving a pending candidate classifies there too.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { CommandHandler } from '#app/command-handler';
import { createDefinitionChecker } from '#app/definition-budget';
import type { JsonObject } from '#domain/types';
import { createMemoryEventStore } from '#store/memory-event-store';
import type { UpstreamTool } from '#upstream/candidate';
import { UpstreamRegistry } from '#upstream/registry';

const ACCESS = { requiredScopes: [], tenants: [], classification: 'internal' as const };
const TARGET = { transport: 'stdio' as const, command: 'node', args: ['fixture.js'], env: {} };

describe('upstream definitions under the schema budget', { timeout: 180_000 }, () => {
  // 300 ms: far above what a sane check takes on a loaded machine, far below the seconds the hostile ones take.
  const tight = createDefinitionChecker({ budgetMs: 300 });
  // 1 s for the classification case: checking its wide schema takes ~40-100 ms on a quiet machine (a cold worker: the
  // upper end), classifying the change ~4.5 s. At 300 ms a CI run beside another test suite overran the CHECK, which
  // proves nothing about the classification's budget; 1 s leaves a tenfold margin below and fourfold above.
  const forClassifying = createDefinitionChecker({ budgetMs: 1_000 });
  const generous = createDefinitionChecker({ budgetMs: 120_000 });
  afterAll(async () => {
    await tight.close();
    await forClassifying.close();
    await generous.close();
  });
  const store = createMemoryEventStore();
  const commands = new CommandHandler({ store });
  const guarded = new UpstreamRegistry({ store, commands, definitions: tight });
  const guardedClassifying = new UpstreamRegistry({ store, commands, definitions: forClassifying });
  const patient = new UpstreamRegistry({ store, commands, definitions: generous });

  it('refuses a listed tool whose patterns overrun the budget, and the event loop stays free meanwhile', async () => {
    await guarded.register('hx', TARGET, ACCESS, 'none', 'tester');
    const properties: JsonObject = {};
    for (let i = 0; i < 1000; i++) properties[`p${i}`] = { type: 'string', pattern: `^(a{1,400}b){1,2}b${i}$` };
    const tools: UpstreamTool[] = [
      { name: 'costly', description: 'x', inputSchema: { type: 'object', properties } },
      { name: 'fine', description: 'y', inputSchema: { type: 'object', properties: { a: { type: 'string' } } } },
    ];
    let ticks = 0;
    let done = false;
    const syncing = guarded.sync('hx', tools, 'tester').finally(() => (done = true));
    while (!done) {
      await new Promise((r) => setImmediate(r));
      ticks++;
    }
    const result = await syncing;
    expect(result.refused).toEqual([expect.objectContaining({ tool: 'hx.costly', code: 'schema-too-costly' })]);
    expect(result.drift.map((d) => d.tool)).toEqual(['hx.fine']);
    // Checked in this thread, 1000 such patterns take seconds with no tick at all.
    expect(ticks).toBeGreaterThan(10);
  });

  it('refuses a change whose classification against the pinned version overruns the budget, at sync and at approval', async () => {
    await patient.register('cx', TARGET, ACCESS, 'none', 'tester');
    // 500 anyOf branches with long descriptions, compared pairwise: seconds of classification.
    const branches = (v: number) => Array.from({ length: 500 }, (_, k) => ({ description: `${k}:${v}:${'d'.repeat(2000)}`, maxLength: k }));
    const tool = (v: number): UpstreamTool => ({ name: 'wide', description: 'w', inputSchema: { type: 'object', properties: { x: { anyOf: branches(v) } } } });
    await patient.sync('cx', [tool(0)], 'tester');
    expect((await patient.approveOne('cx', 'cx.wide', { by: 'tester' })).result).toBe('published');
    // The worker's first check of such a schema runs cold code: done once here, so the one below is a warm check.
    const pinned = (await commands.load('cx.wide')).state.versions.get('1.0.0');
    await forClassifying.check(pinned?.definition).catch(() => undefined);

    const refused = await guardedClassifying.sync('cx', [tool(1)], 'tester');
    expect(refused.refused).toEqual([
      expect.objectContaining({ tool: 'cx.wide', code: 'schema-too-costly', message: expect.stringMatching(/^definition: classifying the change from its baseline took longer/) }),
    ]);
    expect(refused.drift).toEqual([]);

    // Recorded by a patient sync, the approval through the guarded registry classifies in the worker and is refused.
    expect((await patient.sync('cx', [tool(1)], 'tester')).drift).toHaveLength(1);
    await expect(guardedClassifying.approveOne('cx', 'cx.wide', { by: 'tester' })).rejects.toMatchObject({ code: 'schema-too-costly' });
    expect((await commands.load('cx.wide')).state.versions.size).toBe(1);
  });
});
