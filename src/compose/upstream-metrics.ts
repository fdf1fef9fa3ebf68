/**
 * The upstream series of /metrics (src/ops/metrics.ts) over the upstream room: for every upstream this process
 * serves and the registry holds active, whether its link is up and how many drifted tools await a decision; and the
 * bound on answers held at once, from the pool's budget.
 */
import type { MetricSources, UpstreamStatus } from '#ops/metrics';
import type { UpstreamPool } from '#upstream/pool';

export const upstreamMetricSources = (pool: UpstreamPool): Pick<MetricSources, 'upstreams' | 'upstreamAnswers'> => ({
  async upstreams() {
    const registry = pool.registry;
    const up = await pool.up();
    const out: UpstreamStatus[] = [];
    for (const ns of await registry.namespaces()) {
      if (!pool.serves(ns)) continue;
      const { state } = await registry.load(ns);
      if (state?.status !== 'active') continue;
      out.push({ namespace: ns, up: up[ns] ?? false, pendingDrift: (await registry.pending(ns)).length, changesWaiting: pool.changesWaiting(ns) });
    }
    return out;
  },
  upstreamAnswers: () => pool.answers.counts(),
});
