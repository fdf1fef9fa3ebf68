/**
 * Replay speed: rebuild the serving read side (catalogue records + discovery views) from 500,000 events in SQLite,
 * beside the floor of reading the same rows (SQLite read + JSON.parse, no decoding or folding), and `estate replay`'s
 * path (a fresh projection of records, no views); both against the 100k events/s target. Each side runs in its own child process
 * so its peak memory is its own, on the compiled build (dist/, built first if stale). The store: bench/replay-store.ts.
 */
import { execFileSync } from 'node:child_process';
import { pathToFileURL } from 'node:url';
import type * as ReaderModule from '#app/catalogue-reader';
import type * as ReplayModule from '#app/replay';
import type * as AccessModule from '#domain/access';
import { TOOL_STREAM_PREFIX } from '#domain/events';
import type * as StoreModule from '#store/sqlite-event-store';
import { ensureBuild, importBuilt, mib, type BenchRow } from './lib.ts';
import { seededStore } from './replay-store.ts';

/** Events per second a full replay must reach (issue 15). */
export const REPLAY_TARGET = 100_000;
/** The serving reader's page size, which the floor reads with too. */
const PAGE = 1000;

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

export async function run(): Promise<BenchRow[]> {
  ensureBuild('replay');
  const path = await seededStore();
  const measure = (mode: string) => {
    const out = execFileSync(process.execPath, ['--max-old-space-size=8192', '--import', 'tsx', new URL(import.meta.url).pathname, '--child', mode, path], { encoding: 'utf8' });
    return JSON.parse(out.trim().split('\n').pop() as string) as { events: number; seconds: number; peakRss: number };
  };
  process.stderr.write('replay: reading the floor...\n');
  const floor = measure('floor');
  process.stderr.write('replay: rebuilding the serving read side...\n');
  const replay = measure('replay');
  process.stderr.write('replay: estate replay (from the first event)...\n');
  const full = measure('estate-replay');
  const size = `${replay.events.toLocaleString()} events, SQLite file`;
  const rate = (r: { events: number; seconds: number }) => Math.round(r.events / r.seconds);
  return [
    { bench: 'replay', case: 'rebuild catalogue + discovery views', unit: 'events/s', estate: rate(replay), peerName: 'floor: read rows + JSON.parse only', peer: rate(floor), notes: `${size}; the serving read side (records without details); ${replay.seconds.toFixed(1)} s vs ${floor.seconds.toFixed(1)} s` },
    { bench: 'replay', case: 'rebuild catalogue + discovery views, vs target', unit: 'events/s', estate: rate(replay), peerName: 'target (issue 15)', peer: REPLAY_TARGET, notes: size },
    { bench: 'replay', case: 'estate replay (full replay, no snapshot), vs target', unit: 'events/s', estate: rate(full), peerName: 'target (issue 15)', peer: REPLAY_TARGET, notes: `${size}; ${full.seconds.toFixed(1)} s; peak RSS ${mib(full.peakRss)} MiB` },
    { bench: 'replay', case: 'peak RSS', unit: 'MiB', estate: mib(replay.peakRss), peerName: 'floor: read rows + JSON.parse only', peer: mib(floor.peakRss), notes: `${size}; the serving read side` },
  ];
}

const argv = process.argv;
if (argv[2] === '--child') {
  await child(argv[3] as string, argv[4] as string);
} else if (import.meta.url === pathToFileURL(argv[1] ?? '').href) {
  const { printRows } = await import('./print.ts');
  printRows(await run());
}
