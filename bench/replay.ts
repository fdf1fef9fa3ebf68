/**
 * Replay speed: rebuild every projection (catalogue + discovery index) from 500,000 events in SQLite, beside the floor
 * of reading the same rows (SQLite read + JSON.parse, no decoding or folding). Each side runs in its own child process
 * so its peak memory is its own.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { CatalogueReader } from '#app/catalogue-reader';
import type { AppendRequest } from '#app/ports';
import { makePrincipal } from '#domain/access';
import { canonicalHash } from '#domain/hash';
import { createSqliteEventStore } from '#store/sqlite-event-store';
import type { BenchRow } from './lib.ts';
import { mib } from './lib.ts';

const EVENTS = Number(process.env.BENCH_REPLAY_EVENTS ?? 500_000);
const PER_TOOL = 5; // 4 publishes + 1 deprecation

const definition = (t: number, v: number) => ({
  name: `ns${t % 250}.tool${t}`,
  version: `1.${v}.0`,
  title: `Tool ${t}`,
  description: `Synthetic tool ${t}, version ${v}: looks something up by reference.`,
  inputSchema: {
    type: 'object',
    properties: { reference: { type: 'string', pattern: '^REF-\\d+$' }, limit: { type: 'integer', minimum: 1, maximum: 100 }, ...(v > 0 ? { [`opt${v}`]: { type: 'string' } } : {}) },
    required: ['reference'],
    additionalProperties: false,
  },
  access: { requiredScopes: t % 3 === 0 ? ['scope.read'] : [], tenants: t % 5 === 0 ? ['acme'] : [], classification: (['public', 'internal', 'confidential', 'restricted'] as const)[t % 4] },
  sideEffect: 'none' as const,
  handler: `h${t % 10}`,
  timeoutMs: 30_000,
});

const seed = async (path: string): Promise<void> => {
  const store = createSqliteEventStore({ path });
  const tools = Math.ceil(EVENTS / PER_TOOL);
  let batch: AppendRequest[] = [];
  for (let t = 0; t < tools; t++) {
    const events = [];
    for (let v = 0; v < PER_TOOL - 1; v++) {
      const def = definition(t, v);
      events.push({ type: 'ToolVersionPublished', data: { definition: def, schemaHash: canonicalHash(def.inputSchema), definitionHash: canonicalHash(def), level: v ? 'minor' : 'initial', reasons: [], by: 'bench', at: '2026-01-01T00:00:00.000Z' } });
    }
    events.push({ type: 'ToolVersionDeprecated', data: { name: definition(t, 0).name, version: '1.0.0', reason: 'superseded', by: 'bench', at: '2026-01-02T00:00:00.000Z' } });
    batch.push({ streamId: `tool-${definition(t, 0).name}`, events, expectedRevision: 'no_stream' });
    if (batch.length === 500) {
      await store.appendMany(batch);
      batch = [];
    }
  }
  if (batch.length) await store.appendMany(batch);
  await store.close();
};

/** Child mode: `replay <path>` or `floor <path>`; prints one JSON line. */
const child = async (mode: string, path: string): Promise<void> => {
  const store = createSqliteEventStore({ path });
  let peak = 0;
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 20);
  const t0 = process.hrtime.bigint();
  let events = 0;
  if (mode === 'replay') {
    const reader = new CatalogueReader(store, { pageSize: 5000 });
    // Views exist before the replay, so the fold maintains them as it goes — what a restarting replica does.
    reader.discovery.view(makePrincipal({ tenant: 'acme', scopes: ['scope.read'], clearance: 'restricted' }));
    reader.discovery.view(makePrincipal({ tenant: 'globex', scopes: [], clearance: 'internal' }));
    events = await reader.catchUp();
  } else {
    let after: string | null = null;
    for (;;) {
      const page = await store.readAll({ after, limit: 5000 });
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
  const dir = join(tmpdir(), 'estate-bench');
  mkdirSync(dir, { recursive: true });
  const path = join(dir, `replay-${EVENTS}.db`);
  if (!existsSync(path)) {
    process.stderr.write(`replay: seeding ${EVENTS.toLocaleString()} events into ${path} (once; kept for later runs)...\n`);
    try {
      await seed(path);
    } catch (e) {
      rmSync(path, { force: true });
      throw e;
    }
  }
  const measure = (mode: string) => {
    const out = execFileSync(process.execPath, ['--max-old-space-size=8192', '--import', 'tsx', new URL(import.meta.url).pathname, '--child', mode, path], { encoding: 'utf8' });
    return JSON.parse(out.trim().split('\n').pop() as string) as { events: number; seconds: number; peakRss: number };
  };
  process.stderr.write('replay: reading the floor...\n');
  const floor = measure('floor');
  process.stderr.write('replay: rebuilding all projections...\n');
  const replay = measure('replay');
  const size = `${replay.events.toLocaleString()} events, SQLite file`;
  return [
    { bench: 'replay', case: 'rebuild catalogue + discovery views', unit: 'events/s', estate: Math.round(replay.events / replay.seconds), peerName: 'floor: read rows + JSON.parse only', peer: Math.round(floor.events / floor.seconds), notes: `${size}; ${replay.seconds.toFixed(1)} s vs ${floor.seconds.toFixed(1)} s` },
    { bench: 'replay', case: 'peak RSS', unit: 'MiB', estate: mib(replay.peakRss), peerName: 'floor: read rows + JSON.parse only', peer: mib(floor.peakRss), notes: size },
  ];
}

const argv = process.argv;
if (argv[2] === '--child') {
  await child(argv[3] as string, argv[4] as string);
} else if (import.meta.url === pathToFileURL(argv[1] ?? '').href) {
  const { printRows } = await import('./print.ts');
  printRows(await run());
}
