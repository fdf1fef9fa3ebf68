/**
 * The upstream series of /metrics (src/ops/metrics.ts) over the upstream room: for every upstream this process
 * serves and the registry holds active, whether its link is up and how many drifted tools await a decision; and the
 * bound on answers held at once, from the pool's budget.
 *
 * Whether a drift is pending needs every tool's pinned version, one store read each: a 1,000-tool upstream made a
 * scrape take 60 ms of this process's thread (3 ms without upstreams). The count is kept until the upstream's stream
 * or the catalogue (`cataloguePosition`: the read model's) moves, which is all it depends on.
 */
import type { MetricSources, UpstreamStatus } from '#ops/metrics';
import type { UpstreamPool } from '#upstream/pool';

export const upstreamMetricSources = (pool: UpstreamPool, cataloguePosition: () => string | null): Pick<MetricSources, 'upstreams' | 'upstreamAnswers'> => {
  const pendingCounts = new Map<string, { at: string; count: number }>();
  return {
    async upstreams() {
      const registry = pool.registry;
      const up = await pool.up();
      const out: UpstreamStatus[] = [];
      for (const ns of await registry.namespaces()) {
        if (!pool.serves(ns)) continue;
        const { state, revision } = await registry.load(ns);
        if (state?.status !== 'active') continue;
        const at = `${revision}@${cataloguePosition() ?? ''}`;
        let pending = pendingCounts.get(ns);
        if (pending?.at !== at) pendingCounts.set(ns, (pending = { at, count: (await registry.pendingIn(state)).length }));
        out.push({ namespace: ns, up: up[ns] ?? false, pendingDrift: pending.count, changesWaiting: pool.changesWaiting(ns) });
      }
      return out;
    },
    upstreamAnswers: () => pool.answers.counts(),
  };
};
