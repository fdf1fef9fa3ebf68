/**
 * The console's upstream port (src/console/upstreams.ts) over the upstream room: the registry's own queries and
 * commands — the ones `estate upstream list|drift|approve|reject` run — and this process's links for up/down.
 */
import type { UpstreamConsoleSource, UpstreamView } from '#console/upstreams';
import type { UpstreamPool } from '#upstream/pool';
import type { UpstreamRegistry } from '#upstream/registry';

export const consoleUpstreams = (registry: UpstreamRegistry, pool: UpstreamPool | undefined): UpstreamConsoleSource => ({
  async list() {
    const links = (await pool?.statuses()) ?? {};
    const out: UpstreamView[] = [];
    for (const ns of await registry.namespaces()) {
      const s = await registry.overview(ns);
      const pending = s.pending.map((d) => {
        const newer = pool?.changeWaitingFor(ns, d.tool);
        return newer === undefined ? d : { ...d, newerWaiting: newer };
      });
      const link = !pool || !pool.serves(ns) ? 'not served here' : (links[ns] ?? 'not connected yet');
      out.push({ ns, transport: s.transport, target: s.target, tools: s.tools, status: s.status, link, pending });
    }
    return out;
  },
  approve: (ns, tool, candidateHash, by) => registry.approveOne(ns, tool, { by, candidateHash }),
  reject: (ns, tool, candidateHash, reason, by) => registry.reject(ns, tool, reason, by, candidateHash),
});
