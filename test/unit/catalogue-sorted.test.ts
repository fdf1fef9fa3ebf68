/**
 * The catalogue keeps its tools sorted by name for discovery and listing (issue 15: a serving process computed its
 * first view by sorting 100,000 names and looking each up). Tools added since the last use are merged in; a cut is in
 * name order, so a projection restored from it receives its tools already sorted.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CatalogueProjection } from '#projections/catalogue';
import { aDefinition, publishedEvent } from '../fixtures/builders.ts';

const publish = (c: CatalogueProjection, name: string, version = '1.0.0'): void => {
  c.apply({ position: String(c.eventCount + 1), revision: 0, event: publishedEvent(aDefinition({ name, version, handler: name })) });
};

const expected = (names: Iterable<string>): string[] => [...new Set(names)].sort();

describe('the catalogue in name order', () => {
  it('property: whatever order tools arrive in, and whenever the list is read between, it is every tool sorted by name', () => {
    const step = fc.oneof(
      fc.record({ add: fc.stringMatching(/^[a-z]{1,3}\.[a-zA-Z0-9_]{1,4}$/) }),
      fc.constant({ read: true as const }),
    );
    fc.assert(
      fc.property(fc.array(step, { maxLength: 80 }), (steps) => {
        const c = new CatalogueProjection();
        const seen: string[] = [];
        for (const s of steps) {
          if ('add' in s) {
            publish(c, s.add);
            seen.push(s.add);
          } else {
            expect(c.sortedTools().map((t) => t.name)).toEqual(expected(seen));
            expect(c.names()).toEqual(expected(seen));
          }
        }
        expect(c.sortedTools().map((t) => t.name)).toEqual(expected(seen));
        expect(c.names()).toEqual(expected(seen));
        // Every entry is the tool itself (its versions move as events arrive), not a copy.
        for (const t of c.sortedTools()) expect(t).toBe(c.tool(t.name));
      }),
    );
  });

  it('a cut is in name order, and a projection restored from it (and then given new tools) is too', () => {
    const c = new CatalogueProjection();
    for (const n of ['m.one', 'a.two', 'z.three', 'b.four']) publish(c, n);
    const cut = c.cut();
    expect(cut.tools.map((t) => t.name)).toEqual(['a.two', 'b.four', 'm.one', 'z.three']);
    const restored = new CatalogueProjection();
    for (const t of cut.tools) restored.restoreTool(t);
    publish(restored, 'c.five');
    const live = new CatalogueProjection();
    live.adopt(restored);
    publish(live, 'aa.six');
    expect(live.names()).toEqual(['a.two', 'aa.six', 'b.four', 'c.five', 'm.one', 'z.three']);
  });

  it('a tool restored twice under one name is listed once', () => {
    const c = new CatalogueProjection();
    publish(c, 'x.one');
    const [first] = c.cut().tools;
    c.sortedTools();
    c.restoreTool({ ...(first as NonNullable<typeof first>), description: 'again' });
    expect(c.sortedTools().map((t) => [t.name, t.description])).toEqual([['x.one', 'again']]);
  });
});
