/**
 * tools/list (SPEC §3): the caller's precomputed discovery view, in pages, with an opaque cursor bound to the view's
 * revision. A view changes revision whenever its content changes, so a cursor from an older view cannot silently skip
 * or repeat a tool: it is refused (`cursor expired`) and the client lists again.
 */
import type { DiscoveryView } from '#projections/discovery';
import type { CatalogueVersion, VersionDetails } from '#projections/catalogue';
import { cursorExpired, invalidCursor } from './error-map.ts';
import { toMcpTool } from './tool-projection.ts';

interface CursorState {
  r: number;
  o: number;
}

export const encodeCursor = (c: CursorState): string => Buffer.from(JSON.stringify(c)).toString('base64url');

const decodeCursor = (cursor: unknown): CursorState => {
  if (typeof cursor !== 'string') throw invalidCursor();
  try {
    const v = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown;
    if (typeof v === 'object' && v !== null && Number.isSafeInteger((v as CursorState).r) && Number.isSafeInteger((v as CursorState).o) && (v as CursorState).o > 0) {
      return v as CursorState;
    }
  } catch {
    // fall through: not ours
  }
  throw invalidCursor();
};

export interface ListPage {
  result: Record<string, unknown>;
  /** The versions shown on this page (a session remembers them for unpinned calls). */
  shown: readonly CatalogueVersion[];
}

/** Where the page a cursor names starts: 0 without one; a cursor that is not ours, or of another revision, is refused. */
export const pageOffset = (view: DiscoveryView, cursor: unknown): number => {
  if (cursor === undefined) return 0;
  const c = decodeCursor(cursor);
  if (c.r !== view.revision) throw cursorExpired();
  return c.o;
};

/** The versions of the page at `offset` (from pageOffset): cut from the view at once, before their details are read. */
export const pageVersions = (view: DiscoveryView, offset: number, pageSize: number): CatalogueVersion[] => view.entries.slice(offset, offset + pageSize);

/** The page at `offset` (from pageOffset), of `shown` (pageVersions) with their details, in order. */
export const listToolsPage = (
  view: { revision: number; size: number },
  options: { revision: string; offset: number; shown: readonly CatalogueVersion[]; details: readonly VersionDetails[] },
): ListPage => {
  const { offset, shown, details } = options;
  const end = offset + shown.length;
  const result: Record<string, unknown> = { tools: shown.map((v, i) => toMcpTool(v, details[i] as VersionDetails, options.revision)) };
  if (end < view.size) result.nextCursor = encodeCursor({ r: view.revision, o: end });
  return { result, shown };
};
