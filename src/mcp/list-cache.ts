/**
 * tools/list pages serialized once. A page is a function of the caller's discovery view (precomputed per principal:
 * projections/discovery.ts), the view's revision, the protocol revision (which Tool fields it has) and the cursor; so
 * its JSON is made the first time it is asked for and served as those bytes until the view changes. Serializing a page
 * of 500 tools was most of a tools/list (issue 15).
 *
 * Bounded: per view object (held weakly, so a view the discovery index drops takes its pages along), only the pages of
 * its current revision are kept, one per protocol revision and cursor, at most PAGES_PER_VIEW of them (least recently
 * used out); a cursor is decoded before a page is looked up, so only cursors of real pages of this revision get an entry.
 * A page is kept from the second time it is asked for at a revision, not the first, and only a kept page is made into
 * bytes: a client walking every page of a large view asks for each once, and each is serialized once as it is written
 * (JSON text, encoded by the socket write), where each used to leave its ~230 KiB buffer outside the heap, counted by
 * no heap growth, until a full collection (up to ~45 MiB over a walk of 100,000 tools). A page many clients ask for
 * (the first, a small view's only one) is built twice instead of once per revision; a page that went out of the
 * cache is asked for twice again before it is kept again.
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
  /** Keys asked for once at this revision and not kept (yet): at most ASKED_PER_VIEW, the oldest out. */
  asked: Set<string>;
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

/** A page asked for once: its objects as they are, serialized by whatever writes it (and then garbage). */
const uncachedPage = (page: ListPage): CachedPage => ({
  shown: page.shown,
  result: page.result,
  session: page.result,
  stateless: (ttlMs) => Object.assign({}, page.result, { ttlMs, cacheScope: 'private', resultType: 'complete', _meta: { [SERVER_INFO_META]: { ...SERVER_INFO } } }),
});

/**
 * Pages kept per view (its current revision), least recently used out: a view of 100,000 tools has 200 pages, and a
 * client walking them all must not leave the whole catalogue's JSON behind.
 */
export const PAGES_PER_VIEW = 16;

/** Keys remembered per view as asked for once (a key is ~20 characters): enough for a view of 100,000 tools twice. */
export const ASKED_PER_VIEW = 512;

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
    const built = listToolsPage({ revision, size }, { revision: o.revision, offset, shown, details: await details(shown) });
    if (view.revision !== revision) return uncachedPage(built);
    let pages = this.byView.get(view);
    if (pages?.revision !== revision) this.byView.set(view, (pages = { revision, pages: new Map(), asked: new Set() }));
    if (!pages.asked.delete(key)) {
      pages.asked.add(key);
      if (pages.asked.size > ASKED_PER_VIEW) pages.asked.delete(pages.asked.values().next().value as string);
      return uncachedPage(built);
    }
    const page = cachedPage(built);
    pages.pages.set(key, page);
    if (pages.pages.size > this.pagesPerView) pages.pages.delete(pages.pages.keys().next().value as string);
    return page;
  }
}
