/**
 * The store the replay and start-up benches read: BENCH_REPLAY_EVENTS events (default 500,000) in a SQLite file,
 * seeded once and kept under the OS temp folder. 100,000 tools in 250 namespaces, each with 4 published versions and
 * one deprecation; every tool's handler is `<ns>.lookup`, in its own namespace, so a server with bench/startup-
 * handlers.mjs serves every version.
 */
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AppendRequest } from '#app/ports';
import { canonicalHash } from '#domain/hash';
import { createSqliteEventStore } from '#store/sqlite-event-store';

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
