/**
 * tools/list pages are kept per view, but only so many (src/mcp/list-cache.ts): a client walking every page of a large
 * catalogue must not leave the whole catalogue's JSON cached. A page's versions' details are read only when the page
 * is built, and a page that stays cached is never built again.
 */
import { describe, expect, it } from 'vitest';
import { CatalogueReader } from '#app/catalogue-reader';
import type { CatalogueVersion } from '#projections/catalogue';
import { makePrincipal } from '#domain/access';
import { toolStream } from '#domain/events';
import { ListPageCache } from '#mcp/list-cache';
import { createMemoryEventStore } from '#store/memory-event-store';
import { aDefinition, publishedEvent } from '../fixtures/builders.ts';

describe('tools/list page cache bound', () => {
  it('keeps at most pagesPerView pages of a view, least recently used out; details are read only to build a page', async () => {
    const store = createMemoryEventStore();
    for (let i = 0; i < 20; i++) {
      const def = aDefinition({ name: `p.t${String(i).padStart(2, '0')}`, handler: 'p.h', access: { classification: 'public' } });
      await store.append(toolStream(def.name), [publishedEvent(def)], { expectedRevision: 'no_stream' });
    }
    const reader = new CatalogueReader(store, { keepDetails: false });
    await reader.catchUp();
    const view = reader.discovery.view(makePrincipal({}));
    const built: string[] = [];
    const details = (vs: readonly CatalogueVersion[]) => {
      built.push(vs.map((v) => v.name).join(','));
      return reader.details.ofMany(vs);
    };
    const cache = new ListPageCache(3);
    const pages = [];
    let cursor: unknown;
    do {
      const page = await cache.page(view, { revision: '2025-11-25', cursor, pageSize: 4 }, details);
      pages.push(page);
      cursor = page.result.nextCursor;
    } while (cursor !== undefined);
    expect(pages).toHaveLength(5);
    expect(built).toHaveLength(5);
    // The last three pages are cached: asked again, the same page, nothing read.
    const last = await cache.page(view, { revision: '2025-11-25', cursor: pages[3]?.result.nextCursor, pageSize: 4 }, details);
    expect(last.session).toBe(pages[4]?.session);
    expect(built).toHaveLength(5);
    // The first went out: built again, its details read again.
    const first = await cache.page(view, { revision: '2025-11-25', pageSize: 4 }, details);
    expect(first.session).not.toBe(pages[0]?.session);
    expect(first.session).toEqual(pages[0]?.session);
    expect(built).toHaveLength(6);
    expect(built[5]).toBe('p.t00,p.t01,p.t02,p.t03');
  });
});
