/**
 * What the disk under a store costs a durable call at least, measured where the bench's store lives: one fsync of a
 * 4 KiB write (the raw floor), and one SQLite commit of a call-record-sized row in WAL mode with synchronous=FULL (the
 * floor for a call whose record must be durable before it is answered; Estate's store does exactly that, plus the
 * stream's revision lookup).
 */
import { closeSync, fsyncSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { percentile } from './lib.ts';

const SAMPLES = 400;

export interface DiskFloors {
  fsyncP50: number;
  commitP50: number;
}

export const diskFloors = (dir: string): DiskFloors => {
  const here = mkdtempSync(join(dir, 'floor-'));
  try {
    const fd = openSync(join(here, 'fsync'), 'w');
    const block = Buffer.alloc(4096, 1);
    const fsyncs: number[] = [];
    for (let i = 0; i < SAMPLES; i++) {
      writeSync(fd, block, 0, block.length, (i % 64) * block.length);
      const t0 = process.hrtime.bigint();
      fsyncSync(fd);
      fsyncs.push(Number(process.hrtime.bigint() - t0) / 1000);
    }
    closeSync(fd);
    const db = new Database(join(here, 'commit.db'));
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = FULL');
    db.exec('CREATE TABLE events (position INTEGER PRIMARY KEY, stream_id TEXT NOT NULL, revision INTEGER NOT NULL, data TEXT NOT NULL, UNIQUE (stream_id, revision))');
    const insert = db.prepare('INSERT INTO events (stream_id, revision, data) VALUES (?, ?, ?)');
    const row = JSON.stringify({ tool: 'bench.tool_0001', version: '1.0.0', schemaHash: 'a'.repeat(64), argsHash: 'b'.repeat(64), outcome: 'ok', at: new Date().toISOString() });
    const commits: number[] = [];
    for (let i = 0; i < SAMPLES; i++) {
      const t0 = process.hrtime.bigint();
      insert.run('run-floor', i, row);
      commits.push(Number(process.hrtime.bigint() - t0) / 1000);
    }
    db.close();
    return { fsyncP50: percentile(fsyncs, 50), commitP50: percentile(commits, 50) };
  } finally {
    rmSync(here, { recursive: true, force: true });
  }
};
