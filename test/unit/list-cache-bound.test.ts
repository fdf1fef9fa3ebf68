/**
 * tools/list pages are kept per view, but only so many, and only from the second time one is asked for
 * (src/mcp/list-cache.ts): a client walking every page of a large catalogue once leaves nothing cached, nor bytes made
 * for it. A page's versions' details are read only when the page is built, and a page that stays cached is never
 * built again.
 */
import { describe, expect, it } from 'vitest';
import { CatalogueReader } from '#app/catalogue-reader';
import type { CatalogueVersion, VersionDetails } from '#projections/catalogue';
import type { DiscoveryView } from '#projections/discovery';
import { makePrincipal } from '#domain/access';
import { toolStream } from '#domain/events';
import { jsonBytesOf } from '#mcp/jsonrpc';
import { ListPageCache } from '#mcp/list-cache';
import { createMemoryEventStore } from '#store/memory-event-store';
import { aDefinition, publishedEvent } from '../fixtures/builders.ts';

describe('tools/list page cache bound', () => {
  const walk = async (cache: ListPageCache, view: DiscoveryView, details: (vs: readonly CatalogueVersion[]) => Promise<VersionDetails[]>) => {
    const pages = [];
    let cursor: unknown;
    do {
      const page = await cache.page(view, { revision: '2025-11-25', cursor, pageSize: 4 }, details);
      pages.push(page);
      cursor = page.result.nextCursor;
    } while (cursor !== undefined);
    return pages;
  };

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
    // A first walk keeps nothing: every page asked for once, none made into bytes.
    const once = await walk(cache, view, details);
    expect(once).toHaveLength(5);
    expect(once.every((p) => jsonBytesOf(p.session) === undefined)).toBe(true);
    expect(built).toHaveLength(5);
    // The second walk keeps its pages: built again, each once.
    const pages = await walk(cache, view, details);
    expect(pages).toHaveLength(5);
    expect(built).toHaveLength(10);
    expect(pages.map((p) => JSON.stringify(p.session))).toEqual(once.map((p) => JSON.stringify(p.session)));
    built.length = 5;
    // The last three pages are cached: asked again, the same page, nothing read.
    const last = await cache.page(view, { revision: '2025-11-25', cursor: pages[3]?.result.nextCursor, pageSize: 4 }, details);
    expect(last.session).toBe(pages[4]?.session);
    expect(built).toHaveLength(5);
    // The first went out: built again, its details read again, not kept until it is asked for twice again.
    const first = await cache.page(view, { revision: '2025-11-25', pageSize: 4 }, details);
    expect(first.session).not.toBe(pages[0]?.session);
    expect(first.session).toEqual(pages[0]?.session);
    expect(built).toHaveLength(6);
    expect(built[5]).toBe('p.t00,p.t01,p.t02,p.t03');
    expect(jsonBytesOf(first.session)).toBeUndefined();
    const kept = await cache.page(view, { revision: '2025-11-25', pageSize: 4 }, details);
    expect(jsonBytesOf(kept.session)).toBeDefined();
    expect((await cache.page(view, { revision: '2025-11-25', pageSize: 4 }, details)).session).toBe(kept.session);
    expect(built).toHaveLength(7);
  });
});
