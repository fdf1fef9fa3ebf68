/**
 * What a SQLite scan's worker (sqlite-scan-worker.ts) and the store that started it (sqlite-event-store.ts) share: the
 * row and the reads of the log both run, the job, and pages of rows in a form that is cheap to post between threads.
 */
import type { StoredEvent } from '#app/ports';

/** [position, stream_id, revision, type, data, recorded_at], read raw: arrays are cheaper than row objects. */
export type RawRow = [number, string, number, string, string, string];

export const COLUMNS = 'position, stream_id, revision, type, data, recorded_at';
/** The log after a position, a page: every stream (`?` after, limit). */
export const READ_AFTER = `SELECT ${COLUMNS} FROM events WHERE position > ? ORDER BY position LIMIT ?`;
/** The same under a stream prefix (`?` after, prefix length, prefix, limit): substr, not LIKE, so `tool_` is literal. */
export const READ_PREFIX_AFTER = `SELECT ${COLUMNS} FROM events WHERE position > ? AND substr(stream_id, 1, ?) = ? ORDER BY position LIMIT ?`;

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

/** A page as events: what the store's `toStored` makes of the same rows. */
export function fromPage({ data, numbers, names }: ScanPage): StoredEvent[] {
  const events = new Array<StoredEvent>(data.length);
  for (let i = 0; i < data.length; i++) {
    const o = i * ROW_WIDTH;
    events[i] = {
      position: String(numbers[o]),
      streamId: names[numbers[o + 2]!]!,
      revision: numbers[o + 1]!,
      type: names[numbers[o + 3]!]!,
      data: JSON.parse(data[i]!) as unknown,
      recordedAt: names[numbers[o + 4]!]!,
    };
  }
  return events;
}
