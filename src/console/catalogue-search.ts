/**
 * The console's catalogue search: a query parsed from the page's form, and a search over each tool's newest version
 * (any status) by name, title or description, namespace, classification, status and whether it is mirrored.
 *
 * Why an index. The search runs in the serving process, on the thread that answers MCP calls. Reading every tool's
 * record and text anew at each request cost a viewer's request ~9–13 ms at 10,000 tools (the records scattered over a
 * large heap: a Map lookup, a `split` and three `toLowerCase` copies per tool), so one viewer pressing enter in a
 * loop held the thread callers wait on for that long each time. The index keeps, per catalogue state, the tools in
 * name order with their namespaces, and, from the first search for text, all their text lower-cased in a few long
 * strings (SearchText): a request is then one search of those and one pass over flat arrays. It is made anew at the
 * first request after any event the catalogue applied, so it is never staler than the catalogue, and costs nothing in
 * a process nobody browses. Its text is about as long as the catalogue's names, titles and descriptions together
 * (775,670 characters for the console bench's 10,000 tools), held beside them while the catalogue stays as it is.
 */
import { CLASSIFICATIONS } from '#domain/types';
import type { CatalogueProjection, CatalogueTool, CatalogueVersion } from '#projections/catalogue';

export const PAGE_SIZE = 50;
export const STATUSES = ['active', 'deprecated', 'retired'] as const;

export interface CatalogueQuery {
  q: string;
  namespace: string;
  classification: string;
  status: string;
  upstream: '' | 'yes' | 'no';
  page: number;
}

export interface CatalogueSearchResult {
  /** How many tools match. */
  total: number;
  /** The newest version of each match on the asked page, in name order. */
  rows: CatalogueVersion[];
  /** Every namespace in the catalogue, sorted (the filter's choices). */
  namespaces: readonly string[];
}

const first = (v: string | null, max = 200): string => (v ?? '').slice(0, max).trim();

export const parseCatalogueQuery = (params: URLSearchParams): CatalogueQuery => {
  const page = Number(params.get('page') ?? '1');
  const upstream = first(params.get('upstream'));
  return {
    q: first(params.get('q')),
    namespace: first(params.get('namespace')),
    classification: (CLASSIFICATIONS as readonly string[]).includes(first(params.get('classification'))) ? first(params.get('classification')) : '',
    status: (STATUSES as readonly string[]).includes(first(params.get('status'))) ? first(params.get('status')) : '',
    upstream: upstream === 'yes' || upstream === 'no' ? upstream : '',
    page: Number.isInteger(page) && page >= 1 && page <= 1_000_000 ? page : 1,
  };
};

const namespaceOf = (name: string): string => {
  const dot = name.indexOf('.');
  return dot < 0 ? name : name.slice(0, dot);
};
const isUpstream = (v: CatalogueVersion): boolean => v.handler.startsWith('upstream:');
const newest = (tool: CatalogueTool): CatalogueVersion | undefined => tool.versions[tool.versions.length - 1];

/** Between a tool's fields in the search text, and after each tool's. */
const FIELD_END = '\u0000';
const TOOL_END = '\u0001';
const holdsSeparator = (s: string): boolean => s.includes(FIELD_END) || s.includes(TOOL_END);

/** At most this many characters of text in one string (V8 refuses strings past ~2^29; a chunk stays far below). */
const CHUNK_CHARS = 1 << 23;

/** Consecutive tools' parts joined, and where each part starts in `text`; `starts` has one more entry, the end. */
interface TextChunk {
  text: string;
  starts: Int32Array;
  /** The index (in name order) of the chunk's first tool. */
  firstTool: number;
}

/**
 * The tools' text, lower-cased: `name FIELD_END title FIELD_END description TOOL_END` per tool, in name order, joined
 * into strings of up to CHUNK_CHARS characters, with where each tool's part starts. One `indexOf` pass over each
 * finds every tool whose text holds a needle (strings scanned by the engine's own search, where a string per tool
 * costs a call and a memory fetch each: 1–6 ms at 10,000 tools, against ~0.4 ms for this). Each part is lower-cased
 * on its own, since lower-casing can change a text's length (U+0130 becomes two code units), so the starts are the
 * lower-cased parts' lengths.
 */
class SearchText {
  private readonly chunks: TextChunk[] = [];
  /** The tools whose own text holds a separator (a control character): the only ones a needle holding one can match. */
  private readonly withSeparators: number[] = [];

  constructor(private readonly tools: readonly CatalogueTool[]) {
    let parts: string[] = [];
    let starts: number[] = [];
    let length = 0;
    let firstTool = 0;
    const close = (next: number): void => {
      if (parts.length > 0) this.chunks.push({ text: parts.join(''), starts: Int32Array.from([...starts, length]), firstTool });
      parts = [];
      starts = [];
      length = 0;
      firstTool = next;
    };
    tools.forEach((t, i) => {
      const part = `${t.name}${FIELD_END}${t.title ?? ''}${FIELD_END}${t.description}${TOOL_END}`.toLowerCase();
      if (holdsSeparator(t.title ?? '') || holdsSeparator(t.description)) this.withSeparators.push(i);
      if (length > 0 && length + part.length > CHUNK_CHARS) close(i);
      starts.push(length);
      parts.push(part);
      length += part.length;
    });
    close(tools.length);
  }

  /** Marks each tool whose name, title or description holds `needle` (lower-cased). */
  mark(needle: string, into: Uint8Array): void {
    if (holdsSeparator(needle)) {
      // In the joined text such a needle could match across two fields: each field of the few tools that hold a
      // separator themselves, on its own (names never hold one).
      for (const i of this.withSeparators) {
        const t = this.tools[i] as CatalogueTool;
        if ([t.title ?? '', t.description].some((s) => s.toLowerCase().includes(needle))) into[i] = 1;
      }
      return;
    }
    for (const { text, starts, firstTool } of this.chunks) {
      let from = 0;
      for (;;) {
        const at = text.indexOf(needle, from);
        if (at < 0) break;
        // The part that holds `at`: the last start at or before it.
        let lo = 0;
        let hi = starts.length - 2;
        while (lo < hi) {
          const mid = (lo + hi + 1) >> 1;
          if ((starts[mid] as number) <= at) lo = mid;
          else hi = mid - 1;
        }
        into[firstTool + lo] = 1;
        from = starts[lo + 1] as number;
      }
    }
  }
}

/** What the search reads, for one state of one catalogue. */
class SearchIndex {
  readonly namespaceOf: readonly string[];
  readonly namespaces: readonly string[];
  private searchText?: SearchText;

  constructor(
    readonly state: string,
    readonly tools: readonly CatalogueTool[],
  ) {
    this.namespaceOf = tools.map((t) => namespaceOf(t.name));
    this.namespaces = [...new Set(this.namespaceOf)].sort();
  }

  /** 1 for each tool whose name, title or description holds `needle` (already lower-cased), 0 for the others. */
  holding(needle: string): Uint8Array {
    const marks = new Uint8Array(this.tools.length);
    // Made at the first search for text, held until the catalogue changes.
    this.searchText ??= new SearchText(this.tools);
    this.searchText.mark(needle, marks);
    return marks;
  }
}

const indexes = new WeakMap<CatalogueProjection, SearchIndex>();

/** Every event the catalogue applies (or a restore it adopts) moves its count or its position. */
const stateOf = (catalogue: CatalogueProjection): string => `${catalogue.eventCount}@${catalogue.position ?? ''}`;

const indexOf = (catalogue: CatalogueProjection): SearchIndex => {
  const state = stateOf(catalogue);
  let index = indexes.get(catalogue);
  if (index?.state !== state) {
    index = new SearchIndex(state, catalogue.sortedTools());
    indexes.set(catalogue, index);
  }
  return index;
};

/** Server-side search and filters over each tool's newest version (any status); one page of results and the total. */
export const searchCatalogue = (catalogue: CatalogueProjection, q: CatalogueQuery): CatalogueSearchResult => {
  const index = indexOf(catalogue);
  const { tools } = index;
  const start = (q.page - 1) * PAGE_SIZE;
  const page = (matches: readonly CatalogueTool[]): CatalogueVersion[] =>
    matches.slice(start, start + PAGE_SIZE).flatMap((t) => {
      const v = newest(t);
      return v ? [v] : [];
    });
  const filtered = q.q !== '' || q.namespace !== '' || q.classification !== '' || q.status !== '' || q.upstream !== '';
  if (!filtered) return { total: tools.length, rows: page(tools), namespaces: index.namespaces };

  const text = q.q ? index.holding(q.q.toLowerCase()) : undefined;
  const hits: CatalogueTool[] = [];
  for (let i = 0; i < tools.length; i++) {
    if (text && text[i] === 0) continue;
    if (q.namespace && index.namespaceOf[i] !== q.namespace) continue;
    const tool = tools[i] as CatalogueTool;
    const v = newest(tool);
    if (!v) continue;
    if (q.classification && v.access.classification !== q.classification) continue;
    if (q.status && v.status !== q.status) continue;
    if (q.upstream && isUpstream(v) !== (q.upstream === 'yes')) continue;
    hits.push(tool);
  }
  return { total: hits.length, rows: page(hits), namespaces: index.namespaces };
};
