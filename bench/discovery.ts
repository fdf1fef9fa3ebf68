/**
 * Discovery from precomputed views vs the deep dive's §5 naive per-request filter, at 10,000 tools x 5 versions for
 * 200 distinct principals. A "query" is one tools/list page (500 tools, ESTATE_PAGE_SIZE's default).
 */
import { pathToFileURL } from 'node:url';
import { makePrincipal } from '#domain/access';
import { CLASSIFICATIONS, type Principal } from '#domain/types';
import { CatalogueReader } from '#app/catalogue-reader';
import type { StoredEvent } from '#app/ports';
import { toolStream } from '#domain/events';
import { ChangeNotifier } from '#mcp/change-notifier';
import { CatalogueProjection, type CatalogueVersion } from '#projections/catalogue';
import { createMemoryEventStore } from '#store/memory-event-store';
import { DiscoveryIndex, newestVisible } from '#projections/discovery';
import type { BenchRow } from './lib.ts';
import { median, mib, percentile } from './lib.ts';

const TOOLS = 10_000;
const VERSIONS = 5;
const PRINCIPALS = 200;
const PAGE = 500;
const TENANTS = ['acme', 'globex', 'initech', 'umbrella', 'hooli'];
const SCOPES = Array.from({ length: 12 }, (_, i) => `scope.${i}`);

/** Deterministic pseudo-random numbers so every run measures the same estate. */
const rng = (seed: number) => () => {
  seed = (seed * 1103515245 + 12345) & 0x7fffffff;
  return seed / 0x7fffffff;
};

export const buildEstate = (): { catalogue: CatalogueProjection; principals: Principal[] } => {
  const r = rng(42);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)] as T;
  const catalogue = new CatalogueProjection();
  let pos = 0;
  for (let t = 0; t < TOOLS; t++) {
    const name = `ns${t % 97}.tool${t}`;
    for (let v = 0; v < VERSIONS; v++) {
      const scopes = r() < 0.5 ? [] : [pick(SCOPES)];
      catalogue.apply({
        position: String(++pos),
        event: {
          type: 'ToolVersionPublished',
          data: {
            definition: {
              name,
              version: `1.${v}.0`,
              description: `tool ${t} version ${v}`,
              inputSchema: { type: 'object', properties: { id: { type: 'string' } } },
              access: { requiredScopes: scopes, tenants: r() < 0.7 ? [] : [pick(TENANTS)], classification: pick(CLASSIFICATIONS) },
              sideEffect: 'none',
              handler: name,
              timeoutMs: 30_000,
            },
            schemaHash: 'x',
            definitionHash: `${name}@${v}`,
            level: v === 0 ? 'initial' : 'minor',
            reasons: [],
            by: 'bench',
            at: '2026-01-01T00:00:00.000Z',
          },
        },
      });
    }
  }
  const principals: Principal[] = [];
  const seen = new Set<string>();
  while (principals.length < PRINCIPALS) {
    const scopes = SCOPES.filter(() => r() < 0.4);
    const p = makePrincipal({ tenant: pick(TENANTS), scopes, clearance: pick(CLASSIFICATIONS) });
    const key = `${p.tenant}|${p.scopes.join(',')}|${p.clearance}`;
    if (!seen.has(key)) {
      seen.add(key);
      principals.push(p);
    }
  }
  return { catalogue, principals };
};

/** The deep dive's §5 loop, per request, stopping when one page is full (the fairest form of the peer). */
const naivePage = (catalogue: CatalogueProjection, p: Principal): CatalogueVersion[] => {
  const held = new Set(p.scopes);
  const out: CatalogueVersion[] = [];
  for (const name of catalogue.names()) {
    const v = newestVisible(catalogue.tool(name) as never, p, held, false, () => true);
    if (v) out.push(v);
    if (out.length === PAGE) break;
  }
  return out;
};

const timeEach = (principals: Principal[], rounds: number, fn: (p: Principal) => unknown): number[] => {
  const out: number[] = [];
  for (let round = 0; round < rounds; round++) {
    for (const p of principals) {
      const t0 = process.hrtime.bigint();
      fn(p);
      out.push(Number(process.hrtime.bigint() - t0) / 1000);
    }
  }
  return out;
};

export async function run(): Promise<BenchRow[]> {
  const { catalogue, principals } = buildEstate();
  const index = new DiscoveryIndex(catalogue);
  const heapBefore = process.memoryUsage().heapUsed;
  const buildStart = process.hrtime.bigint();
  for (const p of principals) index.view(p);
  const buildMs = Number(process.hrtime.bigint() - buildStart) / 1e6;
  const heapViews = process.memoryUsage().heapUsed - heapBefore;

  // Warm both paths, then measure (rounds over all 200 principals).
  timeEach(principals, 2, (p) => index.view(p).entries.slice(0, PAGE));
  timeEach(principals, 1, (p) => naivePage(catalogue, p));
  const fast = timeEach(principals, 20, (p) => index.view(p).entries.slice(0, PAGE));
  const slow = timeEach(principals, 3, (p) => naivePage(catalogue, p));

  // The price of keeping views current: one publish, propagated to every cached view.
  const maintain: number[] = [];
  let pos = 1_000_000;
  for (let i = 0; i < 200; i++) {
    const name = `ns${i % 97}.tool${i}`;
    const t0 = process.hrtime.bigint();
    catalogue.apply({ position: String(++pos), event: { type: 'ToolVersionDeprecated', data: { name, version: '1.4.0', reason: 'bench', by: 'bench', at: '2026-01-02T00:00:00.000Z' } } });
    index.toolChanged(name);
    maintain.push(Number(process.hrtime.bigint() - t0) / 1000);
  }

  const told = await notified(catalogue, principals);

  const size = `${TOOLS} tools x ${VERSIONS} versions, ${PRINCIPALS} principals, page ${PAGE}`;
  return [
    { bench: 'discovery', case: 'tools/list page, median', unit: 'µs/query', estate: median(fast), peerName: 'naive filter (deep dive §5)', peer: median(slow), notes: size },
    { bench: 'discovery', case: 'tools/list page, p99', unit: 'µs/query', estate: percentile(fast, 99), peerName: 'naive filter (deep dive §5)', peer: percentile(slow, 99), notes: size },
    { bench: 'discovery', case: 'build 200 views (first use)', unit: 'ms', estate: Math.round(buildMs), notes: `${mib(heapViews)} MiB heap for the views` },
    { bench: 'discovery', case: 'one change propagated to 200 views, median', unit: 'µs', estate: median(maintain), notes: `p99 ${percentile(maintain, 99).toFixed(1)} µs` },
    { bench: 'discovery', case: 'one change applied and told to watchers of 200 views, median', unit: 'µs', estate: median(told.us), notes: `p99 ${percentile(told.us, 99).toFixed(1)} µs; a reader with a session watching each view (the change notifier); ${told.notices} notices for ${told.us.length} changes` },
  ];
}

/**
 * A serving process's path for one change: the reader applies it, maintains its views and tells the change notifier,
 * which decides for each watching session whether its list changed. One session per principal, each given its view
 * again before every change (as a client that lists after each notice).
 */
const notified = async (built: CatalogueProjection, principals: Principal[]): Promise<{ us: number[]; notices: number }> => {
  const reader = new CatalogueReader(createMemoryEventStore());
  const events: StoredEvent[] = [];
  let pos = 0;
  for (const tool of built.sortedTools()) {
    tool.versions.forEach((v, revision) => {
      const d = v.details;
      if (!d) throw new Error('the bench estate keeps details');
      events.push({ position: String(++pos), streamId: toolStream(tool.name), revision, type: 'ToolVersionPublished', recordedAt: d.publishedAt, data: { definition: d.definition, schemaHash: d.schemaHash, definitionHash: d.definitionHash, level: d.level, reasons: d.reasons, by: d.publishedBy, at: d.publishedAt } });
    });
  }
  reader.applyBatch(events);
  const notifier = new ChangeNotifier(reader);
  let notices = 0;
  const watchers = principals.map((principal) => notifier.watch({ principal, includeDeprecated: false, notify: () => void notices++ }));
  const us: number[] = [];
  for (let i = 0; i < 400; i++) {
    for (const w of watchers) w.given();
    const name = `ns${i % 97}.tool${i}`;
    const event: StoredEvent = { position: String(++pos), streamId: toolStream(name), revision: VERSIONS, type: 'ToolVersionDeprecated', recordedAt: '2026-01-02T00:00:00.000Z', data: { name, version: `1.${VERSIONS - 1}.0`, reason: 'bench', by: 'bench', at: '2026-01-02T00:00:00.000Z' } };
    const t0 = process.hrtime.bigint();
    reader.applyBatch([event]);
    if (i >= 200) us.push(Number(process.hrtime.bigint() - t0) / 1000);
  }
  for (const w of watchers) w.close();
  notifier.close();
  return { us, notices };
};

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const { printRows } = await import('./print.ts');
  printRows(await run());
}
