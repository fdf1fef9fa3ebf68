/** Reading a stored projection snapshot (./catalogue-snapshot.ts, ./runs-snapshot.ts) by name. */
import type { EventAnchor } from '#domain/events';
import type { EventStore, SnapshotStore, StoredSnapshotHead } from './ports.ts';

/**
 * Whether `store`'s log holds the event a snapshot ends at, at the snapshot's position: one stream read. A snapshot's
 * position is its own log's; where the events were replaced under it (restored from a backup without the snapshot
 * tables, rows deleted by hand), it names another event or none, and the snapshot must not be used.
 */
export const holdsAnchor = async (store: Pick<EventStore, 'readStream'>, anchor: EventAnchor, position: string): Promise<boolean> => {
  const [at] = await store.readStream(anchor.streamId, { fromRevision: anchor.revision, limit: 1 });
  return at?.revision === anchor.revision && at.position === position;
};

/**
 * Read the snapshot stored under `name` with `readFrom`. Another process may replace it while this one reads it (its
 * old chunks go): an unreadable result is read once more when the head moved meanwhile, so that race is not reported
 * as corruption.
 */
export async function readStoredSnapshot<R extends { kind: string }>(store: SnapshotStore, name: string, readFrom: (head: StoredSnapshotHead) => Promise<R>): Promise<R | { kind: 'none' }> {
  const head = await store.head(name);
  if (!head) return { kind: 'none' };
  const read = await readFrom(head);
  if (read.kind !== 'corrupt') return read;
  const now = await store.head(name);
  return now && now.id !== head.id ? readFrom(now) : read;
}
