/**
 * A SnapshotStore in one process's memory. The `memory:` event store keeps no snapshots (a snapshot that dies with
 * the process has nothing to speed up); this one exists so the snapshot logic can be tested against the memory store
 * like against SQLite and PostgreSQL. `damage` lets a test corrupt what it holds.
 */
import type { SnapshotHead, SnapshotStore, StoredSnapshotHead } from '#app/ports';

export interface MemorySnapshots extends SnapshotStore {
  /** The stored chunks of a name, to edit in place (a test's corruption). */
  stored(name: string): { head: StoredSnapshotHead; chunks: string[] } | undefined;
}

export function createMemorySnapshots(): MemorySnapshots {
  const byName = new Map<string, { head: StoredSnapshotHead; chunks: string[] }>();
  let writes = 0;
  return {
    head: async (name) => {
      const entry = byName.get(name);
      return entry ? { ...entry.head } : null;
    },
    async *chunks(head) {
      const entry = byName.get(head.name);
      if (!entry || entry.head.id !== head.id) return;
      for (let i = 0; i < head.chunkCount; i++) {
        const chunk = entry.chunks[i];
        if (chunk === undefined) return;
        yield chunk;
      }
    },
    async write(chunks, finish: () => SnapshotHead) {
      const collected: string[] = [];
      for await (const chunk of chunks) collected.push(chunk);
      const head = { ...finish(), id: String(++writes) };
      byName.set(head.name, { head, chunks: collected });
    },
    stored: (name) => byName.get(name),
  };
}
