/**
 * Start-up without a full replay: a serving process restores its catalogue from the store's snapshot and reads only
 * the tail after it; while it serves, it writes a fresh snapshot every `everyEvents` catalogue events or `everyMs`,
 * whichever comes first (and only when something changed), and once more on a clean shutdown. A snapshot of another
 * projection version is passed over (info), an unreadable one too (warning), and one that ends at an event this store's
 * log does not have at its position (warning: another log's, or a log restored without it): either way the read side
 * is rebuilt from the events, as if there had been none. Writing never stops serving: the state is cut at once
 * (records are immutable, only each tool's version list is copied) and serialised and stored a chunk at a time.
 */
import type { CatalogueReader } from './catalogue-reader.ts';
import { readCatalogueSnapshot, writeCatalogueSnapshot, type SnapshotWriteStats } from './catalogue-snapshot.ts';
import type { Log } from './log.ts';
import { systemClock, systemTimer, type Clock, type SnapshotStore, type Timer } from './ports.ts';

export interface SnapshotPolicy {
  /** Write after this many catalogue events since the last snapshot. */
  everyEvents: number;
  /** Write after this long when anything changed since the last snapshot. */
  everyMs: number;
}

export const DEFAULT_SNAPSHOT_POLICY: SnapshotPolicy = { everyEvents: 10_000, everyMs: 5 * 60 * 1000 };

export type RestoreOutcome =
  | { kind: 'none' | 'stale' | 'corrupt' | 'foreign' | 'failed' }
  /** What the stored snapshot holds, so the keeper does not write it again. */
  | { kind: 'restored'; position: string; eventCount: number };

/**
 * Load the stored snapshot into the reader (before its first catch-up). Whatever goes wrong, the reader is left
 * empty and the catch-up replays from the first event.
 */
export async function restoreCatalogue(reader: CatalogueReader, store: SnapshotStore, log: Log): Promise<RestoreOutcome> {
  if (reader.position !== null) throw new Error('restoreCatalogue: the reader has already read events');
  try {
    const read = await readCatalogueSnapshot(store);
    switch (read.kind) {
      case 'none':
        log.info({}, 'no catalogue snapshot: replaying the log from the first event');
        return { kind: 'none' };
      case 'stale':
        log.info({ snapshotVersion: read.version }, 'the catalogue snapshot was written by another projection version: ignored, rebuilding from the events');
        return { kind: 'stale' };
      case 'corrupt':
        log.warn({ reason: read.reason }, 'the catalogue snapshot is unreadable: ignored, rebuilding from the events');
        return { kind: 'corrupt' };
      case 'loaded': {
        // Else the tail would read after a position this log may never reach, and serve tools its log does not have.
        if (!(await reader.holds(read.anchor, read.position))) {
          log.warn(
            { position: read.position, anchor: `${read.anchor.streamId}@${read.anchor.revision}` },
            'the catalogue snapshot ends at an event this store does not have there: ignored, rebuilding from the events',
          );
          return { kind: 'foreign' };
        }
        reader.catalogue.adopt(read.catalogue);
        log.info({ position: read.position, events: read.eventCount, tools: read.tools, ms: Math.round(read.ms) }, 'catalogue restored from its snapshot; reading the events after it');
        return { kind: 'restored', position: read.position, eventCount: read.eventCount };
      }
    }
  } catch (e) {
    log.warn({ err: e }, 'the catalogue snapshot could not be read: rebuilding from the events');
    return { kind: 'failed' };
  }
}

export interface SnapshotKeeper {
  /** Write now unless the snapshot is current; resolves when written (or skipped). */
  flush(): Promise<SnapshotWriteStats | null>;
  /** Stop the schedule, finish a write under way, and write a last snapshot if anything changed. */
  close(): Promise<void>;
}

export interface SnapshotKeeperOptions {
  reader: CatalogueReader;
  store: SnapshotStore;
  log: Log;
  /** How the reader started: from a snapshot (not written again until it changed) or from the first event. */
  restored: RestoreOutcome;
  policy?: SnapshotPolicy;
  timer?: Timer;
  clock?: Clock;
}

/** Start keeping the reader's snapshot current; call after the first catch-up. */
export function keepSnapshots(o: SnapshotKeeperOptions): SnapshotKeeper {
  const policy = o.policy ?? DEFAULT_SNAPSHOT_POLICY;
  const timer = o.timer ?? systemTimer;
  const clock = o.clock ?? systemClock;
  const catalogue = o.reader.catalogue;
  const closing = new AbortController();
  // What the stored snapshot holds: a restored reader starts there; a replayed one has none it can use (its replay
  // counts towards `everyEvents` like live events do: a long one is written at once, a short one on schedule).
  let writtenPosition: string | null = o.restored.kind === 'restored' ? o.restored.position : null;
  let writtenCount = o.restored.kind === 'restored' ? o.restored.eventCount : 0;
  let writing: Promise<SnapshotWriteStats | null> | null = null;
  let again = false;

  const stale = (): boolean => catalogue.position !== null && catalogue.position !== writtenPosition;
  const due = (): boolean => catalogue.eventCount - writtenCount >= policy.everyEvents;

  const writeOnce = async (): Promise<SnapshotWriteStats | null> => {
    if (!stale()) return null;
    try {
      const stats = await writeCatalogueSnapshot(o.store, catalogue, () => clock.now());
      if (stats) {
        writtenPosition = stats.position;
        writtenCount = stats.eventCount;
        o.log.info(
          { position: stats.position, events: stats.eventCount, tools: stats.tools, chunks: stats.chunks, chars: stats.chars, ms: Math.round(stats.ms), longestStepMs: Math.round(stats.longestStepMs * 10) / 10 },
          'catalogue snapshot written',
        );
      }
      return stats;
    } catch (e) {
      // Not tried again on every change (a read-only store would warn on each): after `everyEvents` more, or `everyMs`.
      writtenCount = catalogue.eventCount;
      o.log.warn({ err: e }, 'catalogue snapshot not written (the next one is tried later); serving goes on');
      return null;
    }
  };

  const schedule = (): Promise<SnapshotWriteStats | null> => {
    if (writing) {
      again = true;
      return writing;
    }
    writing = writeOnce().finally(() => {
      writing = null;
      const more = again && due();
      again = false;
      if (more && !closing.signal.aborted) void schedule();
    });
    return writing;
  };

  const stopListening = o.reader.onUpdate(() => {
    if (due()) void schedule();
  });

  const started = due() ? schedule().then(() => undefined) : Promise.resolve();

  const loop = (async () => {
    while (!closing.signal.aborted) {
      await timer.sleep(policy.everyMs, closing.signal);
      if (!closing.signal.aborted && stale()) await schedule();
    }
  })();

  return {
    flush: async () => {
      await started;
      if (writing) await writing;
      return schedule();
    },
    async close() {
      closing.abort();
      stopListening();
      await loop;
      if (writing) await writing;
      if (stale()) await writeOnce();
    },
  };
}
