/**
 * Discovery: what a principal sees. Views are precomputed per (tenant, scope set, clearance) on first use and then
 * maintained incrementally: a change to one tool recomputes that tool's entry in each cached view (O(versions of the
 * tool) per view), never the whole view. A view's revision changes only when its content does, which is what tells a
 * client "your list changed" and nobody else.
 */
import { isVisible, viewKey } from '#domain/access';
import type { Principal } from '#domain/types';
import type { CatalogueProjection, CatalogueTool, CatalogueVersion } from './catalogue.ts';

export interface DiscoveryView {
  readonly key: string;
  readonly principal: Principal;
  readonly includeDeprecated: boolean;
  /** Changes whenever entries change; unique across all views of one index. */
  revision: number;
  /** One version per tool, sorted by name. */
  readonly entries: CatalogueVersion[];
}

export interface DiscoveryOptions {
  /** Whether this process can serve a version (its handler is bound). Default: every version. */
  isOffered?: (v: CatalogueVersion) => boolean;
}

/** The NEWEST version the principal may see (not the newest version, if visible). */
export const newestVisible = (
  tool: CatalogueTool,
  principal: Principal,
  held: ReadonlySet<string>,
  includeDeprecated: boolean,
  isOffered: (v: CatalogueVersion) => boolean,
): CatalogueVersion | undefined => {
  const vs = tool.versions;
  for (let i = vs.length - 1; i >= 0; i--) {
    const v = vs[i] as CatalogueVersion;
    if (v.status === 'retired') continue;
    if (v.status === 'deprecated' && !includeDeprecated) continue;
    if (!isVisible(v.access, principal, held)) continue;
    if (!isOffered(v)) continue;
    return v;
  }
  return undefined;
};

/** The deep dive's §5 per-request filter: the reference semantics, and the benchmark's peer. */
export const discoverNaive = (
  catalogue: CatalogueProjection,
  principal: Principal,
  includeDeprecated = false,
  isOffered: (v: CatalogueVersion) => boolean = () => true,
): CatalogueVersion[] => {
  const held = new Set(principal.scopes);
  const out: CatalogueVersion[] = [];
  for (const tool of catalogue.sortedTools()) {
    const v = newestVisible(tool, principal, held, includeDeprecated, isOffered);
    if (v) out.push(v);
  }
  return out;
};

export interface ViewChange {
  view: DiscoveryView;
  tool: string;
  before: CatalogueVersion | undefined;
  after: CatalogueVersion | undefined;
}

export class DiscoveryIndex {
  private readonly views = new Map<string, DiscoveryView>();
  private readonly held = new Map<string, ReadonlySet<string>>();
  private nextRevision = 1;
  private readonly isOffered: (v: CatalogueVersion) => boolean;

  constructor(
    private readonly catalogue: CatalogueProjection,
    options: DiscoveryOptions = {},
  ) {
    this.isOffered = options.isOffered ?? (() => true);
  }

  /** The principal's view, built on first use. */
  view(principal: Principal, includeDeprecated = false): DiscoveryView {
    const key = JSON.stringify([viewKey(principal), includeDeprecated]);
    let view = this.views.get(key);
    if (!view) {
      view = {
        key,
        principal,
        includeDeprecated,
        revision: this.nextRevision++,
        entries: discoverNaive(this.catalogue, principal, includeDeprecated, this.isOffered),
      };
      this.views.set(key, view);
      this.held.set(key, new Set(principal.scopes));
    }
    return view;
  }

  get viewCount(): number {
    return this.views.size;
  }

  /** Call after the catalogue applied an event for `name`; returns the views whose content changed. */
  toolChanged(name: string): ViewChange[] {
    const tool = this.catalogue.tool(name);
    const changes: ViewChange[] = [];
    for (const [key, view] of this.views) {
      const after = tool && newestVisible(tool, view.principal, this.held.get(key) as ReadonlySet<string>, view.includeDeprecated, this.isOffered);
      const idx = lowerBound(view.entries, name);
      const current = view.entries[idx];
      const before = current && current.name === name ? current : undefined;
      if (before === after) continue; // records are immutable: identity is equality
      if (before && after) view.entries[idx] = after;
      else if (before) view.entries.splice(idx, 1);
      else if (after) view.entries.splice(idx, 0, after);
      view.revision = this.nextRevision++;
      changes.push({ view, tool: name, before, after });
    }
    return changes;
  }

  /**
   * Recompute every cached view from the catalogue and report what changed, tool by tool (a merge of the old and new
   * sorted entries). For bulk catch-up: per-event maintenance would splice into large sorted arrays once per new tool.
   */
  refreshAll(): ViewChange[] {
    const changes: ViewChange[] = [];
    for (const view of this.views.values()) {
      const fresh = discoverNaive(this.catalogue, view.principal, view.includeDeprecated, this.isOffered);
      const old = view.entries;
      const before = changes.length;
      let i = 0;
      let j = 0;
      while (i < old.length || j < fresh.length) {
        const a = old[i];
        const b = fresh[j];
        if (a && b && a.name === b.name) {
          if (a !== b) changes.push({ view, tool: a.name, before: a, after: b });
          i++;
          j++;
        } else if (a && (!b || a.name < b.name)) {
          changes.push({ view, tool: a.name, before: a, after: undefined });
          i++;
        } else if (b) {
          changes.push({ view, tool: b.name, before: undefined, after: b });
          j++;
        }
      }
      if (changes.length > before) {
        old.splice(0, old.length, ...fresh);
        view.revision = this.nextRevision++;
      }
    }
    return changes;
  }
}

/** Index of `name` in a view's name-sorted entries, or where it would go. */
const lowerBound = (entries: readonly CatalogueVersion[], name: string): number => {
  let lo = 0;
  let hi = entries.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((entries[mid] as CatalogueVersion).name < name) lo = mid + 1;
    else hi = mid;
  }
  return lo;
};

/** The entry a view holds for `name`, if any (binary search: entries are sorted by name). */
export const findInView = (entries: readonly CatalogueVersion[], name: string): CatalogueVersion | undefined => {
  const hit = entries[lowerBound(entries, name)];
  return hit && hit.name === name ? hit : undefined;
};
