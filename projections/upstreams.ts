/**
 * The upstream read model (SPEC §7): per namespace, where the upstream lives, its default access, and per tool the
 * last candidate detected, the candidates rejected and whether the upstream stopped listing it. A pure fold over the
 * `upstream-<ns>` streams. Whether a candidate is still PENDING also needs the catalogue (was it approved since?), so
 * that question takes the pinned version's content hash as an argument instead of reading the catalogue here.
 */
import type { AutoApprove, UpstreamDriftDetected, UpstreamEvent, UpstreamTarget } from '#domain/events';
import type { ToolAccess } from '#domain/types';

export type DriftData = UpstreamDriftDetected['data'];

export interface UpstreamToolState {
  readonly tool: string;
  readonly upstreamTool: string;
  /** The newest candidate detected for this tool. */
  readonly lastDrift?: DriftData;
  /** candidateHash values rejected. */
  readonly rejected: ReadonlySet<string>;
  /** The upstream no longer lists it (since the last drift). */
  readonly vanished: boolean;
}

export interface UpstreamState {
  readonly ns: string;
  readonly target: UpstreamTarget;
  readonly access: ToolAccess;
  readonly autoApprove: AutoApprove;
  readonly registeredAt: string;
  readonly registeredBy: string;
  readonly status: 'active' | 'removed';
  readonly removed?: { reason: string; at: string; by: string };
  readonly tools: ReadonlyMap<string, UpstreamToolState>;
}

/** Fold one namespace's events; undefined before any registration. */
export const evolveUpstream = (state: UpstreamState | undefined, event: UpstreamEvent): UpstreamState | undefined => {
  if (event.type === 'UpstreamRegistered') {
    const d = event.data;
    // A registration after a removal starts over: the old drift belongs to the removed upstream.
    return { ns: d.ns, target: d.target, access: d.access, autoApprove: d.autoApprove, registeredAt: d.at, registeredBy: d.by, status: 'active', tools: new Map() };
  }
  if (!state) return state;
  const tools = new Map(state.tools);
  switch (event.type) {
    case 'UpstreamDriftDetected': {
      const d = event.data;
      const old = tools.get(d.tool);
      tools.set(d.tool, { tool: d.tool, upstreamTool: d.upstreamTool, lastDrift: d, rejected: old?.rejected ?? new Set(), vanished: false });
      return { ...state, tools };
    }
    case 'UpstreamToolVanished': {
      const d = event.data;
      const old = tools.get(d.tool);
      tools.set(d.tool, { tool: d.tool, upstreamTool: d.upstreamTool, ...(old?.lastDrift ? { lastDrift: old.lastDrift } : {}), rejected: old?.rejected ?? new Set(), vanished: true });
      return { ...state, tools };
    }
    case 'UpstreamDriftRejected': {
      const d = event.data;
      const old = tools.get(d.tool);
      if (!old) return state;
      tools.set(d.tool, { ...old, rejected: new Set([...old.rejected, d.candidateHash]) });
      return { ...state, tools };
    }
    case 'UpstreamRemoved': {
      const d = event.data;
      return { ...state, status: 'removed', removed: { reason: d.reason, at: d.at, by: d.by } };
    }
  }
};

export const foldUpstream = (events: readonly UpstreamEvent[]): UpstreamState | undefined => events.reduce(evolveUpstream, undefined);

/**
 * The tool's pending candidate: the newest one detected, unless it was rejected, the tool vanished since, or the
 * pinned version already has its content (`pinnedContentHash`: the content hash of the pinned definition, if any).
 */
export const pendingDrift = (t: UpstreamToolState, pinnedContentHash: string | undefined): DriftData | undefined => {
  const d = t.lastDrift;
  if (!d || t.vanished || t.rejected.has(d.candidateHash)) return undefined;
  return d.candidateHash === pinnedContentHash ? undefined : d;
};
