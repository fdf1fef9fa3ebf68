/**
 * Projection snapshots in the SQLite store's own file (docs/decisions.md, "Projection snapshots"): a head row per
 * projection in `projection_snapshots`, the state in `projection_snapshot_chunks`. One file carries its events and
 * the snapshot made from them, so a copied or restored file never pairs a snapshot with another log.
 *
 * A statement that finds the file locked by another connection waits on timers, not on the thread (./sqlite-busy.ts).
 *
 * Its own connection, with `synchronous = NORMAL`: a snapshot is a cache, and losing the last one to a power cut only
 * costs a replay, so its commits do not wait for an fsync the way the event store's (FULL) do. The tables are created
 * on the first write, so a read-only store (or a process that only reads) never tries to change the file.
 */
import { randomUUID } from 'node:crypto';
import Database from 'better-sqlite3';
import type { SnapshotHead, SnapshotStore, StoredSnapshotHead } from '#app/ports';
import { BUSY_SPIN_MS, whenFree } from './sqlite-busy.ts';

const SCHEMA = `
  CREATE TABLE IF NOT EXISTS projection_snapshots (
    name        TEXT    PRIMARY KEY,
    id          TEXT    NOT NULL,
    version     TEXT    NOT NULL,
    position    TEXT    NOT NULL,
    event_count INTEGER NOT NULL,
    checksum    TEXT    NOT NULL,
    chunk_count INTEGER NOT NULL,
    chars       INTEGER NOT NULL,
    written_at  TEXT    NOT NULL
  );
  CREATE TABLE IF NOT EXISTS projection_snapshot_chunks (
    id         TEXT    NOT NULL,
    seq        INTEGER NOT NULL,
    data       TEXT    NOT NULL,
    created_ms INTEGER NOT NULL,
    PRIMARY KEY (id, seq)
  );
`;

/** Chunks of a write that never got its head (the process died half-way) are removed once this old. */
export const ORPHAN_AGE_MS = 60 * 60 * 1000;

interface HeadRow {
  name: string;
  id: string;
  version: string;
  position: string;
  event_count: number;
  checksum: string;
  chunk_count: number;
  chars: number;
  written_at: string;
}

const toHead = (r: HeadRow): StoredSnapshotHead => ({
  name: r.name,
  id: r.id,
  version: r.version,
  position: r.position,
  eventCount: r.event_count,
  checksum: r.checksum,
  chunkCount: r.chunk_count,
  chars: r.chars,
  writtenAt: r.written_at,
});

const missingTable = (e: unknown): boolean => e instanceof Error && /no such table: projection_snapshot/.test(e.message);

export interface SqliteSnapshots extends SnapshotStore {
  close(): void;
}

/** The connection is opened on first use: most processes that open a store (a CLI verb) never touch its snapshots. */
export function createSqliteSnapshots(file: string, busyTimeoutMs: number): SqliteSnapshots {
  let opened: Database.Database | null = null;
  let closed = false;
  const connection = (): Database.Database => {
    if (closed) throw new Error('SQLite snapshot store is closed');
    if (!opened) {
      opened = new Database(file, { timeout: BUSY_SPIN_MS });
      opened.pragma('synchronous = NORMAL');
    }
    return opened;
  };
  /** Each statement (or transaction) at once, or, while the file is locked, from timers up to the busy timeout. */
  const free = <T>(work: () => T): Promise<T> => whenFree(work, busyTimeoutMs);
  let created = false;
  const ensureTables = async (db: Database.Database): Promise<void> => {
    if (created) return;
    await free(() => db.transaction(() => db.exec(SCHEMA)).immediate());
    created = true;
  };

  return {
    async head(name) {
      try {
        const row = await free(() => connection().prepare<[string], HeadRow>('SELECT * FROM projection_snapshots WHERE name = ?').get(name));
        return row ? toHead(row) : null;
      } catch (e) {
        if (missingTable(e)) return null;
        throw e;
      }
    },

    async *chunks(head) {
      const stmt = await free(() => connection().prepare<[string, number], { data: string }>('SELECT data FROM projection_snapshot_chunks WHERE id = ? AND seq = ?'));
      for (let seq = 0; seq < head.chunkCount; seq++) {
        const at = seq;
        const row = await free(() => stmt.get(head.id, at));
        if (!row) return;
        yield row.data;
      }
    },

    async write(chunks, finish: () => SnapshotHead) {
      const db = connection();
      await ensureTables(db);
      const id = randomUUID();
      const insert = await free(() => db.prepare('INSERT INTO projection_snapshot_chunks (id, seq, data, created_ms) VALUES (?, ?, ?, ?)'));
      let seq = 0;
      try {
        // One short commit per chunk: the write lock is never held across a whole snapshot.
        for await (const chunk of chunks) {
          const at = seq++;
          await free(() => insert.run(id, at, chunk, Date.now()));
        }
        const h = finish();
        await free(() => db.transaction(() => {
          const old = db.prepare<[string], { id: string }>('SELECT id FROM projection_snapshots WHERE name = ?').get(h.name);
          db.prepare(
            `INSERT INTO projection_snapshots (name, id, version, position, event_count, checksum, chunk_count, chars, written_at)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
             ON CONFLICT (name) DO UPDATE SET id = excluded.id, version = excluded.version, position = excluded.position,
               event_count = excluded.event_count, checksum = excluded.checksum, chunk_count = excluded.chunk_count,
               chars = excluded.chars, written_at = excluded.written_at`,
          ).run(h.name, id, h.version, h.position, h.eventCount, h.checksum, h.chunkCount, h.chars, h.writtenAt);
          if (old) db.prepare('DELETE FROM projection_snapshot_chunks WHERE id = ?').run(old.id);
          db.prepare('DELETE FROM projection_snapshot_chunks WHERE created_ms < ? AND id NOT IN (SELECT id FROM projection_snapshots)').run(Date.now() - ORPHAN_AGE_MS);
        }).immediate());
      } catch (e) {
        try {
          db.prepare('DELETE FROM projection_snapshot_chunks WHERE id = ?').run(id);
        } catch {
          // the write already failed; what is left is an orphan, removed by a later write
        }
        throw e;
      }
    },

    close() {
      closed = true;
      opened?.close();
      opened = null;
    },
  };
}
