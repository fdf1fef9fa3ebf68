/**
 * "Your list changed", told only to those whose view changed compared with what they were last given (SPEC §3). The
 * reader reports which precomputed views changed for which tool; a watcher compares that with its own snapshot, so a
 * publish that a principal cannot see wakes nobody in that principal's sessions.
 */
import type { CatalogueReader, CatalogueUpdate } from '#app/catalogue-reader';
import type { Principal } from '#domain/types';
import type { CatalogueVersion } from '#projections/catalogue';
import type { DiscoveryView } from '#projections/discovery';

export interface ViewWatcher {
  /** Take the view as it is now as "what the client was last given" (call when a listing is served). */
  given(): void;
  close(): void;
}

interface Watch {
  key: string;
  snapshot: Map<string, CatalogueVersion>;
  /** Told since last given: one notice per change of mind is enough, the client will list again. */
  told: boolean;
  refreshOnNotify: boolean;
  notify(): void;
}

export interface WatchOptions {
  principal: Principal;
  includeDeprecated: boolean;
  /** Stateless listeners are never seen listing: each notice counts as "given" the view it announces. */
  refreshOnNotify?: boolean;
  notify(): void;
}

export class ChangeNotifier {
  private readonly byView = new Map<string, Set<Watch>>();
  /** One snapshot per view revision, shared by every watcher given that revision (snapshots are never mutated). */
  private readonly snapshots = new Map<string, { revision: number; snapshot: Map<string, CatalogueVersion> }>();
  private readonly unsubscribe: () => void;

  constructor(private readonly reader: CatalogueReader) {
    this.unsubscribe = reader.onUpdate((u) => this.onUpdate(u));
  }

  watch(o: WatchOptions): ViewWatcher {
    const view = this.reader.discovery.view(o.principal, o.includeDeprecated);
    const w: Watch = { key: view.key, snapshot: this.snapshotOf(view), told: false, refreshOnNotify: o.refreshOnNotify ?? false, notify: o.notify };
    let set = this.byView.get(w.key);
    if (!set) this.byView.set(w.key, (set = new Set()));
    set.add(w);
    return {
      given: () => {
        w.snapshot = this.snapshotOf(view);
        w.told = false;
      },
      close: () => {
        set.delete(w);
        if (set.size === 0 && this.byView.get(w.key) === set) this.byView.delete(w.key);
      },
    };
  }

  get watchers(): number {
    let n = 0;
    for (const s of this.byView.values()) n += s.size;
    return n;
  }

  close(): void {
    this.unsubscribe();
    this.byView.clear();
  }

  private onUpdate(u: CatalogueUpdate): void {
    const touched = new Map<string, { view: DiscoveryView; tools: Set<string> }>();
    for (const c of u.viewChanges) {
      if (!this.byView.has(c.view.key)) continue;
      let t = touched.get(c.view.key);
      if (!t) touched.set(c.view.key, (t = { view: c.view, tools: new Set() }));
      t.tools.add(c.tool);
    }
    for (const [key, { view, tools }] of touched) {
      const current = this.snapshotOf(view);
      for (const w of this.byView.get(key) ?? []) {
        if (w.told) continue;
        let differs = false;
        for (const name of tools) if (w.snapshot.get(name) !== current.get(name)) differs = true;
        if (!differs) continue;
        if (w.refreshOnNotify) w.snapshot = current;
        else w.told = true;
        w.notify();
      }
    }
  }

  private snapshotOf(view: DiscoveryView): Map<string, CatalogueVersion> {
    const hit = this.snapshots.get(view.key);
    if (hit && hit.revision === view.revision) return hit.snapshot;
    const snapshot = new Map(view.entries.map((v) => [v.name, v]));
    this.snapshots.set(view.key, { revision: view.revision, snapshot });
    return snapshot;
  }
}
