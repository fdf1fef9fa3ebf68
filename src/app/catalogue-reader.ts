/**
 * The read side of one process: the catalogue projection and the discovery views, caught up from the store and then
 * kept current by tailing it (the `local` bus) or on a bus announcement (Kafka). Listeners hear which views changed.
 */
import { TOOL_STREAM_PREFIX, type EventAnchor } from '#domain/events';
import { CatalogueProjection, type CatalogueVersion } from '#projections/catalogue';
import { DiscoveryIndex, type ViewChange } from '#projections/discovery';
import { decodeCatalogueEvent } from './event-codec.ts';
import type { EventStore, StoredEvent, Subscription } from './ports.ts';
import { pageThrough, readPages } from './read-pages.ts';
import { holdsAnchor } from './snapshot-read.ts';
import { createDetailsSource, detailsOfPublished, type DetailsSource } from './version-details.ts';

/** Above this many events in one batch, views are recomputed once rather than maintained per event. */
const BULK_THRESHOLD = 256;

export interface CatalogueUpdate {
  /** Tools touched by the applied batch, in order. */
  tools: string[];
  /** Position of the last event applied. */
  position: string;
  /** Views whose content changed (one entry per view and tool). */
  viewChanges: ViewChange[];
}

export interface CatalogueReaderOptions {
  isOffered?: (v: CatalogueVersion) => boolean;
  /** Page size when catching up. */
  pageSize?: number;
  /**
   * Keep every version's details resident (default: a CLI verb's short-lived catalogue). false: records hold what
   * discovery and serving decide on, and `details` reads the rest from the store on demand (a serving process).
   */
  keepDetails?: boolean;
  /** Versions whose details `details` keeps cached. */
  detailsCache?: number;
}

export class CatalogueReader {
  readonly catalogue: CatalogueProjection;
  readonly discovery: DiscoveryIndex;
  /** Each version's details: the record's own, or read from its publishing event and cached. */
  readonly details: DetailsSource;
  private readonly listeners = new Set<(u: CatalogueUpdate) => void>();
  private readonly pageSize: number;
  private catching: Promise<number> | null = null;
  /** Caught up once: what arrives from now on is live, about to be listed and called. */
  private live = false;

  constructor(
    private readonly store: EventStore,
    options: CatalogueReaderOptions = {},
  ) {
    this.catalogue = new CatalogueProjection({ keepDetails: options.keepDetails ?? true });
    this.details = createDetailsSource(store, options.detailsCache);
    this.discovery = new DiscoveryIndex(this.catalogue, options.isOffered ? { isOffered: options.isOffered } : {});
    this.pageSize = options.pageSize ?? 1000;
  }

  get position(): string | null {
    return this.catalogue.position;
  }

  /** Whether this reader's store holds `anchor` at `position` (a snapshot being restored: snapshot-read.ts). */
  holds(anchor: EventAnchor, position: string): Promise<boolean> {
    return holdsAnchor(this.store, anchor, position);
  }

  onUpdate(listener: (u: CatalogueUpdate) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Read everything after the current position. Concurrent callers share one pass. Returns events applied. */
  catchUp(): Promise<number> {
    if (!this.catching) {
      this.catching = this.readForward().finally(() => {
        this.catching = null;
        this.live = true;
      });
    }
    return this.catching;
  }

  /** Tail the store: every catalogue event committed by any process is applied and announced. */
  follow(onError?: (e: unknown) => void): Subscription {
    return this.store.subscribe({
      after: this.catalogue.position,
      streamPrefix: TOOL_STREAM_PREFIX,
      onEvents: (events) => this.applyBatch(events),
      ...(onError ? { onError } : {}),
    });
  }

  /**
   * Page through the log. A page of live-sized changes is applied and announced at once (state and announcement never
   * drift apart across an await); large pages (a replay) fold without touching the views, which are recomputed once at
   * the end and announced then.
   */
  private async readForward(): Promise<number> {
    let total = 0;
    const deferred: string[] = [];
    // The first catch-up (a replay, or the tail after a snapshot) is one long read: the store may read ahead of the fold
    // (SQLite on a thread, when many positions lie ahead). Later ones are a few catalogue events, however many call
    // records lie between: plain reads from wherever the catalogue has got to, never a thread per bus announcement.
    const from = { after: this.catalogue.position, limit: this.pageSize, streamPrefix: TOOL_STREAM_PREFIX };
    const pages = this.live ? pageThrough(this.store, from) : readPages(this.store, from);
    for await (const page of pages) {
      total += page.length;
      if (page.length > BULK_THRESHOLD) deferred.push(...this.fold(page, false).tools);
      else this.applyBatch(page);
    }
    if (deferred.length > 0) this.announce(deferred, this.discovery.viewCount > 0 ? this.discovery.refreshAll() : []);
    return total;
  }

  /** Apply a batch in order; duplicates (already-seen positions from at-least-once delivery) are harmless. */
  applyBatch(events: readonly StoredEvent[]): void {
    // Live changes update each view one tool at a time; a large batch recomputes the views once instead.
    const bulk = events.length > BULK_THRESHOLD;
    const { tools, viewChanges } = this.fold(events, !bulk);
    if (tools.length > 0) this.announce(tools, bulk && this.discovery.viewCount > 0 ? this.discovery.refreshAll() : viewChanges);
  }

  private fold(events: readonly StoredEvent[], maintainViews: boolean): { tools: string[]; viewChanges: ViewChange[] } {
    const tools: string[] = [];
    const viewChanges: ViewChange[] = [];
    for (const stored of events) {
      const event = decodeCatalogueEvent(stored);
      this.catalogue.anchorStream = stored.streamId;
      this.catalogue.anchorRevision = stored.revision;
      if (!event) {
        this.catalogue.position = stored.position;
        continue;
      }
      const name = this.catalogue.apply({ position: stored.position, revision: stored.revision, event });
      tools.push(name);
      if (!maintainViews) continue;
      // A live publish: its event is in hand, so its details need not be read back from the store (those of the first
      // catch-up are not kept: the cache is for what is about to be used).
      if (this.live && event.type === 'ToolVersionPublished') {
        const v = this.catalogue.tool(name)?.versions.find((x) => x.version === event.data.definition.version);
        if (v) this.details.prime(v, detailsOfPublished(event.data, stored.position));
      }
      if (this.discovery.viewCount > 0) viewChanges.push(...this.discovery.toolChanged(name));
    }
    return { tools, viewChanges };
  }

  private announce(tools: string[], viewChanges: ViewChange[]): void {
    if (this.listeners.size === 0) return;
    const update: CatalogueUpdate = { tools, position: this.catalogue.position as string, viewChanges };
    for (const l of this.listeners) l(update);
  }
}
