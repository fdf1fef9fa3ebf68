/**
 * The log from a position to its end, page by page, for a replay: the store's own scan where it has one (SQLite reads
 * a long scan on a second thread; PostgreSQL one plain statement per window of the log), else `readAll` page after
 * page to the end. Pages come in `readAll` order; leaving the loop early stops the read.
 *
 * Asking for the next page while the consumer folds this one was tried here, for stores without a scan (PostgreSQL's
 * readAll then, 100,000 events, four pairs: 31-33k events/s either way), so the plain loop stays.
 */
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import type { EventStore, ScanOptions, StoredEvent } from './ports.ts';

export async function* readPages(store: EventStore, options: ScanOptions = {}): AsyncGenerator<StoredEvent[]> {
  if (store.scan) yield* store.scan(options);
  else yield* pageThrough(store, options);
}

/**
 * `readAll` page after page from `options.after` to the end: no scan, no thread. Where the store says when a page
 * reached the end (`readAllPage`) the read stops there; elsewhere it stops at the first empty page, one read later.
 */
export async function* pageThrough(store: EventStore, options: ScanOptions = {}): AsyncGenerator<StoredEvent[]> {
  let after = options.after;
  for (;;) {
    const { events, end } = store.readAllPage ? await store.readAllPage({ ...options, after }) : { events: await store.readAll({ ...options, after }), end: false };
    if (events.length === 0) return;
    after = events[events.length - 1]?.position;
    yield events;
    if (end) return;
  }
}

/**
 * One stream from `fromRevision` to its end, `pageSize` events at a time: for a stream of any length (a run is as long
 * as its session), read without holding all of it, and with the thread let go between pages (a store that answers at
 * once, SQLite, would otherwise hold it for the whole stream). A short page is the end.
 */
export async function* readStreamPages(store: EventStore, streamId: string, o: { fromRevision?: number; pageSize?: number } = {}): AsyncGenerator<StoredEvent[]> {
  const pageSize = o.pageSize ?? 1000;
  let fromRevision = o.fromRevision ?? 0;
  for (;;) {
    const page = await store.readStream(streamId, { fromRevision, limit: pageSize });
    if (page.length > 0) yield page;
    if (page.length < pageSize) return;
    fromRevision = (page[page.length - 1] as StoredEvent).revision + 1;
    await yieldToLoop();
  }
}
