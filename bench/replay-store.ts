/**
 * The stores the replay and start-up benches read: BENCH_REPLAY_EVENTS events (default 500,000) in a SQLite file,
 * seeded once and kept under the OS temp folder, and a smaller one of the same shape on PostgreSQL (`seededPostgres`).
 * 100,000 tools in 250 namespaces, each with 4 published versions and one deprecation; every tool's handler is
 * `<ns>.lookup`, in its own namespace, so a server with bench/startup-handlers.mjs serves every version.
 */
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AppendRequest, EventStore } from '#app/ports';
import { canonicalHash } from '#domain/hash';
import { createPostgresEventStore } from '#store/postgres-event-store';
import { createSqliteEventStore } from '#store/sqlite-event-store';
import pg from 'pg';

export const EVENTS = Number(process.env.BENCH_REPLAY_EVENTS ?? 500_000);
const PER_TOOL = 5; // 4 publishes + 1 deprecation
export const NAMESPACES = 250;

export const definition = (t: number, v: number) => ({
  name: `ns${t % NAMESPACES}.tool${t}`,
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
  handler: `ns${t % NAMESPACES}.lookup`,
  timeoutMs: 30_000,
});

/** `events` events of the shape above into `store`, 500 streams per appendMany. */
const seedInto = async (store: EventStore, events: number): Promise<void> => {
  const tools = Math.ceil(events / PER_TOOL);
  let batch: AppendRequest[] = [];
  for (let t = 0; t < tools; t++) {
    const evs = [];
    for (let v = 0; v < PER_TOOL - 1; v++) {
      const def = definition(t, v);
      evs.push({ type: 'ToolVersionPublished', data: { definition: def, schemaHash: canonicalHash(def.inputSchema), definitionHash: canonicalHash(def), level: v ? 'minor' : 'initial', reasons: [], by: 'bench', at: '2026-01-01T00:00:00.000Z' } });
    }
    evs.push({ type: 'ToolVersionDeprecated', data: { name: definition(t, 0).name, version: '1.0.0', reason: 'superseded', by: 'bench', at: '2026-01-02T00:00:00.000Z' } });
    batch.push({ streamId: `tool-${definition(t, 0).name}`, events: evs, expectedRevision: 'no_stream' });
    if (batch.length === 500) {
      await store.appendMany(batch);
      batch = [];
    }
  }
  if (batch.length) await store.appendMany(batch);
};

const seed = async (path: string): Promise<void> => {
  const store = createSqliteEventStore({ path });
  try {
    await seedInto(store, EVENTS);
  } finally {
    await store.close();
  }
};

/** The seeded store's file (seeded now if it is not there yet). */
export const seededStore = async (): Promise<string> => {
  const dir = join(tmpdir(), 'estate-bench');
  mkdirSync(dir, { recursive: true });
  // v2: handlers in their tool's namespace (a server serves them); the v1 file (handlers h0..h9) is not reused.
  const path = join(dir, `replay-v2-${EVENTS}.db`);
  if (!existsSync(path)) {
    process.stderr.write(`replay: seeding ${EVENTS.toLocaleString()} events into ${path} (once; kept for later runs)...\n`);
    try {
      await seed(path);
    } catch (e) {
      rmSync(path, { force: true });
      throw e;
    }
  }
  return path;
};

/** Events in the PostgreSQL replay store (smaller than the SQLite one: seeding it takes ~30 s per 100,000). */
export const PG_EVENTS = Number(process.env.BENCH_REPLAY_PG_EVENTS ?? 100_000);

/**
 * The same shape of store on PostgreSQL, in a schema of its own (`bench_replay_v2_<events>`) of the database at `url`,
 * seeded once and kept while it holds exactly `PG_EVENTS` events. Returns the schema's name.
 */
export const seededPostgres = async (url: string): Promise<string> => {
  const schema = `bench_replay_v2_${PG_EVENTS}`;
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 });
  await client.connect();
  try {
    const { rows: found } = await client.query<{ there: boolean }>('SELECT to_regclass($1) IS NOT NULL AS there', [`${schema}.events`]);
    const held = found[0]?.there ? (await client.query<{ n: string }>(`SELECT count(*)::text AS n FROM ${schema}.events`)).rows[0]?.n : undefined;
    if (held === String(PG_EVENTS)) return schema;
    process.stderr.write(`replay: seeding ${PG_EVENTS.toLocaleString()} events into PostgreSQL schema ${schema} (once; kept for later runs)...\n`);
    await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  } finally {
    await client.end();
  }
  const store = await createPostgresEventStore({ connectionString: url, schema, listen: false });
  try {
    await seedInto(store, PG_EVENTS);
  } finally {
    await store.close();
  }
  return schema;
};
