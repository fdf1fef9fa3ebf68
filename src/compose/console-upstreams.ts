/**
 * The console's upstream port (src/console/upstreams.ts) over the upstream room: the registry's own queries and
 * commands — the ones `estate upstream list|drift|approve|reject` run — and this process's links for up/down.
 */
import { REFUSALS_SHOWN, type UpstreamConsoleSource, type UpstreamView } from '#console/upstreams';
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
      // A removed upstream has no link: its child has exited, its session ended (src/upstream/pool.ts).
      const link = !pool || !pool.serves(ns) ? 'not served here' : s.status === 'removed' ? 'none (removed)' : (links[ns] ?? 'not connected yet');
      const refusals = s.status === 'active' ? (pool?.refusals(ns) ?? []) : [];
      // The text is the upstream's: cut, as the log cuts it.
      const shown = refusals.slice(0, REFUSALS_SHOWN).map((x) => ({ upstreamTool: x.upstreamTool.slice(0, 200), tool: x.tool.slice(0, 200), code: x.code, message: x.message.slice(0, 300) }));
      const refused = shown.length > 0 ? { refused: { shown, total: refusals.length } } : {};
      out.push({ ns, transport: s.transport, target: s.target, tools: s.tools, status: s.status, link, pending, ...refused });
    }
    return out;
  },
  approve: (ns, tool, candidateHash, by) => registry.approveOne(ns, tool, { by, candidateHash }),
  reject: (ns, tool, candidateHash, reason, by) => registry.reject(ns, tool, reason, by, candidateHash),
});
