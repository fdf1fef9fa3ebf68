/**
 * tools/list pages serialized once. A page is a function of the caller's discovery view (precomputed per principal:
 * projections/discovery.ts), the view's revision, the protocol revision (which Tool fields it has) and the cursor; so
 * its JSON is made the first time it is asked for and served as those bytes until the view changes. Serializing a page
 * of 500 tools was most of a tools/list (issue 15).
 *
 * Bounded: per view object (held weakly, so a view the discovery index drops takes its pages along), only the pages of
 * its current revision are kept, one per protocol revision and cursor, at most PAGES_PER_VIEW of them (least recently
 * used out); a cursor is decoded before a page is looked up, so only cursors of real pages of this revision get an entry.
 * A page's versions' details are read (from the store, when the reader does not hold them) only when it is built.
 */
import type { CatalogueVersion, VersionDetails } from '#projections/catalogue';
import type { DiscoveryView } from '#projections/discovery';
import { withJsonBytes } from './jsonrpc.ts';
import { SERVER_INFO_META } from './revisions.ts';
import { SERVER_INFO } from './server-info.ts';
import { listToolsPage, pageOffset, pageVersions, type ListPage } from './tools-list.ts';

export interface CachedPage extends ListPage {
  /** The page as a 2025 session's result (its JSON bytes attached: withJsonBytes); `result` is the same object. */
  readonly session: Record<string, unknown>;
  /** The page as a 2026-07-28 result: cache hints, `resultType` and the server named in `_meta`. */
  stateless(ttlMs: number): Record<string, unknown>;
}

interface ViewPages {
  revision: number;
  pages: Map<string, CachedPage>;
}

/**
 * A page's result held as its JSON bytes, not as the objects it was serialized from: `tools` is parsed from the bytes
 * whenever something reads it (what serializes the object itself: stdio, a batch, the SDK transport), and not kept;
 * responseBody writes the bytes. A cached page that held its 500 Tools held their schemas and text with them: over a
 * client's walk of 100,000 tools that was ~55 MiB promoted to the old generation (the pages outlive young-generation
 * collections: PAGES_PER_VIEW are kept) and left there until a full collection. Parsing JSON.stringify's own output
 * and serializing it again gives the same text, so the object serializes to exactly its bytes.
 */
const resultOfBytes = (bytes: Buffer, rest: Record<string, unknown>): Record<string, unknown> => {
  const result: Record<string, unknown> = {};
  Object.defineProperty(result, 'tools', { enumerable: true, get: () => (JSON.parse(bytes.toString('utf8')) as { tools: unknown }).tools });
  return withJsonBytes(Object.assign(result, rest), bytes);
};

const cachedPage = (page: ListPage): CachedPage => {
  const { tools: _tools, ...rest } = page.result;
  const bytes = Buffer.from(JSON.stringify(page.result));
  const session = resultOfBytes(bytes, rest);
  let stateless: { ttlMs: number; result: Record<string, unknown> } | undefined;
  return {
    shown: page.shown,
    result: session,
    session,
    stateless(ttlMs) {
      if (stateless?.ttlMs !== ttlMs) {
        const meta = { [SERVER_INFO_META]: { ...SERVER_INFO } };
        const more = { ttlMs, cacheScope: 'private', resultType: 'complete', _meta: meta };
        // The session's JSON with these members after its own: what serializing {...result, ...more} writes.
        const tail = Buffer.from(`,${JSON.stringify(more).slice(1)}`);
        stateless = { ttlMs, result: resultOfBytes(Buffer.concat([bytes.subarray(0, bytes.length - 1), tail]), { ...rest, ...more }) };
      }
      return stateless.result;
    },
  };
};

/**
 * Pages kept per view (its current revision), least recently used out: a view of 100,000 tools has 200 pages, and a
 * client walking them all must not leave the whole catalogue's JSON behind.
 */
export const PAGES_PER_VIEW = 16;

export class ListPageCache {
  private readonly byView = new WeakMap<DiscoveryView, ViewPages>();

  constructor(private readonly pagesPerView = PAGES_PER_VIEW) {}

  /**
   * The page at `cursor` (refused as pageOffset refuses it: invalid, or of another revision), built at most once per
   * revision while it stays cached; `details` reads the shown versions' details (a serving reader does not hold them).
   */
  async page(
    view: DiscoveryView,
    o: { revision: string; cursor?: unknown; pageSize: number },
    details: (vs: readonly CatalogueVersion[]) => Promise<VersionDetails[]>,
  ): Promise<CachedPage> {
    const offset = pageOffset(view, o.cursor);
    const key = `${o.revision}\u0000${offset}\u0000${o.pageSize}`;
    const held = this.byView.get(view);
    const hit = held?.revision === view.revision ? held.pages.get(key) : undefined;
    if (hit) {
      held?.pages.delete(key);
      held?.pages.set(key, hit);
      return hit;
    }
    // Cut from the view now: a change while the details are read cannot shift the page (its cursor names this revision).
    const revision = view.revision;
    const size = view.entries.length;
    const shown = pageVersions(view, offset, o.pageSize);
    const page = cachedPage(listToolsPage({ revision, size }, { revision: o.revision, offset, shown, details: await details(shown) }));
    if (view.revision === revision) {
      let pages = this.byView.get(view);
      if (pages?.revision !== revision) this.byView.set(view, (pages = { revision, pages: new Map() }));
      pages.pages.set(key, page);
      if (pages.pages.size > this.pagesPerView) pages.pages.delete(pages.pages.keys().next().value as string);
    }
    return page;
  }
}
