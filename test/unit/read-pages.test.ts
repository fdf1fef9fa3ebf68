/**
 * A replica's catch-up after each change it hears of (a bus announcement) reads the store from its position to the
 * end. Where the store says a page reached the end (`readAllPage`), that is one read per change; where it cannot, the
 * read goes on until a page comes back empty, one read more (issue 15: a round trip fewer per change per replica).
 */
import { describe, expect, it } from 'vitest';
import { CatalogueReader } from '#app/catalogue-reader';
import type { EventStore, ReadAllOptions } from '#app/ports';
import { pageThrough } from '#app/read-pages';
import { toolStream } from '#domain/events';
import { createMemoryEventStore } from '#store/memory-event-store';
import { aDefinition, publishedEvent } from '../fixtures/builders.ts';

/** The store with each page read counted; `withEnd: false` hides `readAllPage`, as a store without it. */
const counting = (store: EventStore, withEnd: boolean) => {
  const reads: ReadAllOptions[] = [];
  const wrapped: EventStore = {
    ...store,
    readAll: (o) => (reads.push(o ?? {}), store.readAll(o)),
    readAllPage: withEnd && store.readAllPage ? (o) => (reads.push(o ?? {}), store.readAllPage!(o)) : undefined,
  };
  return { store: wrapped, reads };
};

const publish = async (store: EventStore, name: string): Promise<void> => {
  const def = aDefinition({ name, version: '1.0.0', handler: name });
  await store.append(toolStream(name), [publishedEvent(def)], { expectedRevision: 'no_stream' });
};

const collect = async (store: EventStore, options: ReadAllOptions): Promise<string[][]> => {
  const pages: string[][] = [];
  for await (const page of pageThrough(store, options)) pages.push(page.map((e) => e.streamId));
  return pages;
};

describe('pageThrough', () => {
  it('stops at the page that says end; without readAllPage, at the next, empty one; the same pages either way', async () => {
    const base = createMemoryEventStore();
    for (const name of ['a.one', 'a.two', 'a.three', 'a.four', 'a.five']) await publish(base, name);
    const withEnd = counting(base, true);
    const without = counting(base, false);
    const expected = [[toolStream('a.one'), toolStream('a.two')], [toolStream('a.three'), toolStream('a.four')], [toolStream('a.five')]];

    expect(await collect(withEnd.store, { limit: 2, streamPrefix: 'tool-' })).toEqual(expected);
    expect(await collect(without.store, { limit: 2, streamPrefix: 'tool-' })).toEqual(expected);
    expect(withEnd.reads).toHaveLength(3);
    expect(without.reads).toHaveLength(4);
  });

  it('a live catalogue reads the store once for each change it catches up on', async () => {
    const base = createMemoryEventStore();
    const { store, reads } = counting(base, true);
    const reader = new CatalogueReader(store);
    await reader.catchUp();
    for (const name of ['b.one', 'b.two', 'b.three']) {
      await publish(base, name);
      const before = reads.length;
      expect(await reader.catchUp()).toBe(1);
      expect(reader.catalogue.tool(name)).toBeDefined();
      expect(reads.length - before).toBe(1);
    }
  });
});
