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

export interface ListOptions {
  revision: string;
  cursor?: unknown;
  pageSize: number;
  /** The shown versions' details, in order (the reader's: held, cached or read from the store). */
  details: (vs: readonly CatalogueVersion[]) => Promise<VersionDetails[]>;
}

/** The page is cut from the view at once (a change while the details are read cannot shift it). */
export const listToolsPage = async (view: DiscoveryView, options: ListOptions): Promise<ListPage> => {
  let offset = 0;
  if (options.cursor !== undefined) {
    const c = decodeCursor(options.cursor);
    if (c.r !== view.revision) throw cursorExpired();
    offset = c.o;
  }
  const shown = view.entries.slice(offset, offset + options.pageSize);
  const end = offset + shown.length;
  const more = end < view.entries.length;
  const revision = view.revision;
  const details = await options.details(shown);
  const result: Record<string, unknown> = { tools: shown.map((v, i) => toMcpTool(v, details[i] as VersionDetails, options.revision)) };
  if (more) result.nextCursor = encodeCursor({ r: revision, o: end });
  return { result, shown };
};
