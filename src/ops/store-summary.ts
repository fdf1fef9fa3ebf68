/**
 * What `estate copy` compares at the end (SPEC §9): each side's projections rebuilt from its own log, plus a digest
 * of the log itself. Positions are the store's own and differ between engines, so nothing here depends on them: the
 * log digest covers (stream, revision, type, data, recorded time) of every event and is order-independent across
 * streams (SPEC §4 only orders events within one stream), the projections are the read models a server builds.
 */
import { decodeCatalogueEvent, decodeToolCallStarted, decodeToolCalled, decodeUpstreamEvent } from '#app/event-codec';
import type { EventStore, StoredEvent } from '#app/ports';
import { TOOL_STREAM_PREFIX, UPSTREAM_STREAM_PREFIX } from '#domain/events';
import { canonicalHash, canonicalJson, sha256Hex } from '#domain/hash';
import { CatalogueProjection } from '#projections/catalogue';
import { applyUpstreamEvent, type UpstreamState } from '#projections/upstreams';

export interface StoreSummary {
  events: number;
  streams: number;
  /** Events per stream family: `tool`, `run`, `upstream`, `other`. */
  byFamily: Record<string, number>;
  /** sha256 sum (mod 2^256) of every event's digest: equal logs, equal sums, whatever the order across streams. */
  logDigest: string;
  /** Events a projection could not decode (reported, never fatal: a copy must still be comparable). */
  undecodable: number;
  projections: { catalogue: string; runs: string; upstreams: string };
  /** Sizes of the read models, for people: tool names, runs, upstream namespaces. */
  sizes: { tools: number; runs: number; upstreams: number };
}

const MOD = 1n << 256n;
const familyOf = (streamId: string): string =>
  streamId.startsWith(TOOL_STREAM_PREFIX) ? 'tool' : streamId.startsWith('run-') ? 'run' : streamId.startsWith(UPSTREAM_STREAM_PREFIX) ? 'upstream' : 'other';

/** Recorded times are compared at millisecond precision: engines store them differently (text, timestamptz). */
const eventDigest = (e: StoredEvent): bigint =>
  BigInt(`0x${sha256Hex(canonicalJson([e.streamId, e.revision, e.type, e.data ?? null, Date.parse(e.recordedAt)]))}`);

interface RunFold {
  calls: number;
  started: Set<string>;
  finished: Set<string>;
  records: bigint;
}

/** Everything needed to compare a run without holding its records: counts and a sum of record digests. */
const foldRun = (run: RunFold, e: StoredEvent): void => {
  if (e.type === 'ToolCalled') {
    const d = decodeToolCalled(e).data;
    run.calls++;
    if (d.callId !== undefined) run.finished.add(d.callId);
    run.records = (run.records + BigInt(`0x${canonicalHash([e.revision, d])}`)) % MOD;
  } else if (e.type === 'ToolCallStarted') {
    const d = decodeToolCallStarted(e).data;
    run.started.add(d.callId);
    run.records = (run.records + BigInt(`0x${canonicalHash([e.revision, d])}`)) % MOD;
  }
};

/** `c` keeps its details (the default): every record holds its definition, hashes and reasons. */
const catalogueView = (c: CatalogueProjection): unknown =>
  c.names().map((name) =>
    c.versions(name).map((v) => ({
      name: v.name,
      version: v.version,
      status: v.status,
      definition: v.details?.definition,
      schemaHash: v.details?.schemaHash,
      definitionHash: v.details?.definitionHash,
      level: v.details?.level,
      reasons: v.details?.reasons,
      publishedAt: v.details?.publishedAt,
      publishedBy: v.details?.publishedBy,
      deprecated: v.deprecated ?? null,
      retired: v.retired ?? null,
    })),
  );

const upstreamView = (s: UpstreamState): unknown => ({
  ...s,
  removed: s.removed ?? null,
  tools: [...s.tools.values()]
    .sort((a, b) => (a.tool < b.tool ? -1 : a.tool > b.tool ? 1 : 0))
    .map((t) => ({ ...t, lastDrift: t.lastDrift ?? null, rejected: [...t.rejected].sort() })),
});

/** Read the whole log once and rebuild every projection from it; `onPage` hears how many events so far, page by page. */
export const summarizeStore = async (store: EventStore, pageSize = 2000, onPage?: (events: number) => void): Promise<StoreSummary> => {
  const catalogue = new CatalogueProjection();
  const upstreams = new Map<string, UpstreamState | undefined>();
  const runs = new Map<string, RunFold>();
  const streams = new Set<string>();
  const byFamily: Record<string, number> = { tool: 0, run: 0, upstream: 0, other: 0 };
  let events = 0;
  let undecodable = 0;
  let sum = 0n;
  let after: string | null = null;
  for (;;) {
    const page = await store.readAll({ after, limit: pageSize });
    if (page.length === 0) break;
    for (const e of page) {
      events++;
      streams.add(e.streamId);
      const family = familyOf(e.streamId);
      byFamily[family] = (byFamily[family] ?? 0) + 1;
      sum = (sum + eventDigest(e)) % MOD;
      try {
        if (family === 'tool') {
          const event = decodeCatalogueEvent(e);
          if (event) catalogue.apply({ position: e.position, event });
        } else if (family === 'upstream') {
          const event = decodeUpstreamEvent(e);
          if (event) upstreams.set(e.streamId, applyUpstreamEvent(upstreams.get(e.streamId), event)); // the summary owns its states
        } else if (family === 'run') {
          let run = runs.get(e.streamId);
          if (!run) runs.set(e.streamId, (run = { calls: 0, started: new Set(), finished: new Set(), records: 0n }));
          foldRun(run, e);
        }
      } catch {
        undecodable++;
      }
    }
    after = page[page.length - 1]!.position;
    onPage?.(events);
  }
  const runView = [...runs.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([stream, r]) => [stream, r.calls, [...r.started].filter((c) => !r.finished.has(c)).sort(), r.records.toString(16)]);
  const upstreamStates = [...upstreams.entries()]
    .filter((entry): entry is [string, UpstreamState] => entry[1] !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([, s]) => upstreamView(s));
  return {
    events,
    streams: streams.size,
    byFamily,
    logDigest: sum.toString(16).padStart(64, '0'),
    undecodable,
    projections: { catalogue: canonicalHash(catalogueView(catalogue)), runs: canonicalHash(runView), upstreams: canonicalHash(upstreamStates) },
    sizes: { tools: catalogue.size, runs: runs.size, upstreams: upstreamStates.length },
  };
};

/** One line per difference between two summaries; empty when they are equal. */
export const compareSummaries = (source: StoreSummary, target: StoreSummary): string[] => {
  const out: string[] = [];
  if (source.events !== target.events) out.push(`events: source ${source.events}, target ${target.events}`);
  if (source.streams !== target.streams) out.push(`streams: source ${source.streams}, target ${target.streams}`);
  for (const f of Object.keys(source.byFamily)) {
    if (source.byFamily[f] !== target.byFamily[f]) out.push(`${f} events: source ${source.byFamily[f]}, target ${target.byFamily[f] ?? 0}`);
  }
  if (source.logDigest !== target.logDigest) out.push('log digest differs (an event\'s stream, revision, type, data or time)');
  for (const p of ['catalogue', 'runs', 'upstreams'] as const) {
    if (source.projections[p] !== target.projections[p]) out.push(`${p} projection differs`);
  }
  return out;
};
