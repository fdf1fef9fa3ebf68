/**
 * Replay speed: rebuild the serving read side (catalogue records + discovery views) from 500,000 events in SQLite,
 * beside the floor of reading the same rows (SQLite read + JSON.parse, no decoding or folding), and `estate replay`'s
 * path (a fresh projection of records, no views); both against the 100k events/s target. Each side runs in its own child process
 * so its peak memory is its own, on the compiled build (dist/, built first if stale). The store: bench/replay-store.ts.
 * And `estate replay`'s path on PostgreSQL (100,000 events, ESTATE_TEST_PG) beside the plainest read of the same rows;
 * left out, and said so, when no PostgreSQL answers.
 */
import { execFileSync } from 'node:child_process';
import { pathToFileURL } from 'node:url';
import type * as ReaderModule from '#app/catalogue-reader';
import type * as ReplayModule from '#app/replay';
import type * as AccessModule from '#domain/access';
import { TOOL_STREAM_PREFIX } from '#domain/events';
import type * as PostgresModule from '#store/postgres-event-store';
import type * as StoreModule from '#store/sqlite-event-store';
import { ensureBuild, importBuilt, mib, type BenchRow } from './lib.ts';
import { seededPostgres, seededStore } from './replay-store.ts';

/** Events per second a full replay must reach (issue 15). */
export const REPLAY_TARGET = 100_000;
/** The serving reader's page size, which the floor reads with too. */
const PAGE = 1000;

/** The PostgreSQL replay rows' database (their own schema in it); the rows are left out when it cannot be reached. */
const PG_URL = process.env.ESTATE_TEST_PG ?? 'postgres://postgres@127.0.0.1:5432/estate_test';

/**
 * Child modes on PostgreSQL: `estate-replay-pg <schema>` (replayAsOf, as `estate replay` on a shared estate) and
 * `floor-pg <schema>` (the plainest read of the same rows: one SELECT per page, keyset on seq, the time as text, then
 * JSON.parse; no visibility rule, no decoding, no fold). One JSON line.
 */
const childPg = async (mode: string, schema: string): Promise<void> => {
  const started = process.hrtime.bigint();
  let events = 0;
  if (mode === 'estate-replay-pg') {
    const { createPostgresEventStore } = await importBuilt<typeof PostgresModule>('src/store/postgres-event-store.js');
    const { replayAsOf } = await importBuilt<typeof ReplayModule>('src/app/replay.js');
    const store = await createPostgresEventStore({ connectionString: PG_URL, schema, listen: false });
    try {
      events = (await replayAsOf(store, { time: '9999-12-31T00:00:00.000Z' }, { keepDetails: false })).eventCount;
    } finally {
      await store.close();
    }
  } else {
    const { default: pg } = await import('pg');
    const client = new pg.Client({ connectionString: PG_URL });
    await client.connect();
    try {
      for (let after = '0'; ; ) {
        const { rows } = await client.query<[string, string, string, string, string, string]>({
          name: 'floor',
          // `e.seq` in ORDER BY: a bare `seq` would name the text column of the SELECT list and sort '10' before '9'.
          text: `SELECT e.seq::text, e.stream_id, e.revision::text, e.type, e.data::text, e.recorded_at::text FROM ${schema}.events e WHERE e.seq > $1 ORDER BY e.seq LIMIT ${PAGE}`,
          values: [after],
          rowMode: 'array',
        });
        if (rows.length === 0) break;
        for (const r of rows) JSON.parse(r[4]);
        events += rows.length;
        after = rows[rows.length - 1]![0];
      }
    } finally {
      await client.end();
    }
  }
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  process.stdout.write(`${JSON.stringify({ events, seconds, peakRss: process.memoryUsage().rss })}\n`);
};

/** Child mode: `replay <path>`, `estate-replay <path>` or `floor <path>`; prints one JSON line. */
const child = async (mode: string, path: string): Promise<void> => {
  // The compiled build, as `estate replay` and `estate serve` run it (a long SQLite scan starts a worker thread, which
  // under tsx would load tsx's loader again inside the measured time).
  const { createSqliteEventStore } = await importBuilt<typeof StoreModule>('src/store/sqlite-event-store.js');
  const { CatalogueReader } = await importBuilt<typeof ReaderModule>('src/app/catalogue-reader.js');
  const { replayAsOf } = await importBuilt<typeof ReplayModule>('src/app/replay.js');
  const { makePrincipal } = await importBuilt<typeof AccessModule>('src/domain/access.js');
  const store = createSqliteEventStore({ path });
  let peak = 0;
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 20);
  const t0 = process.hrtime.bigint();
  let events = 0;
  if (mode === 'replay') {
    // What a serving process does without a snapshot: records without details, views maintained as it goes.
    const reader = new CatalogueReader(store, { keepDetails: false, pageSize: PAGE });
    reader.discovery.view(makePrincipal({ tenant: 'acme', scopes: ['scope.read'], clearance: 'restricted' }));
    reader.discovery.view(makePrincipal({ tenant: 'globex', scopes: [], clearance: 'internal' }));
    events = await reader.catchUp();
  } else if (mode === 'estate-replay') {
    // `estate replay --at <a time after the last event>`: a fresh projection from the first event (records only).
    events = (await replayAsOf(store, { time: '9999-12-31T00:00:00.000Z' }, { keepDetails: false })).eventCount;
  } else {
    let after: string | null = null;
    for (;;) {
      const page = await store.readAll({ after, limit: PAGE, streamPrefix: TOOL_STREAM_PREFIX });
      if (page.length === 0) break;
      events += page.length;
      after = page[page.length - 1]?.position ?? null;
    }
  }
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  clearInterval(sampler);
  peak = Math.max(peak, process.memoryUsage().rss);
  await store.close();
  process.stdout.write(`${JSON.stringify({ events, seconds, peakRss: peak })}\n`);
};

interface ChildFigures {
  events: number;
  seconds: number;
  peakRss: number;
}

const rate = (r: ChildFigures): number => Math.round(r.events / r.seconds);

/** One child of this module (`--child <mode> <arg>`), its own process so its peak memory is its own; its JSON line. */
const runChild = (mode: string, arg: string): ChildFigures => {
  const out = execFileSync(process.execPath, ['--max-old-space-size=8192', '--import', 'tsx', new URL(import.meta.url).pathname, '--child', mode, arg], { encoding: 'utf8' });
  return JSON.parse(out.trim().split('\n').pop() as string) as ChildFigures;
};

export async function run(): Promise<BenchRow[]> {
  ensureBuild('replay');
  const path = await seededStore();
  const measure = (mode: string): ChildFigures => runChild(mode, path);
  process.stderr.write('replay: reading the floor...\n');
  const floor = measure('floor');
  process.stderr.write('replay: rebuilding the serving read side...\n');
  const replay = measure('replay');
  process.stderr.write('replay: estate replay (from the first event)...\n');
  const full = measure('estate-replay');
  const size = `${replay.events.toLocaleString()} events, SQLite file`;
  const pgRows = await postgresRows();
  return [
    { bench: 'replay', case: 'rebuild catalogue + discovery views', unit: 'events/s', estate: rate(replay), peerName: 'floor: read rows + JSON.parse only', peer: rate(floor), notes: `${size}; the serving read side (records without details); ${replay.seconds.toFixed(1)} s vs ${floor.seconds.toFixed(1)} s` },
    { bench: 'replay', case: 'rebuild catalogue + discovery views, vs target', unit: 'events/s', estate: rate(replay), peerName: 'target (issue 15)', peer: REPLAY_TARGET, notes: size },
    { bench: 'replay', case: 'estate replay (full replay, no snapshot), vs target', unit: 'events/s', estate: rate(full), peerName: 'target (issue 15)', peer: REPLAY_TARGET, notes: `${size}; ${full.seconds.toFixed(1)} s; peak RSS ${mib(full.peakRss)} MiB` },
    { bench: 'replay', case: 'peak RSS', unit: 'MiB', estate: mib(replay.peakRss), peerName: 'floor: read rows + JSON.parse only', peer: mib(floor.peakRss), notes: `${size}; the serving read side` },
    ...pgRows,
  ];
}

/** `estate replay` on PostgreSQL beside the plainest read of the same rows; none (said on stderr) without a server. */
async function postgresRows(): Promise<BenchRow[]> {
  let schema: string;
  try {
    schema = await seededPostgres(PG_URL);
  } catch (e) {
    process.stderr.write(`replay: the PostgreSQL rows are left out: no PostgreSQL at ${PG_URL} (${e instanceof Error ? e.message : String(e)}); npm run services:up starts one\n`);
    return [];
  }
  const measure = (mode: string): ChildFigures => runChild(mode, schema);
  process.stderr.write('replay: PostgreSQL, the plain read and estate replay, taking turns...\n');
  // Two of each, alternating, best of each: a replay of 100,000 events is ~2 s, where one slow second on a shared
  // machine would decide a single run.
  const floors: ChildFigures[] = [];
  const replays: ChildFigures[] = [];
  for (let i = 0; i < 2; i++) {
    floors.push(measure('floor-pg'));
    replays.push(measure('estate-replay-pg'));
  }
  const best = (rs: ChildFigures[]): number => Math.max(...rs.map(rate));
  const size = `${replays[0]!.events.toLocaleString()} events, PostgreSQL (schema ${schema})`;
  return [
    { bench: 'replay', case: 'estate replay on PostgreSQL (full replay, no snapshot)', unit: 'events/s', estate: best(replays), peerName: 'floor: SELECT page by page (keyset on seq) + JSON.parse', peer: best(floors), notes: `${size}; best of 2 each, alternating; the floor has no visibility rule and decodes nothing` },
  ];
}

const argv = process.argv;
if (argv[2] === '--child') {
  if (argv[3]?.endsWith('-pg')) await childPg(argv[3], argv[4] as string);
  else await child(argv[3] as string, argv[4] as string);
} else if (import.meta.url === pathToFileURL(argv[1] ?? '').href) {
  const { printRows } = await import('./print.ts');
  printRows(await run());
}
