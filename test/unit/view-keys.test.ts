/**
 * Issue 9, Medium 3: discovery views are cached per key, so the key must never let two principals with different
 * visible sets share a view. A scope containing the old separator (`,`) was the attack: the single scope
 * `accounts.read,payments.read` was served the view of a principal holding `accounts.read` and `payments.read`.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { makePrincipal, viewKey } from '#domain/access';
import type { CatalogueEvent } from '#domain/events';
import { CLASSIFICATIONS } from '#domain/types';
import { CatalogueProjection } from '#projections/catalogue';
import { DiscoveryIndex, discoverNaive } from '#projections/discovery';
import { aDefinition, publishedEvent } from '../fixtures/builders.ts';

const build = (events: CatalogueEvent[]): CatalogueProjection => {
  const c = new CatalogueProjection();
  events.forEach((event, i) => c.apply({ position: String(i + 1), event }));
  return c;
};

const names = (vs: readonly { name: string }[]): string[] => vs.map((v) => v.name);

describe('discovery view keys', () => {
  it('the single scope `accounts.read,payments.read` does not get the view of the two scopes', () => {
    const c = build([
      publishedEvent(aDefinition({ name: 'accounts.balance', handler: 'accounts.balance', access: { requiredScopes: ['accounts.read'], tenants: [], classification: 'public' } })),
      publishedEvent(aDefinition({ name: 'payments.lookup', access: { requiredScopes: ['payments.read'], tenants: [], classification: 'public' } })),
    ]);
    const idx = new DiscoveryIndex(c);
    const two = makePrincipal({ tenant: 'acme', scopes: ['accounts.read', 'payments.read'] });
    const one = makePrincipal({ tenant: 'acme', scopes: ['accounts.read,payments.read'] });
    expect(names(idx.view(two).entries)).toEqual(['accounts.balance', 'payments.lookup']);
    // Asked second: with a joined key it would be served the cached view above.
    expect(names(idx.view(one).entries)).toEqual([]);
    expect(viewKey(one)).not.toBe(viewKey(two));
    expect(idx.viewCount).toBe(2);
  });

  // Scopes and tenants drawn from a small alphabet with the characters a naive encoding would use as separators.
  // Small on purpose, so colliding shapes (`a,b` against `a` + `b`) turn up in most runs.
  // A scope is one to three of a few parts joined by a separator a naive key might use.
  const scope = fc
    .tuple(fc.uniqueArray(fc.constantFrom('a', 'b', 'c'), { minLength: 1, maxLength: 3 }), fc.constantFrom(',', ',', '\u0000', '"', ' '))
    .map(([parts, sep]) => parts.join(sep));
  const scopeSet = fc.uniqueArray(scope, { maxLength: 3 });
  const tenant = fc.constantFrom('t', 'u', 't\u0000a');
  const clearance = fc.constantFrom('public', 'confidential');
  const principal = fc.record({ tenant, scopes: scopeSet, clearance });
  const tool = fc.record({
    requiredScopes: scopeSet,
    tenants: fc.uniqueArray(tenant, { maxLength: 2 }),
    classification: fc.constantFrom(...CLASSIFICATIONS),
  });

  /** Principals built to collide under a joined key: the same scopes merged at `,`, or split at it. */
  const family = fc.tuple(principal, fc.array(fc.tuple(principal, fc.constantFrom('join', 'split', 'other')), { minLength: 1, maxLength: 8 })).map(([base, rest]) => [
    base,
    ...rest.map(([other, how]) =>
      how === 'join' ? { ...base, scopes: base.scopes.length ? [base.scopes.join(',')] : [] } : how === 'split' ? { ...base, scopes: [...new Set(base.scopes.flatMap((x) => x.split(',')))] } : other,
    ),
  ]);

  it('property: two principals share a cached view only if their visible sets are equal by rule', () => {
    fc.assert(
      fc.property(fc.array(tool, { minLength: 1, maxLength: 8 }), family, (tools, raws) => {
        const c = build(tools.map((access, i) => publishedEvent(aDefinition({ name: `t.tool${i}`, handler: `t.h${i}`, access }))));
        const idx = new DiscoveryIndex(c);
        const ps = raws.map((r) => makePrincipal(r));
        const views = ps.map((p) => idx.view(p));
        for (let i = 0; i < ps.length; i++) {
          const pi = ps[i] as (typeof ps)[number];
          // The cache answers what the rule answers, whoever was asked first.
          expect(names((views[i] as (typeof views)[number]).entries)).toEqual(names(discoverNaive(c, pi)));
          for (let j = i + 1; j < ps.length; j++) {
            if (views[i] === views[j]) expect(names(discoverNaive(c, pi))).toEqual(names(discoverNaive(c, ps[j] as (typeof ps)[number])));
          }
        }
      }),
      { numRuns: 500 },
    );
  });

  it('property: the key is a function of (tenant, scope set, clearance) only, and tells different ones apart', () => {
    fc.assert(
      fc.property(family, (raws) => {
        const [pa, ...others] = raws.map((r) => makePrincipal(r));
        for (const pb of others) {
          const a = pa as NonNullable<typeof pa>;
          const same = a.tenant === pb.tenant && a.clearance === pb.clearance && JSON.stringify(a.scopes) === JSON.stringify(pb.scopes);
          expect(viewKey(a) === viewKey(pb)).toBe(same);
          expect(viewKey(makePrincipal({ ...pb, scopes: [...pb.scopes].reverse() }))).toBe(viewKey(pb));
        }
      }),
      { numRuns: 2000 },
    );
  });
});
