/** Reading a stored projection snapshot (./catalogue-snapshot.ts, ./runs-snapshot.ts) by name. */
import type { SnapshotStore, StoredSnapshotHead } from './ports.ts';

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
