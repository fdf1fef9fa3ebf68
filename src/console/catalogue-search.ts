/**
 * The console's catalogue search: a query parsed from the page's form, and a search over each tool's newest version
 * (any status) by name, title or description, namespace, classification, status and whether it is mirrored.
 *
 * Why an index. The search runs in the serving process, on the thread that answers MCP calls. Reading every tool's
 * record and text anew at each request cost a viewer's request ~9–13 ms at 10,000 tools (the records scattered over a
 * large heap: a Map lookup, a `split` and three `toLowerCase` copies per tool), so one viewer pressing enter in a
 * loop held the thread callers wait on for that long each time. The index keeps, per catalogue state, the tools in
 * name order with their namespaces, and, from the first search for text, all their text lower-cased in chunks of
 * ~512 tools (SearchText): a request is then one `indexOf` pass per chunk and one pass over flat arrays. It is made
 * at the first request after any event the catalogue applied (taking over the chunks the event left as they were), so
 * it is never staler than the catalogue, and costs nothing in a process nobody browses. Its text is about as long as the catalogue's names, titles and descriptions together
 * (775,670 characters for the console bench's 10,000 tools), held beside them while the catalogue stays as it is.
 */
import { toolNamespace } from '#domain/tool-definition';
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

const isUpstream = (v: CatalogueVersion): boolean => v.handler.startsWith('upstream:');
const newest = (tool: CatalogueTool): CatalogueVersion | undefined => tool.versions[tool.versions.length - 1];

/** Between a tool's fields in the search text, and after each tool's. */
const FIELD_END = '\u0000';
const TOOL_END = '\u0001';
const holdsSeparator = (s: string): boolean => s.includes(FIELD_END) || s.includes(TOOL_END);

/**
 * Where the text is cut into chunks: after a tool whose name hashes to 0 modulo CHUNK_TOOLS, so a chunk holds ~512
 * tools and where it ends depends only on the names in it (a change re-makes the chunk it falls in, never its
 * neighbours, and changes one at a time cannot leave the text in ever smaller pieces); and at the latest after
 * 4 x CHUNK_TOOLS tools or CHUNK_CHARS characters, so a chunk's string stays far below what V8 allows (~2^29).
 */
const CHUNK_TOOLS = 512;
const CHUNK_CHARS = 1 << 23;
const endsChunk = (name: string): boolean => {
  // FNV-1a, 32 bits, then MurmurHash3's finalizer: FNV's low bits alone follow the names' low bits too closely.
  let h = 0x811c9dc5;
  for (let i = 0; i < name.length; i++) h = Math.imul(h ^ name.charCodeAt(i), 0x01000193);
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return ((h ^ (h >>> 16)) >>> 0) % CHUNK_TOOLS === 0;
};

/**
 * Consecutive tools' text, lower-cased and joined: `name FIELD_END title FIELD_END description TOOL_END` per tool,
 * with where each tool's part starts (`starts` has one more entry, the end). Each part is lower-cased on its own,
 * since lower-casing can change a text's length (U+0130 becomes two code units), so the starts are the lower-cased
 * parts'. A chunk is immutable and keeps the title and description it was made from, so a later index can take it
 * over as long as its tools still read the same.
 */
class TextChunk {
  readonly text: string;
  readonly starts: Int32Array;
  private readonly titles: (string | undefined)[];
  private readonly descriptions: string[];
  /** Offsets (within the chunk) of the tools whose title or description holds a separator (a control character). */
  readonly withSeparators: number[] = [];

  constructor(readonly tools: readonly CatalogueTool[]) {
    const parts = tools.map((t) => `${t.name}${FIELD_END}${t.title ?? ''}${FIELD_END}${t.description}${TOOL_END}`.toLowerCase());
    this.starts = new Int32Array(tools.length + 1);
    parts.forEach((part, i) => (this.starts[i + 1] = (this.starts[i] as number) + part.length));
    this.text = parts.join('');
    this.titles = tools.map((t) => t.title);
    this.descriptions = tools.map((t) => t.description);
    tools.forEach((t, i) => {
      if (holdsSeparator(t.title ?? '') || holdsSeparator(t.description)) this.withSeparators.push(i);
    });
  }

  /** Whether `tools` from `at` on are this chunk's tools, reading as they did when it was made. */
  still(tools: readonly CatalogueTool[], at: number): boolean {
    if (at + this.tools.length > tools.length) return false;
    return this.tools.every((t, i) => tools[at + i] === t && t.title === this.titles[i] && t.description === this.descriptions[i]);
  }
}

/**
 * The tools' text for one catalogue state, as chunks in name order. One `indexOf` pass over each chunk finds every
 * tool whose text holds a needle (strings scanned by the engine's own search, where a string per tool costs a call and
 * a memory fetch each: 1–6 ms at 10,000 tools, against ~0.4 ms for this). Made after a change from the last state's
 * chunks: a chunk whose tools are the same and read the same is taken over, and only the chunk a change fell in (a
 * tool's new text, a new tool) is made again, so a change costs the next search one chunk's lower-casing, not the
 * whole catalogue's (at 100,000 tools, ad hoc: the first search after a change ~36–62 ms where making every chunk
 * cost ~200).
 */
class SearchText {
  /** Each chunk, with the index (in name order) of its first tool. */
  private readonly placed: { chunk: TextChunk; first: number }[] = [];
  /** How many tools' text was lower-cased anew for this state (the others' chunks were taken over). */
  madeAnew = 0;

  constructor(tools: readonly CatalogueTool[], previous?: SearchText) {
    const reusable = new Map<CatalogueTool, TextChunk>();
    for (const { chunk } of previous?.placed ?? []) reusable.set(chunk.tools[0] as CatalogueTool, chunk);
    let fresh: CatalogueTool[] = [];
    let freshChars = 0;
    const flush = (at: number): void => {
      if (fresh.length > 0) this.placed.push({ chunk: new TextChunk(fresh), first: at - fresh.length });
      this.madeAnew += fresh.length;
      fresh = [];
      freshChars = 0;
    };
    for (let i = 0; i < tools.length; ) {
      const tool = tools[i] as CatalogueTool;
      const old = reusable.get(tool);
      if (old?.still(tools, i)) {
        flush(i);
        this.placed.push({ chunk: old, first: i });
        i += old.tools.length;
        continue;
      }
      const chars = tool.name.length + (tool.title?.length ?? 0) + tool.description.length + 3;
      if (fresh.length === 4 * CHUNK_TOOLS || (fresh.length > 0 && freshChars + chars > CHUNK_CHARS)) flush(i);
      fresh.push(tool);
      freshChars += chars;
      i++;
      if (endsChunk(tool.name)) flush(i);
    }
    flush(tools.length);
  }

  /** Marks each tool whose name, title or description holds `needle` (lower-cased). */
  mark(needle: string, into: Uint8Array): void {
    const separated = holdsSeparator(needle);
    for (const { chunk, first } of this.placed) {
      if (separated) {
        // In the joined text such a needle could match across two fields: each field of the few tools that hold a
        // separator themselves, on its own (names never hold one).
        for (const i of chunk.withSeparators) {
          const t = chunk.tools[i] as CatalogueTool;
          if ([t.title ?? '', t.description].some((s) => s.toLowerCase().includes(needle))) into[first + i] = 1;
        }
        continue;
      }
      const { text, starts } = chunk;
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
        into[first + lo] = 1;
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
    /** The text of the state before, if it was made: what this state's text takes over chunk by chunk. */
    private previousText?: SearchText,
  ) {
    this.namespaceOf = tools.map((t) => toolNamespace(t.name));
    this.namespaces = [...new Set(this.namespaceOf)].sort();
  }

  /** This state's text, made at its first search for text; or the last state's, while this one has none. */
  get text(): SearchText | undefined {
    return this.searchText ?? this.previousText;
  }

  /** 1 for each tool whose name, title or description holds `needle` (already lower-cased), 0 for the others. */
  holding(needle: string): Uint8Array {
    const marks = new Uint8Array(this.tools.length);
    if (!this.searchText) {
      this.searchText = new SearchText(this.tools, this.previousText);
      this.previousText = undefined;
    }
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
    index = new SearchIndex(state, catalogue.sortedTools(), index?.text);
    indexes.set(catalogue, index);
  }
  return index;
};

/** How many tools' text the catalogue's last text search lower-cased anew (tests: a change re-makes one chunk). */
export const searchTextMadeAnew = (catalogue: CatalogueProjection): number | undefined => indexes.get(catalogue)?.text?.madeAnew;

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
