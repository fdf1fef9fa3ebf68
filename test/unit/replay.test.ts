/**
 * Event sourcing's promise: replaying the log rebuilds identical read models, and "as of" a position shows the
 * catalogue as it was then. Runs the real command handler on the in-memory store.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CatalogueReader } from '#app/catalogue-reader';
import { CommandHandler } from '#app/command-handler';
import { replayAsOf } from '#app/replay';
import { makePrincipal } from '#domain/access';
import { DomainError } from '#domain/errors';
import { CLASSIFICATIONS } from '#domain/types';
import { createMemoryEventStore } from '#store/memory-event-store';
import type { CatalogueProjection } from '#projections/catalogue';
import { aDefinition } from '../fixtures/builders.ts';

const snapshot = (c: CatalogueProjection) =>
  c.names().map((n) => ({ name: n, versions: c.versions(n).map((v) => ({ v: v.version, s: v.status, d: v.deprecated?.reason, r: v.retired?.reason, h: v.details?.definitionHash })) }));

const command = fc.oneof(
  fc.record({
    kind: fc.constant('publish' as const),
    name: fc.constantFrom('a.one', 'b.two', 'c.three'),
    major: fc.integer({ min: 1, max: 2 }),
    minor: fc.integer({ min: 0, max: 3 }),
    scopes: fc.subarray(['x', 'y']),
    classification: fc.constantFrom(...CLASSIFICATIONS),
    tenants: fc.subarray(['acme', 'globex']),
  }),
  fc.record({ kind: fc.constantFrom('deprecate' as const, 'retire' as const), name: fc.constantFrom('a.one', 'b.two', 'c.three'), major: fc.integer({ min: 1, max: 2 }), minor: fc.integer({ min: 0, max: 3 }) }),
);

describe('replay', () => {
  it('property: a read model folded live equals one rebuilt from the log, for the catalogue and every discovery view', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(command, { maxLength: 25 }), async (commands) => {
        const store = createMemoryEventStore();
        const handler = new CommandHandler({ store });
        const live = new CatalogueReader(store);
        const principals = [makePrincipal({ tenant: 'acme', scopes: ['x'], clearance: 'restricted' }), makePrincipal({ tenant: 'globex', scopes: ['x', 'y'], clearance: 'internal' })];
        for (const p of principals) live.discovery.view(p);
        const sub = live.follow();
        for (const c of commands) {
          const version = `${c.major}.${c.minor}.0`;
          try {
            if (c.kind === 'publish') {
              await handler.publish(aDefinition({ name: c.name, version, access: { requiredScopes: c.scopes, classification: c.classification, tenants: c.tenants } }), 't');
            } else if (c.kind === 'deprecate') await handler.deprecate(c.name, version, 'r', 't');
            else await handler.retire(c.name, version, 'r', 't');
          } catch (e) {
            if (!(e instanceof DomainError)) throw e; // refusals are part of life; anything else is a bug
          }
        }
        await live.catchUp();
        await sub.close();
        const rebuilt = new CatalogueReader(store);
        await rebuilt.catchUp();
        expect(snapshot(rebuilt.catalogue)).toEqual(snapshot(live.catalogue));
        expect(rebuilt.catalogue.position).toBe(live.catalogue.position);
        for (const p of principals) {
          expect(rebuilt.discovery.view(p).entries.map((v) => `${v.name}@${v.version}`)).toEqual(live.discovery.view(p).entries.map((v) => `${v.name}@${v.version}`));
        }
        await store.close();
      }),
      { numRuns: 60 },
    );
  });

  it('as of a position shows the catalogue as it was then; an unknown position is not-found', async () => {
    const store = createMemoryEventStore();
    const handler = new CommandHandler({ store });
    const first = await handler.publish(aDefinition({ version: '1.0.0' }), 't');
    await handler.publish(aDefinition({ version: '1.0.1', description: 'clearer' }), 't');
    await handler.deprecate('payments.lookup', '1.0.1', 'wrong words', 't');
    const then = await replayAsOf(store, { position: first.position as string });
    expect(then.versions('payments.lookup').map((v) => [v.version, v.status])).toEqual([['1.0.0', 'active']]);
    const now = await replayAsOf(store, { time: new Date(Date.now() + 60_000).toISOString() });
    expect(now.versions('payments.lookup').map((v) => [v.version, v.status])).toEqual([['1.0.0', 'active'], ['1.0.1', 'deprecated']]);
    const before = await replayAsOf(store, { time: '2000-01-01T00:00:00.000Z' });
    expect(before.size).toBe(0);
    await expect(replayAsOf(store, { position: '999999' })).rejects.toThrow(/no catalogue event at position/);
  });

  it('as of a time: an event recorded later is left out, however its time is written', async () => {
    const source = createMemoryEventStore();
    const handler = new CommandHandler({ store: source });
    await handler.publish(aDefinition({ version: '1.0.0' }), 't');
    await handler.publish(aDefinition({ version: '1.0.1', description: 'clearer' }), 't');
    await handler.publish(aDefinition({ version: '1.0.2', description: 'clearest' }), 't');
    const events = await source.readStream('tool-payments.lookup');
    // As a store writes it, then two other ways to write a time: each compared as a time.
    const times = ['2026-01-01T00:00:00.000Z', '2026-01-02T00:00:00Z', '2026-01-03T00:00:00.000+00:00'];
    const store = createMemoryEventStore();
    for (const [i, e] of events.entries()) {
      await store.append('tool-payments.lookup', [{ type: e.type, data: e.data, recordedAt: times[i] as string }], { expectedRevision: i === 0 ? 'no_stream' : i - 1 });
    }
    const versionsAsOf = async (time: string) => (await replayAsOf(store, { time })).versions('payments.lookup').map((v) => v.version);
    expect(await versionsAsOf('2026-01-01T12:00:00.000Z')).toEqual(['1.0.0']);
    expect(await versionsAsOf('2026-01-02T00:00:00.000Z')).toEqual(['1.0.0', '1.0.1']);
    expect(await versionsAsOf('2026-01-02T23:59:59.999Z')).toEqual(['1.0.0', '1.0.1']);
    expect(await versionsAsOf('2026-01-03T00:00:00.000Z')).toEqual(['1.0.0', '1.0.1', '1.0.2']);
    // A bound past the year 9999 is not written in 24 characters: still a time.
    expect(await versionsAsOf('+010000-01-01T00:00:00.000Z')).toEqual(['1.0.0', '1.0.1', '1.0.2']);
    expect(await versionsAsOf('1999-12-31T23:59:59.999Z')).toEqual([]);
  });
});
