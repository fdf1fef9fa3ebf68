/**
 * What a SQLite scan's worker (sqlite-scan-worker.ts) and the store that started it (sqlite-event-store.ts) share: the
 * row and the reads of the log both run, the job, and pages of rows in a form that is cheap to post between threads.
 */
import type Database from 'better-sqlite3';
import type { StoredEvent } from '#app/ports';

/** [position, stream_id, revision, type, data, recorded_at], read raw: arrays are cheaper than row objects. */
export type RawRow = [number, string, number, string, string, string];

export const COLUMNS = 'position, stream_id, revision, type, data, recorded_at';
/** The log after a position, a page: every stream (`?` after, limit). */
export const READ_AFTER = `SELECT ${COLUMNS} FROM events WHERE position > ? ORDER BY position LIMIT ?`;
/**
 * Stream kinds read by prefix from a position, each with an index of its own, of its rows' positions only: the
 * catalogue's (the domain's TOOL_STREAM_PREFIX: a replica's catch-up on a bus announcement, the lag in /metrics, the
 * tail after a snapshot) and the upstreams' (the registered namespaces, read at every scrape and console page). Such a
 * read goes straight to the kind's next event instead of passing over every call record written since its last one
 * (200,000 of them: 100-130 ms of the serving thread a read, and a busy estate writes millions a day). Partial: a call
 * record's insert never touches them.
 */
export const INDEXED_PREFIXES: Readonly<Record<string, string>> = { 'tool-': 'events_catalogue', 'upstream-': 'events_upstreams' };
export const PREFIX_INDEXES = Object.entries(INDEXED_PREFIXES)
  .map(([prefix, index]) => `CREATE INDEX IF NOT EXISTS ${index} ON events (position) WHERE substr(stream_id, 1, ${prefix.length}) = '${prefix}';`)
  .join('\n');

/** A page of rows after a position and up to another, under a prefix. */
export type PrefixPage = (prefix: string, after: number, upTo: number, limit: number) => RawRow[];

/**
 * The prefix reads of a connection, prepared once: an indexed kind's by its index (the literal prefix is what lets
 * SQLite use a partial index), any other prefix in the log's order (substr, not LIKE, so `tool_` is literal).
 */
export const prefixPages = (db: Database.Database): PrefixPage => {
  const indexed = new Map(
    Object.entries(INDEXED_PREFIXES).map(([prefix, index]) => [
      prefix,
      db
        .prepare<[number, number, number], RawRow>(
          `SELECT ${COLUMNS} FROM events INDEXED BY ${index}
           WHERE substr(stream_id, 1, ${prefix.length}) = '${prefix}' AND position > ? AND position <= ? ORDER BY position LIMIT ?`,
        )
        .raw(true),
    ]),
  );
  const some = db
    .prepare<[number, number, number, string, number], RawRow>(
      `SELECT ${COLUMNS} FROM events WHERE position > ? AND position <= ? AND substr(stream_id, 1, ?) = ? ORDER BY position LIMIT ?`,
    )
    .raw(true);
  return (prefix, after, upTo, limit) => indexed.get(prefix)?.all(after, upTo, limit) ?? some.all(after, upTo, prefix.length, prefix, limit);
};

export interface ScanJob {
  file: string;
  after: number;
  /** '' for every stream. */
  prefix: string;
  pageSize: number;
  ahead: number;
}

/**
 * A page as posted: every row's JSON text in `data`; its position, revision and the indexes in `names` of its stream
 * id, type and recorded time in `numbers` (ROW_WIDTH a row). A page's stream ids, types and times repeat (five events
 * of one tool, one commit's time), and each string posted is one more for the consumer's thread to make: the names go
 * once a page. The last page is shorter than `pageSize`, maybe empty.
 */
export interface ScanPage {
  data: string[];
  numbers: Float64Array;
  names: string[];
  last: boolean;
}
export const ROW_WIDTH = 5;

/** What the worker posts: a page, or why it stopped. */
export type ScanMessage = ScanPage | { error: string; code?: string };

export const toPage = (rows: RawRow[], last: boolean): { page: ScanPage; transfer: ArrayBuffer[] } => {
  const numbers = new Float64Array(rows.length * ROW_WIDTH);
  const data: string[] = new Array<string>(rows.length);
  const names: string[] = [];
  const index = new Map<string, number>();
  const name = (s: string): number => {
    let i = index.get(s);
    if (i === undefined) {
      i = names.push(s) - 1;
      index.set(s, i);
    }
    return i;
  };
  rows.forEach((r, i) => {
    const o = i * ROW_WIDTH;
    numbers[o] = r[0];
    numbers[o + 1] = r[2];
    numbers[o + 2] = name(r[1]);
    numbers[o + 3] = name(r[3]);
    numbers[o + 4] = name(r[5]);
    data[i] = r[4];
  });
  return { page: { data, numbers, names, last }, transfer: [numbers.buffer] };
};

/**
 * An event's data, parsed. The column is TEXT, so a row written around the store (by hand, with SQL) can hold what is
 * not JSON: the error names the event, where the parser's own ("Unexpected end of JSON input") named nothing.
 */
export const parseData = (text: string, position: number, streamId: string, revision: number): unknown => {
  try {
    return JSON.parse(text) as unknown;
  } catch (e) {
    throw new SyntaxError(`sqlite store: the event at position ${position} (${streamId}@${revision}) holds data that is not JSON: ${(e as Error).message}`);
  }
};

/** A page as events: what the store's `toStored` makes of the same rows. */
export function fromPage({ data, numbers, names }: ScanPage): StoredEvent[] {
  const events = new Array<StoredEvent>(data.length);
  for (let i = 0; i < data.length; i++) {
    const o = i * ROW_WIDTH;
    const streamId = names[numbers[o + 2]!]!;
    events[i] = {
      position: String(numbers[o]),
      streamId,
      revision: numbers[o + 1]!,
      type: names[numbers[o + 3]!]!,
      data: parseData(data[i]!, numbers[o]!, streamId, numbers[o + 1]!),
      recordedAt: names[numbers[o + 4]!]!,
    };
  }
  return events;
}
