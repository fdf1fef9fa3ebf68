/**
 * A catalogue read from a position with many call records written since (a replica's catch-up when a change is
 * announced, the consumer lag in /metrics, the tail after a snapshot): Estate's read, by the catalogue's own index,
 * beside the same read in the log's order, which is how it read before the index (every row since, filtered). On
 * SQLite (a file) and PostgreSQL (ESTATE_TEST_PG; its rows are left out when it cannot be reached). One catalogue event,
 * CALLS call records, one catalogue event; the read asks for the catalogue after the first. Medians of RUNS reads each,
 * the two alternating. Runnable alone: `node --import tsx bench/catalogue-reads.ts`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import type { EventStore } from '#app/ports';
import { runStream } from '#domain/events';
import { createPostgresEventStore } from '#store/postgres-event-store';
import { scanSql } from '#store/postgres-read';
import { formatPosition, parsePosition, quoteSchema, SCAN_WINDOW } from '#store/postgres-rows';
import { createSqliteEventStore } from '#store/sqlite-event-store';
import type { BenchRow } from './lib.ts';

const CALLS = 200_000;
const RUNS = 15;
const PG_URL = process.env.ESTATE_TEST_PG ?? 'postgres://postgres@127.0.0.1:5432/estate_test';
const owner = { subject: 'bench', tenant: 'acme' };

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;

/** The first catalogue event's position, after filling the store. */
const fill = async (store: EventStore): Promise<string> => {
  const first = await store.append('tool-bench.a', [{ type: 'ToolVersionPublished', data: { n: 1 } }], { expectedRevision: 'any' });
  const rec = (i: number) => ({ type: 'ToolCalled', data: { runId: `r${i}`, ...owner, tool: 'bench.a', version: '1.0.0', at: new Date().toISOString(), callId: `c${i}`, outcome: 'ok', argsHash: 'x'.repeat(64) } });
  for (let b = 0; b < CALLS; b += 5000) {
    await store.appendMany(Array.from({ length: Math.min(5000, CALLS - b) }, (_, k) => ({ streamId: runStream(`r${b + k}`, owner), expectedRevision: 'any' as const, events: [rec(b + k)] })));
  }
  await store.append('tool-bench.a', [{ type: 'ToolVersionPublished', data: { n: 2 } }], { expectedRevision: 'any' });
  return first.positions[0] as string;
};

/** Time `estate` and `before` in turns; each must find the one catalogue event after the first. */
const inTurns = async (estate: () => Promise<number>, before: () => Promise<number> | number): Promise<{ estate: number; before: number }> => {
  const a: number[] = [];
  const b: number[] = [];
  for (let r = 0; r < RUNS; r++) {
    let t = performance.now();
    if ((await estate()) !== 1) throw new Error('Estate read the wrong catalogue events');
    a.push(performance.now() - t);
    t = performance.now();
    if ((await before()) !== 1) throw new Error('the read before read the wrong catalogue events');
    b.push(performance.now() - t);
  }
  return { estate: median(a), before: median(b) };
};

const row = (store: string, m: { estate: number; before: number }): BenchRow => ({
  bench: 'store',
  case: `catalogue read past ${CALLS.toLocaleString('en-US')} call records (a replica's catch-up, the lag in /metrics), ${store}, median`,
  unit: 'ms',
  estate: m.estate,
  peerName: "the same read in the log's order, every row since filtered (before the catalogue's index)",
  peer: m.before,
  notes: `one catalogue event, ${CALLS} call records, one catalogue event; median of ${RUNS} reads each, alternating`,
});

const sqlite = async (): Promise<BenchRow> => {
  const dir = mkdtempSync(join(tmpdir(), 'estate-bench-catalogue-'));
  const path = join(dir, 'e.db');
  const store = createSqliteEventStore({ path });
  const raw = new Database(path, { readonly: true });
  try {
    const after = Number(await fill(store));
    const old = raw.prepare(`SELECT position FROM events NOT INDEXED WHERE position > ? AND substr(stream_id, 1, ?) = ? ORDER BY position LIMIT 1000`);
    return row('SQLite', await inTurns(async () => (await store.readAll({ after: String(after), streamPrefix: 'tool-' })).length, () => old.all(after, 5, 'tool-').length));
  } finally {
    raw.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
};

const postgres = async (): Promise<BenchRow | null> => {
  const probe = new pg.Client({ connectionString: PG_URL });
  try {
    await probe.connect();
  } catch {
    return null;
  }
  const schema = `bench_catalogue_reads_${process.pid}`;
  const s = quoteSchema(schema);
  const store = await createPostgresEventStore({ connectionString: PG_URL, schema, listen: false });
  try {
    const after = await fill(store);
    // The window-by-window read `scan` made for every prefix before (its statement without the catalogue's literal).
    const before = async (): Promise<number> => {
      let from = parsePosition(after);
      for (;;) {
        const { rows } = await probe.query<{ window_end: boolean; xid: string | null; seq: string | null; window_rows: string | null }>(scanSql(s, undefined), [from.xid.toString(), from.seq.toString(), 'tool-', SCAN_WINDOW, 1000, false]);
        const found = rows.filter((r) => !r.window_end).length;
        const last = rows.find((r) => r.window_end);
        if (found > 0 || !last || last.xid === null || last.seq === null || Number(last.window_rows) < SCAN_WINDOW) return found;
        from = parsePosition(formatPosition(last.xid, last.seq));
      }
    };
    return row('PostgreSQL', await inTurns(async () => (await store.readAll({ after, streamPrefix: 'tool-' })).length, before));
  } finally {
    await store.close();
    await probe.query(`DROP SCHEMA IF EXISTS ${s} CASCADE`).catch(() => undefined);
    await probe.end();
  }
};

export const run = async (): Promise<BenchRow[]> => {
  const rows = [await sqlite()];
  const onPg = await postgres();
  if (onPg) rows.push(onPg);
  return rows;
};

if (process.argv[1]?.endsWith('catalogue-reads.ts')) {
  const { printRows } = await import('./print.ts');
  printRows(await run());
}
