/** The catalogue projection and discovery (SPEC §2 "Lifecycle", "Discovery for a principal"; invariants 7 and 8). */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { classificationRank, isVisible, makePrincipal } from '#domain/access';
import type { CatalogueEvent } from '#domain/events';
import { CLASSIFICATIONS, type Principal } from '#domain/types';
import { CatalogueProjection } from '#projections/catalogue';
import { DiscoveryIndex, discoverNaive } from '#projections/discovery';
import { aDefinition, deprecatedEvent, publishedEvent, retiredEvent } from '../fixtures/builders.ts';

const build = (...events: CatalogueEvent[]): CatalogueProjection => {
  const c = new CatalogueProjection();
  events.forEach((event, i) => c.apply({ position: String(i + 1), event }));
  return c;
};

const reader: Principal = makePrincipal({ tenant: 'acme', scopes: ['payments.read'], clearance: 'confidential' });

describe('latest and resolve (invariant 7)', () => {
  const c = build(
    publishedEvent(aDefinition({ version: '1.0.0' })),
    publishedEvent(aDefinition({ version: '1.1.0' })),
    publishedEvent(aDefinition({ version: '2.0.0' })),
    deprecatedEvent('payments.lookup', '2.0.0', 'broken'),
    retiredEvent('payments.lookup', '1.1.0'),
  );
  it('latest after deprecating the newest is the newest ACTIVE version, skipping the retired one', () => {
    expect(c.latest('payments.lookup')?.version).toBe('1.0.0');
  });
  it('resolve returns a deprecated version with its notice, never a retired one', () => {
    expect(c.resolve('payments.lookup', '2.0.0')?.deprecated?.reason).toBe('broken');
    expect(c.resolve('payments.lookup', '1.1.0')).toBeUndefined();
    expect(c.find('payments.lookup', '1.1.0')?.status).toBe('retired');
  });
  it('versions are kept in semver order whatever the publish order', () => {
    const d = build(publishedEvent(aDefinition({ version: '1.10.0' })), publishedEvent(aDefinition({ version: '1.2.0' })), publishedEvent(aDefinition({ version: '1.9.3' })));
    expect(d.versions('payments.lookup').map((v) => v.version)).toEqual(['1.2.0', '1.9.3', '1.10.0']);
  });
  it('property: latest is never deprecated or retired; resolve is never retired', () => {
    const ops = fc.array(fc.tuple(fc.constantFrom('publish', 'deprecate', 'retire'), fc.integer({ min: 0, max: 5 })), { maxLength: 30 });
    fc.assert(
      fc.property(ops, (list) => {
        const c = new CatalogueProjection();
        let pos = 0;
        for (const [op, n] of list) {
          const version = `1.${n}.0`;
          const event = op === 'publish' ? publishedEvent(aDefinition({ version })) : op === 'deprecate' ? deprecatedEvent('payments.lookup', version) : retiredEvent('payments.lookup', version);
          c.apply({ position: String(++pos), event });
        }
        const latest = c.latest('payments.lookup');
        if (latest) expect(latest.status).toBe('active');
        for (let n = 0; n <= 5; n++) expect(c.resolve('payments.lookup', `1.${n}.0`)?.status).not.toBe('retired');
      }),
    );
  });
});

describe('access rules', () => {
  it('visible = tenant allowed AND classification <= clearance AND requiredScopes ⊆ held', () => {
    const access = { requiredScopes: ['payments.read', 'payments.pii'], tenants: ['acme'], classification: 'confidential' as const };
    expect(isVisible(access, makePrincipal({ tenant: 'acme', scopes: ['payments.read', 'payments.pii', 'x'], clearance: 'restricted' }))).toBe(true);
    expect(isVisible(access, makePrincipal({ tenant: 'acme', scopes: ['payments.read'], clearance: 'restricted' })), 'one of two scopes is not enough').toBe(false);
    expect(isVisible(access, makePrincipal({ tenant: 'globex', scopes: ['payments.read', 'payments.pii'], clearance: 'restricted' }))).toBe(false);
    expect(isVisible(access, makePrincipal({ tenant: 'acme', scopes: ['payments.read', 'payments.pii'], clearance: 'internal' }))).toBe(false);
    expect(isVisible({ ...access, tenants: [] }, makePrincipal({ tenant: 'anyone', scopes: ['payments.read', 'payments.pii'], clearance: 'confidential' })), 'no tenants = every tenant').toBe(true);
  });
  it('an unknown classification raises; it never defaults to visible', () => {
    expect(() => classificationRank('secret')).toThrow(/unknown classification 'secret'/);
    expect(() => isVisible({ requiredScopes: [], tenants: [], classification: 'secret' as never }, reader)).toThrow();
  });
  it('an unknown or missing clearance is public', () => {
    expect(makePrincipal({ clearance: 'top-secret' }).clearance).toBe('public');
    expect(makePrincipal({}).clearance).toBe('public');
    expect(makePrincipal({ clearance: null }).clearance).toBe('public');
    expect(CLASSIFICATIONS.map(classificationRank)).toEqual([0, 1, 2, 3]);
  });
});

describe('discovery (invariant 8)', () => {
  it('offers the newest VISIBLE version: 2.0.0 needs a scope the principal lacks, so 1.0.0 is offered', () => {
    const c = build(publishedEvent(aDefinition({ version: '1.0.0' })), publishedEvent(aDefinition({ version: '2.0.0', access: { requiredScopes: ['payments.admin'] } })));
    expect(discoverNaive(c, reader).map((v) => v.version)).toEqual(['1.0.0']);
    const admin = makePrincipal({ tenant: 'acme', scopes: ['payments.read', 'payments.admin'], clearance: 'confidential' });
    expect(discoverNaive(c, admin).map((v) => v.version)).toEqual(['2.0.0']);
  });
  it('retired never; deprecated only when asked, and then as the newest', () => {
    const c = build(publishedEvent(aDefinition({ version: '1.0.0' })), publishedEvent(aDefinition({ version: '1.1.0' })), deprecatedEvent('payments.lookup', '1.1.0'), retiredEvent('payments.lookup', '1.0.0'));
    expect(discoverNaive(c, reader)).toEqual([]);
    expect(discoverNaive(c, reader, true).map((v) => [v.version, v.status])).toEqual([['1.1.0', 'deprecated']]);
  });
  it('at most one version per tool, in sorted name order', () => {
    const names = ['zeta.z', 'alpha.a', 'payments.lookup', 'payments.approve', 'Beta'.toLowerCase()];
    const c = build(...names.flatMap((name) => [publishedEvent(aDefinition({ name, version: '1.0.0' })), publishedEvent(aDefinition({ name, version: '1.0.1' }))]));
    const out = discoverNaive(c, reader);
    expect(out.map((v) => v.name)).toEqual([...names].sort());
    expect(out.every((v) => v.version === '1.0.1')).toBe(true);
  });
  it('a version this process cannot serve (handler not bound) is not offered; the next visible one is', () => {
    const c = build(publishedEvent(aDefinition({ version: '1.0.0' })), publishedEvent(aDefinition({ version: '1.1.0', handler: 'unbound' })));
    const idx = new DiscoveryIndex(c, { isOffered: (v) => v.handler !== 'unbound' });
    expect(idx.view(reader).entries.map((v) => v.version)).toEqual(['1.0.0']);
  });
});

describe('precomputed views stay equal to the per-request filter, maintained incrementally', () => {
  const tenants = ['acme', 'globex'];
  const scopes = ['a', 'b', 'c'];
  const principals = fc.record({ tenant: fc.constantFrom(...tenants), scopes: fc.subarray(scopes), clearance: fc.constantFrom(...CLASSIFICATIONS) }).map(makePrincipal);
  const event = fc.oneof(
    fc.record({
      name: fc.constantFrom('t.a', 't.b', 't.c', 't.d'),
      n: fc.integer({ min: 0, max: 4 }),
      tenants: fc.subarray(tenants),
      requiredScopes: fc.subarray(scopes),
      classification: fc.constantFrom(...CLASSIFICATIONS),
    }).map((r) => publishedEvent(aDefinition({ name: r.name, version: `1.${r.n}.0`, access: { tenants: r.tenants, requiredScopes: r.requiredScopes, classification: r.classification } }))),
    fc.record({ name: fc.constantFrom('t.a', 't.b', 't.c', 't.d'), n: fc.integer({ min: 0, max: 4 }), retire: fc.boolean() }).map((r) =>
      r.retire ? retiredEvent(r.name, `1.${r.n}.0`) : deprecatedEvent(r.name, `1.${r.n}.0`),
    ),
  );
  it('property: after any sequence of events, every cached view equals discoverNaive, and a view whose content changed got a new revision', () => {
    fc.assert(
      fc.property(fc.array(principals, { minLength: 1, maxLength: 5 }), fc.array(event, { maxLength: 40 }), fc.boolean(), (ps, events, includeDeprecated) => {
        const c = new CatalogueProjection();
        const idx = new DiscoveryIndex(c);
        for (const p of ps) idx.view(p, includeDeprecated); // build views up front, then maintain them
        events.forEach((e, i) => {
          const before = ps.map((p) => ({ rev: idx.view(p, includeDeprecated).revision, entries: [...idx.view(p, includeDeprecated).entries] }));
          const name = c.apply({ position: String(i + 1), event: e });
          idx.toolChanged(name);
          ps.forEach((p, j) => {
            const v = idx.view(p, includeDeprecated);
            const fresh = discoverNaive(c, p, includeDeprecated);
            expect(v.entries).toEqual(fresh);
            const changed = JSON.stringify(before[j]?.entries.map((x) => [x.name, x.version, x.status])) !== JSON.stringify(fresh.map((x) => [x.name, x.version, x.status]));
            if (changed) expect(v.revision).not.toBe(before[j]?.rev);
            else expect(v.revision).toBe(before[j]?.rev);
          });
        });
      }),
      { numRuns: 200 },
    );
  });
});

describe('bulk refresh', () => {
  it('refreshAll reports exactly the tools whose entry changed, and bumps only the views that changed', () => {
    const c = new CatalogueProjection();
    const idx = new DiscoveryIndex(c);
    const acme = makePrincipal({ tenant: 'acme', clearance: 'restricted' });
    const globex = makePrincipal({ tenant: 'globex', clearance: 'restricted' });
    const events = [
      publishedEvent(aDefinition({ name: 'a.x', access: { tenants: ['acme'] } })),
      publishedEvent(aDefinition({ name: 'b.x' })),
      publishedEvent(aDefinition({ name: 'c.x', access: { tenants: ['acme'] } })),
    ];
    events.forEach((event, i) => c.apply({ position: String(i + 1), event }));
    const [va, vg] = [idx.view(acme), idx.view(globex)];
    const [ra, rg] = [va.revision, vg.revision];
    c.apply({ position: '10', event: retiredEvent('c.x', '1.0.0') });
    c.apply({ position: '11', event: publishedEvent(aDefinition({ name: 'a.x', version: '1.1.0', access: { tenants: ['acme'] } })) });
    c.apply({ position: '12', event: publishedEvent(aDefinition({ name: 'd.x', access: { tenants: ['acme'] } })) });
    const changes = idx.refreshAll();
    expect(changes.map((ch) => [ch.view === va ? 'acme' : 'globex', ch.tool, ch.before?.version ?? null, ch.after?.version ?? null])).toEqual([
      ['acme', 'a.x', '1.0.0', '1.1.0'],
      ['acme', 'c.x', '1.0.0', null],
      ['acme', 'd.x', null, '1.0.0'],
    ]);
    expect(va.revision).not.toBe(ra);
    expect(vg.revision).toBe(rg);
    expect(va.entries).toEqual(discoverNaive(c, acme));
  });
});
