/**
 * The catalogue read model: every tool, every version, its status. A pure fold over catalogue events, kept mutable
 * for speed (it replays hundreds of thousands of events); version records themselves are immutable, so a consumer
 * holding one (a discovery view, a session's last listing) can compare by identity.
 */
import type { CatalogueEvent, EventAnchor } from '#domain/events';
import type { LifecycleMark, Reason, SideEffect, ToolAccess, ToolDefinition, VersionStatus } from '#domain/types';

/**
 * What a version's record does not hold resident when the projection drops details (a serving process over a large
 * catalogue): the schemas and annotations, the hashes, the classification, who published it when and where. Loaded
 * from the version's publishing event on demand (src/app/version-details.ts) and cached.
 */
export interface VersionDetails {
  readonly definition: ToolDefinition;
  readonly schemaHash: string;
  readonly definitionHash: string;
  readonly level: string;
  readonly reasons: readonly Reason[];
  readonly publishedAt: string;
  readonly publishedBy: string;
  /** Position of the publishing event. */
  readonly position: string;
}

/**
 * One published version: what discovery, listing filters and serving decide on, always resident; the rest in
 * `details` (present when the projection keeps them, else loaded on demand).
 */
export interface CatalogueVersion {
  readonly name: string;
  readonly version: string;
  readonly status: VersionStatus;
  /** Who may see it (shared between records with equal access). */
  readonly access: ToolAccess;
  readonly handler: string;
  readonly sideEffect: SideEffect;
  readonly timeoutMs: number;
  /** Revision of the publishing event in its tool's stream: where the details are read from. */
  readonly revision: number;
  readonly deprecated?: LifecycleMark;
  readonly retired?: LifecycleMark;
  /** Present when the projection keeps details (see CatalogueProjection's options). */
  readonly details?: VersionDetails;
}

export interface CatalogueTool {
  readonly name: string;
  /** Ascending semver order. */
  readonly versions: CatalogueVersion[];
  /** The title and description of its newest version, whatever its status (what the console searches). */
  title?: string;
  description: string;
}

/** A catalogue event with where the store put it. */
export interface PositionedEvent {
  position: string;
  /** Its revision in its stream (-1 when unknown: then only a projection that keeps details can show them). */
  revision?: number;
  event: CatalogueEvent;
}

export interface CatalogueOptions {
  /** Keep each version's details resident (default). false: a record holds only what serving decides on. */
  keepDetails?: boolean;
}

export const parseTriple = (v: string): [number, number, number] => {
  const [a, b, c] = v.split('.');
  return [Number(a), Number(b), Number(c)];
};

export const compareTriples = (a: readonly number[], b: readonly number[]): number =>
  (a[0] as number) - (b[0] as number) || (a[1] as number) - (b[1] as number) || (a[2] as number) - (b[2] as number);

/**
 * The fold's version. Bump it whenever what `apply` makes of an event, or what a record holds, changes: a snapshot
 * written under another version is then not loaded (src/app/catalogue-snapshot.ts), and the catalogue is rebuilt
 * from the events instead.
 */
export const CATALOGUE_PROJECTION_VERSION = 4;

/** The state at one position, for a snapshot; see `CatalogueProjection.cut`. */
export interface CatalogueCut {
  position: string | null;
  /** The event at `position` (null before any event). */
  anchor: EventAnchor | null;
  eventCount: number;
  tools: CatalogueTool[];
}

const byName = (a: CatalogueTool, b: CatalogueTool): number => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

/** Two lists sorted by name, as one. */
const mergeByName = (a: CatalogueTool[], b: CatalogueTool[]): CatalogueTool[] => {
  if (a.length === 0) return b;
  const out = new Array<CatalogueTool>(a.length + b.length);
  let i = 0;
  let j = 0;
  let k = 0;
  while (i < a.length && j < b.length) out[k++] = byName(a[i] as CatalogueTool, b[j] as CatalogueTool) <= 0 ? (a[i++] as CatalogueTool) : (b[j++] as CatalogueTool);
  while (i < a.length) out[k++] = a[i++] as CatalogueTool;
  while (j < b.length) out[k++] = b[j++] as CatalogueTool;
  return out;
};

export class CatalogueProjection {
  private tools = new Map<string, CatalogueTool>();
  /** Every tool sorted by name, as of the last `sortedTools()`; tools added since wait in `added` to be merged in. */
  private sorted: CatalogueTool[] = [];
  private added: CatalogueTool[] = [];
  /** `sorted` no longer matches `tools` (a tool was replaced): rebuilt from the map on next use. */
  private resort = false;
  /** The names of `namesOf`, the sorted list they were taken from (a changed list is a new array). */
  private sortedNames: string[] = [];
  private namesOf: readonly CatalogueTool[] = this.sorted;
  /** Position of the last event applied; null before any. */
  position: string | null = null;
  /**
   * The stream and revision of the event at `position` (set by whoever folds stored events: the catalogue reader): a
   * snapshot carries them, so a process restoring it can check that its store's log has that very event there.
   */
  anchorStream: string | null = null;
  anchorRevision = -1;
  eventCount = 0;
  readonly keepsDetails: boolean;
  /** Values shared by many records (handlers, actors and reasons of lifecycle marks, access rules): each held once. */
  private strings = new Map<string, string>();
  private accesses = new Map<string, ToolAccess>();

  constructor(options: CatalogueOptions = {}) {
    this.keepsDetails = options.keepDetails ?? true;
  }

  /** The one string equal to `s` this projection holds. */
  shared(s: string): string {
    const held = this.strings.get(s);
    if (held !== undefined) return held;
    this.strings.set(s, s);
    return s;
  }

  /** The one access rule equal to `a` this projection holds (records never change it). */
  sharedAccess(a: ToolAccess): ToolAccess {
    // Most rules name no tenant and no scope: their key is the classification alone (a JSON text is never one).
    const key = a.tenants.length === 0 && a.requiredScopes.length === 0 ? a.classification : JSON.stringify([a.classification, a.tenants, a.requiredScopes]);
    const held = this.accesses.get(key);
    if (held !== undefined) return held;
    this.accesses.set(key, a);
    return a;
  }

  /** Apply one event; returns the name of the tool that changed (every catalogue event changes exactly one). */
  apply({ position, revision = -1, event }: PositionedEvent): string {
    this.position = position;
    this.eventCount++;
    switch (event.type) {
      case 'ToolVersionPublished': {
        const d = event.data;
        const def = d.definition;
        let tool = this.tools.get(def.name);
        if (!tool) {
          tool = { name: def.name, versions: [], description: def.description };
          this.tools.set(def.name, tool);
          this.added.push(tool);
        }
        const vs = tool.versions;
        if (vs.some((v) => v.version === def.version)) return def.name; // at-least-once delivery: already applied
        const record: { -readonly [K in keyof CatalogueVersion]: CatalogueVersion[K] } = {
          name: tool.name,
          version: def.version,
          status: 'active',
          access: this.sharedAccess(def.access),
          handler: this.shared(def.handler),
          sideEffect: def.sideEffect,
          timeoutMs: def.timeoutMs,
          revision,
        };
        if (this.keepsDetails) {
          record.details = { definition: def, schemaHash: d.schemaHash, definitionHash: d.definitionHash, level: d.level, reasons: d.reasons, publishedAt: d.at, publishedBy: d.by, position };
        }
        let i = vs.length;
        if (i > 0) {
          const semver = parseTriple(def.version);
          while (i > 0 && compareTriples(parseTriple((vs[i - 1] as CatalogueVersion).version), semver) > 0) i--;
        }
        vs.splice(i, 0, record);
        if (i === vs.length - 1) {
          tool.description = def.description;
          if (def.title !== undefined) tool.title = def.title;
          else delete tool.title;
        }
        return def.name;
      }
      case 'ToolVersionDeprecated':
      case 'ToolVersionRetired': {
        const d = event.data;
        const tool = this.tools.get(d.name);
        const idx = tool ? tool.versions.findIndex((v) => v.version === d.version) : -1;
        if (!tool || idx < 0) return d.name;
        const old = tool.versions[idx] as CatalogueVersion;
        const target = event.type === 'ToolVersionDeprecated' ? 'deprecated' : 'retired';
        // Redelivered or out-of-order lifecycle events change nothing: never back, never twice.
        if (old.status === target || old.status === 'retired') return d.name;
        const mark: LifecycleMark = { reason: this.shared(d.reason), at: d.at, by: this.shared(d.by) };
        tool.versions[idx] =
          target === 'deprecated' ? { ...old, status: 'deprecated', deprecated: mark } : { ...old, status: 'retired', retired: mark };
        return d.name;
      }
    }
  }

  /**
   * Every tool with a copy of its version list. Records are immutable and only the lists change, so this is a
   * consistent state at `position` that a snapshot can serialise a piece at a time while events keep being applied.
   */
  cut(): CatalogueCut {
    const tools: CatalogueTool[] = [];
    // In name order, so that a projection restored from it receives its tools sorted (see `sortedTools`).
    for (const t of this.sortedTools()) {
      const copy: CatalogueTool = { name: t.name, versions: t.versions.slice(), description: t.description };
      if (t.title !== undefined) copy.title = t.title;
      tools.push(copy);
    }
    const anchor = this.anchorStream === null ? null : { streamId: this.anchorStream, revision: this.anchorRevision };
    return { position: this.position, anchor, eventCount: this.eventCount, tools };
  }

  /** Add a tool as a snapshot held it (its versions in ascending semver order); for a projection being restored. */
  restoreTool(tool: CatalogueTool): void {
    if (this.tools.has(tool.name)) this.resort = true;
    this.tools.set(tool.name, tool);
    this.added.push(tool);
  }

  /** Take over a restored projection's state (this one's views and readers keep their reference to it). */
  adopt(restored: CatalogueProjection): void {
    this.tools = restored.tools;
    this.strings = restored.strings;
    this.accesses = restored.accesses;
    this.sorted = restored.sorted;
    this.added = restored.added.slice();
    this.resort = restored.resort;
    this.position = restored.position;
    this.anchorStream = restored.anchorStream;
    this.anchorRevision = restored.anchorRevision;
    this.eventCount = restored.eventCount;
  }

  tool(name: string): CatalogueTool | undefined {
    return this.tools.get(name);
  }

  /**
   * Every tool, sorted by name (code-unit order). Tools added since the last call are sorted among themselves and
   * merged in (one new tool: one pass over the list); a list that arrives in order (a restore from a snapshot, which is
   * written in name order) sorts in one pass too.
   */
  sortedTools(): readonly CatalogueTool[] {
    if (this.resort) {
      this.sorted = [...this.tools.values()].sort(byName);
      this.added = [];
      this.resort = false;
    } else if (this.added.length > 0) {
      this.sorted = mergeByName(this.sorted, this.added.sort(byName));
      this.added = [];
    }
    return this.sorted;
  }

  /** Every tool name, sorted (code-unit order). */
  names(): readonly string[] {
    const tools = this.sortedTools();
    if (this.namesOf !== tools) {
      this.sortedNames = tools.map((t) => t.name);
      this.namesOf = tools;
    }
    return this.sortedNames;
  }

  get size(): number {
    return this.tools.size;
  }

  /** The newest active version; never a deprecated or retired one. */
  latest(name: string): CatalogueVersion | undefined {
    const vs = this.tools.get(name)?.versions ?? [];
    for (let i = vs.length - 1; i >= 0; i--) if ((vs[i] as CatalogueVersion).status === 'active') return vs[i];
    return undefined;
  }

  /** That version if active or deprecated; never a retired one. */
  resolve(name: string, version: string): CatalogueVersion | undefined {
    const v = this.tools.get(name)?.versions.find((x) => x.version === version);
    return v && v.status !== 'retired' ? v : undefined;
  }

  /** Any version, whatever its status (history, show). */
  find(name: string, version: string): CatalogueVersion | undefined {
    return this.tools.get(name)?.versions.find((x) => x.version === version);
  }

  versions(name: string): readonly CatalogueVersion[] {
    return this.tools.get(name)?.versions ?? [];
  }
}
