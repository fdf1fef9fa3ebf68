/**
 * The log from a position to its end, page by page, for a replay: the store's own scan where it has one (SQLite reads
 * on a second thread), else `readAll` with the next page already asked for while the consumer folds this one (a
 * network store's round trip overlaps the fold). Pages come in `readAll` order; leaving the loop early stops the read.
 */
import type { EventStore, ScanOptions, StoredEvent } from './ports.ts';

export async function* readPages(store: EventStore, options: ScanOptions = {}): AsyncGenerator<StoredEvent[]> {
  if (store.scan) {
    yield* store.scan(options);
    return;
  }
  const read = (after: string | null | undefined) => store.readAll({ ...options, after });
  let next: Promise<StoredEvent[]> | undefined = read(options.after);
  try {
    while (next !== undefined) {
      const page: StoredEvent[] = await next;
      next = undefined;
      if (page.length === 0) return;
      next = read(page[page.length - 1]?.position);
      yield page;
    }
  } finally {
    // Left early: the read asked for ahead is not wanted, but its failure must not go unhandled.
    next?.catch(() => undefined);
  }
}
