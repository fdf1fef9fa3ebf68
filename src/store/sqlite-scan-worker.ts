/**
 * The worker thread of a long SQLite scan (`SqliteEventStore.scan`): it reads pages of raw rows on a read-only
 * connection of its own and posts them, at most `ahead` pages before the consumer asks for more, so reading the file
 * and parsing and folding the events run on two cores. It only reads; the rows' JSON is parsed by the consumer.
 */
import { parentPort, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';
import { prefixPages, READ_AFTER, toPage, type RawRow, type ScanJob, type ScanMessage } from './sqlite-scan-page.ts';

const job = workerData as ScanJob;
const port = parentPort;
if (!port) throw new Error('sqlite-scan-worker: not started as a worker thread');

let read: ((after: number) => RawRow[]) | undefined;
let db: Database.Database | undefined;
let credit = job.ahead;
let after = job.after;
let done = false;

const open = (): ((after: number) => RawRow[]) => {
  db = new Database(job.file, { readonly: true, fileMustExist: true });
  if (job.prefix === '') {
    const all = db.prepare<[number, number], RawRow>(READ_AFTER).raw(true);
    return (from) => all.all(from, job.pageSize);
  }
  const some = prefixPages(db);
  return (from) => some(job.prefix, from, Number.MAX_SAFE_INTEGER, job.pageSize);
};

const pump = (): void => {
  try {
    read ??= open();
    while (credit > 0 && !done) {
      const rows = read(after);
      credit--;
      // A page shorter than asked for is the end of what this connection sees (the LIMIT was not reached).
      done = rows.length < job.pageSize;
      if (rows.length > 0) after = rows[rows.length - 1]![0];
      const { page, transfer } = toPage(rows, done);
      port.postMessage(page satisfies ScanMessage, transfer);
    }
  } catch (e) {
    done = true;
    const code = (e as { code?: unknown }).code;
    port.postMessage({ error: e instanceof Error ? e.message : String(e), ...(typeof code === 'string' ? { code } : {}) } satisfies ScanMessage);
  }
  if (done) {
    db?.close();
    port.close();
  }
};

port.on('message', () => {
  credit++;
  pump();
});
pump();
