/**
 * Eight processes append to one stream of one SQLite file at once, each with the exact revision it read. BEGIN
 * IMMEDIATE plus the busy timeout must make them take turns: no failed writer, no gap, no duplicate revision.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { createSqliteEventStore } from '#store/sqlite-event-store';

const WORKERS = 8;
const APPENDS_EACH = 100;
const WORKER_SCRIPT = fileURLToPath(new URL('./sqlite-append-worker.ts', import.meta.url));

interface Worker {
  ready: Promise<void>;
  done: Promise<{ code: number | null; stdout: string; stderr: string }>;
  go(): void;
}

function startWorker(path: string, streamId: string, id: string): Worker {
  const child = spawn(process.execPath, ['--import', 'tsx', WORKER_SCRIPT, path, streamId, id, String(APPENDS_EACH)], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  let markReady: () => void = () => undefined;
  const ready = new Promise<void>((resolve) => (markReady = resolve));
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
    if (stdout.includes('ready\n')) markReady();
  });
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const done = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    child.on('close', (code) => {
      markReady(); // a worker that died before `ready` must not hang the test
      resolve({ code, stdout, stderr });
    }),
  );
  return { ready, done, go: () => child.stdin.end('go\n') };
}

describe('SQLite store shared by several processes', () => {
  const dir = mkdtempSync(join(tmpdir(), 'estate-multiprocess-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it(`${WORKERS} processes appending with exact expected revisions never lose or duplicate a revision`, async () => {
    const path = join(dir, 'nested', 'shared.db');
    const streamId = 'tool-contended';
    // Every worker opens the fresh file at the same time: creating the schema is part of the race.
    const workers = Array.from({ length: WORKERS }, (_, i) => startWorker(path, streamId, `w${i}`));
    await Promise.all(workers.map((w) => w.ready));
    for (const w of workers) w.go();
    const results = await Promise.all(workers.map((w) => w.done));

    for (const r of results) expect(r, r.stderr).toMatchObject({ code: 0 });
    const summaries = results.map((r) => JSON.parse(r.stdout.trim().split('\n').at(-1)!) as { conflicts: number });
    console.log(`conflicts retried per worker: ${summaries.map((s) => s.conflicts).join(', ')}`);

    const store = createSqliteEventStore({ path });
    try {
      const events = await store.readStream(streamId);
      const total = WORKERS * APPENDS_EACH;
      expect(events).toHaveLength(total);
      expect(events.map((e) => e.revision)).toEqual(Array.from({ length: total }, (_, i) => i));

      const seen = events.map((e) => {
        const data = e.data as { worker: string; seq: number };
        return `${data.worker}:${data.seq}`;
      });
      const expected = Array.from({ length: WORKERS }, (_, w) =>
        Array.from({ length: APPENDS_EACH }, (_, s) => `w${w}:${s}`),
      ).flat();
      expect([...seen].sort()).toEqual([...expected].sort());
      // Each worker's own appends land in the order it made them.
      for (let w = 0; w < WORKERS; w++) {
        const own = events.map((e) => e.data as { worker: string; seq: number }).filter((d) => d.worker === `w${w}`);
        expect(own.map((d) => d.seq)).toEqual(Array.from({ length: APPENDS_EACH }, (_, s) => s));
      }
      const positions = (await store.readAll({ limit: total + 10 })).map((e) => e.position);
      expect(new Set(positions).size).toBe(total);
    } finally {
      await store.close();
    }
  }, 180_000);

  it('a subscription in one process receives what other processes append', async () => {
    const path = join(dir, 'tail.db');
    const streamId = 'run-from-elsewhere';
    const store = createSqliteEventStore({ path, pollIntervalMs: 20 });
    const seen: string[] = [];
    const subscription = store.subscribe({
      onEvents: (batch) => {
        for (const e of batch) seen.push(`${(e.data as { worker: string; seq: number }).worker}:${e.revision}`);
      },
    });
    try {
      const workers = [startWorker(path, streamId, 'a'), startWorker(path, streamId, 'b')];
      await Promise.all(workers.map((w) => w.ready));
      for (const w of workers) w.go();
      const results = await Promise.all(workers.map((w) => w.done));
      for (const r of results) expect(r, r.stderr).toMatchObject({ code: 0 });
      const total = 2 * APPENDS_EACH;
      await vi.waitFor(() => expect(seen).toHaveLength(total), { timeout: 10_000, interval: 20 });
      expect(seen.map((s) => Number(s.split(':')[1]))).toEqual(Array.from({ length: total }, (_, i) => i));
    } finally {
      await subscription.close();
      await store.close();
    }
  }, 120_000);
});
