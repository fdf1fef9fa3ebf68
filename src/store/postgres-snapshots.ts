/**
 * Projection snapshots in the PostgreSQL store's schema (docs/decisions.md, "Projection snapshots"): a head row per
 * projection in `projection_snapshots`, the state in `projection_snapshot_chunks`. The tables are created on the
 * first write, never on a read, so a process that only reads changes nothing.
 */
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import type { SnapshotHead, SnapshotStore, StoredSnapshotHead } from '#app/ports';
import { inTransaction } from './postgres-tx.ts';

const UNDEFINED_TABLE = '42P01';
/** Chunks of a write that never got its head (the process died half-way) are removed once this old. */
const ORPHAN_AGE = '1 hour';

interface HeadRow {
  name: string;
  id: string;
  version: string;
  position: string;
  event_count: string;
  checksum: string;
  chunk_count: number;
  chars: string;
  written_at: string;
}

export function createPostgresSnapshots(pool: pg.Pool, s: string, schemaName: string): SnapshotStore {
  let created: Promise<void> | null = null;
  const ensureTables = (): Promise<void> =>
    (created ??= (async () => {
      await inTransaction(pool, async (client) => {
        // Two processes creating the tables at once can still collide in the catalogue: they take turns.
        await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`estate-snapshots:${schemaName}`]);
        await client.query(`CREATE SCHEMA IF NOT EXISTS ${s}`);
        await client.query(`
          CREATE TABLE IF NOT EXISTS ${s}.projection_snapshots (
            name text PRIMARY KEY,
            id text NOT NULL,
            version text NOT NULL,
            position text NOT NULL,
            event_count bigint NOT NULL,
            checksum text NOT NULL,
            chunk_count integer NOT NULL,
            chars bigint NOT NULL,
            written_at text NOT NULL
          )`);
        await client.query(`
          CREATE TABLE IF NOT EXISTS ${s}.projection_snapshot_chunks (
            id text NOT NULL,
            seq integer NOT NULL,
            data text NOT NULL,
            created_at timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (id, seq)
          )`);
      });
    })().catch((e: unknown) => {
      created = null;
      throw e;
    }));

  return {
    async head(name) {
      try {
        const { rows } = await pool.query<HeadRow>(`SELECT * FROM ${s}.projection_snapshots WHERE name = $1`, [name]);
        const r = rows[0];
        if (!r) return null;
        const head: StoredSnapshotHead = {
          name: r.name,
          id: r.id,
          version: r.version,
          position: r.position,
          eventCount: Number(r.event_count),
          checksum: r.checksum,
          chunkCount: r.chunk_count,
          chars: Number(r.chars),
          writtenAt: r.written_at,
        };
        return head;
      } catch (e) {
        if ((e as { code?: unknown }).code === UNDEFINED_TABLE) return null;
        throw e;
      }
    },

    async *chunks(head) {
      for (let seq = 0; seq < head.chunkCount; seq++) {
        const { rows } = await pool.query<{ data: string }>(`SELECT data FROM ${s}.projection_snapshot_chunks WHERE id = $1 AND seq = $2`, [head.id, seq]);
        const row = rows[0];
        if (!row) return;
        yield row.data;
      }
    },

    async write(chunks, finish: () => SnapshotHead) {
      await ensureTables();
      const id = randomUUID();
      let seq = 0;
      try {
        for await (const chunk of chunks) {
          await pool.query(`INSERT INTO ${s}.projection_snapshot_chunks (id, seq, data) VALUES ($1, $2, $3)`, [id, seq++, chunk]);
        }
        const h = finish();
        await inTransaction(pool, async (client) => {
          const { rows } = await client.query<{ id: string }>(`SELECT id FROM ${s}.projection_snapshots WHERE name = $1 FOR UPDATE`, [h.name]);
          await client.query(
            `INSERT INTO ${s}.projection_snapshots (name, id, version, position, event_count, checksum, chunk_count, chars, written_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
             ON CONFLICT (name) DO UPDATE SET id = excluded.id, version = excluded.version, position = excluded.position,
               event_count = excluded.event_count, checksum = excluded.checksum, chunk_count = excluded.chunk_count,
               chars = excluded.chars, written_at = excluded.written_at`,
            [h.name, id, h.version, h.position, h.eventCount, h.checksum, h.chunkCount, h.chars, h.writtenAt],
          );
          const old = rows[0]?.id;
          if (old !== undefined) await client.query(`DELETE FROM ${s}.projection_snapshot_chunks WHERE id = $1`, [old]);
          await client.query(
            `DELETE FROM ${s}.projection_snapshot_chunks WHERE created_at < now() - interval '${ORPHAN_AGE}'
               AND id NOT IN (SELECT id FROM ${s}.projection_snapshots)`,
          );
        });
      } catch (e) {
        await pool.query(`DELETE FROM ${s}.projection_snapshot_chunks WHERE id = $1`, [id]).catch(() => undefined);
        throw e;
      }
    },
  };
}
