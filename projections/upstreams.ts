/**
 * The upstream read model (SPEC §7): per namespace, where the upstream lives, its default access, and per tool the
 * last candidate detected, the candidates rejected and whether the upstream stopped listing it. A fold over the
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
  /** When its last drift or vanishing events were recorded, oldest first: the last CHANGE_HISTORY of them. */
  readonly changes: readonly string[];
  /** When the upstream's listing of it was first recorded (the first of `changes`, while it is kept there). */
  readonly firstSeen: string;
  /**
   * The candidates recorded for it (candidateHash), oldest first, the last LISTED_HISTORY: whether a pinned version is
   * one the upstream listed (approved as it was), or one a person published over it (schema-minor tells them apart).
   */
  readonly listed: readonly string[];
}

/** How many of a tool's recorded candidates its state keeps (a pinned version older than that counts as not listed). */
export const LISTED_HISTORY = 64;
const listedAgain = (old: UpstreamToolState | undefined, hash: string): string[] => [...(old?.listed ?? []).filter((h) => h !== hash), hash].slice(-LISTED_HISTORY);

/** How many of a tool's change times its state keeps (src/upstream/registry.ts paces changes by them). */
export const CHANGE_HISTORY = 5;
const changed = (old: UpstreamToolState | undefined, at: string): string[] => [...(old?.changes ?? []), at].slice(-CHANGE_HISTORY);

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

/**
 * One event applied to one namespace's state (undefined before any registration), changing `state` and its tools map
 * in place: a fold owns its state, and each event then costs one step. Copying the map at every event made reading a
 * stream cost events x tools: an upstream of 1,000 tools whose listing kept changing spent most of a serving
 * process's time here (bench/upstream-drift-flood.ts).
 */
export const applyUpstreamEvent = (state: UpstreamState | undefined, event: UpstreamEvent): UpstreamState | undefined => {
  if (event.type === 'UpstreamRegistered') {
    const d = event.data;
    // A registration after a removal starts over: the old drift belongs to the removed upstream.
    return { ns: d.ns, target: d.target, access: d.access, autoApprove: d.autoApprove, registeredAt: d.at, registeredBy: d.by, status: 'active', tools: new Map() };
  }
  if (!state) return state;
  const tools = state.tools as Map<string, UpstreamToolState>;
  switch (event.type) {
    case 'UpstreamDriftDetected': {
      const d = event.data;
      const old = tools.get(d.tool);
      tools.set(d.tool, { tool: d.tool, upstreamTool: d.upstreamTool, lastDrift: d, rejected: old?.rejected ?? new Set(), vanished: false, changes: changed(old, d.at), firstSeen: old?.firstSeen ?? d.at, listed: listedAgain(old, d.candidateHash) });
      return state;
    }
    case 'UpstreamToolVanished': {
      const d = event.data;
      const old = tools.get(d.tool);
      tools.set(d.tool, { tool: d.tool, upstreamTool: d.upstreamTool, ...(old?.lastDrift ? { lastDrift: old.lastDrift } : {}), rejected: old?.rejected ?? new Set(), vanished: true, changes: changed(old, d.at), firstSeen: old?.firstSeen ?? d.at, listed: old?.listed ?? [] });
      return state;
    }
    case 'UpstreamDriftRejected': {
      const d = event.data;
      const old = tools.get(d.tool);
      if (old) tools.set(d.tool, { ...old, rejected: new Set([...old.rejected, d.candidateHash]) });
      return state;
    }
    case 'UpstreamRemoved': {
      const d = event.data;
      return { ...state, status: 'removed', removed: { reason: d.reason, at: d.at, by: d.by } };
    }
  }
};

/**
 * The tool's pending candidate: the newest one detected, unless it was rejected, the tool vanished since, or the
 * pinned version already has its content (`pinnedContentHash`: the content hash of the pinned definition, if any).
 */
export const pendingDrift = (t: UpstreamToolState, pinnedContentHash: string | undefined): DriftData | undefined => {
  const d = t.lastDrift;
  if (!d || t.vanished || t.rejected.has(d.candidateHash)) return undefined;
  return d.candidateHash === pinnedContentHash ? undefined : d;
};
