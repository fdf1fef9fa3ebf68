/**
 * tools/list pages serialized once. A page is a function of the caller's discovery view (precomputed per principal:
 * projections/discovery.ts), the view's revision, the protocol revision (which Tool fields it has) and the cursor; so
 * its JSON text is made the first time it is asked for and served as bytes until the view changes. Serializing a page
 * of 500 tools was most of a tools/list (issue 15).
 *
 * Bounded: per view object (held weakly, so a view the discovery index drops takes its pages along), only the pages of
 * its current revision are kept, one per protocol revision and cursor; a cursor is decoded before a page is looked up,
 * so only cursors of real pages of this revision get an entry.
 */
import type { DiscoveryView } from '#projections/discovery';
import { withJsonText } from './jsonrpc.ts';
import { SERVER_INFO_META } from './revisions.ts';
import { SERVER_INFO } from './server-info.ts';
import { listToolsPage, pageOffset, type ListPage } from './tools-list.ts';

export interface CachedPage extends ListPage {
  /** The page as a 2025 session's result (its JSON text attached: withJsonText). */
  readonly session: Record<string, unknown>;
  /** The page as a 2026-07-28 result: cache hints, `resultType` and the server named in `_meta`. */
  stateless(ttlMs: number): Record<string, unknown>;
}

interface ViewPages {
  revision: number;
  pages: Map<string, CachedPage>;
}

const cachedPage = (page: ListPage): CachedPage => {
  let stateless: { ttlMs: number; result: Record<string, unknown> } | undefined;
  return {
    ...page,
    session: withJsonText({ ...page.result }),
    stateless(ttlMs) {
      if (stateless?.ttlMs !== ttlMs) {
        const meta = { [SERVER_INFO_META]: { ...SERVER_INFO } };
        stateless = { ttlMs, result: withJsonText({ ...page.result, ttlMs, cacheScope: 'private', resultType: 'complete', _meta: meta }) };
      }
      return stateless.result;
    },
  };
};

export class ListPageCache {
  private readonly byView = new WeakMap<DiscoveryView, ViewPages>();

  /** The page at `cursor` (refused as listToolsPage refuses it: invalid, or of another revision), built at most once. */
  page(view: DiscoveryView, o: { revision: string; cursor?: unknown; pageSize: number }): CachedPage {
    const offset = pageOffset(view, o.cursor);
    let held = this.byView.get(view);
    if (held?.revision !== view.revision) this.byView.set(view, (held = { revision: view.revision, pages: new Map() }));
    const key = `${o.revision}\u0000${offset}\u0000${o.pageSize}`;
    let page = held.pages.get(key);
    if (!page) held.pages.set(key, (page = cachedPage(listToolsPage(view, { revision: o.revision, offset, pageSize: o.pageSize }))));
    return page;
  }
}
