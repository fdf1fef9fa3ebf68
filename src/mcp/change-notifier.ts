/**
 * "Your list changed", told only to those whose view changed compared with what they were last given (SPEC §3). The
 * reader reports which precomputed views changed for which tool; a watcher compares that with its own snapshot, so a
 * publish that a principal cannot see wakes nobody in that principal's sessions.
 */
import type { CatalogueReader, CatalogueUpdate } from '#app/catalogue-reader';
import type { Principal } from '#domain/types';
import type { CatalogueVersion } from '#projections/catalogue';

export interface ViewWatcher {
  /** Take the view as it is now as "what the client was last given" (call when a listing is served). */
  given(): void;
  close(): void;
}

interface Watch {
  key: string;
  /**
   * For each tool whose entry changed since the client was last given the view: its entry as given (undefined: not in
   * it). Only differences are held, so a change costs the tools it touched, never a copy of a view of 100,000 tools.
   */
  changed: Map<string, CatalogueVersion | undefined>;
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
  private readonly unsubscribe: () => void;

  constructor(private readonly reader: CatalogueReader) {
    this.unsubscribe = reader.onUpdate((u) => this.onUpdate(u));
  }

  watch(o: WatchOptions): ViewWatcher {
    const view = this.reader.discovery.view(o.principal, o.includeDeprecated);
    const w: Watch = { key: view.key, changed: new Map(), told: false, refreshOnNotify: o.refreshOnNotify ?? false, notify: o.notify };
    let set = this.byView.get(w.key);
    if (!set) this.byView.set(w.key, (set = new Set()));
    set.add(w);
    return {
      given: () => {
        w.changed.clear();
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
    const touched = new Set<Watch>();
    for (const c of u.viewChanges) {
      const watchers = this.byView.get(c.view.key);
      if (!watchers) continue;
      for (const w of watchers) {
        if (w.told) continue;
        // The first change since given: its `before` is the entry as given. A tool changed back is as given again.
        const given = w.changed.has(c.tool) ? w.changed.get(c.tool) : c.before;
        if (given === c.after) w.changed.delete(c.tool);
        else w.changed.set(c.tool, given);
        touched.add(w);
      }
    }
    for (const w of touched) {
      if (w.changed.size === 0) continue;
      if (w.refreshOnNotify) w.changed.clear();
      else w.told = true;
      w.notify();
    }
  }
}
