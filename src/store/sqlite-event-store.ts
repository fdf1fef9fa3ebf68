/**
 * SqliteEventStore: the embedded default. One file, WAL, `synchronous=FULL` (a call record is durable before its
 * result returns). Appends run in `BEGIN IMMEDIATE`, which takes the write lock before the revision check, so the
 * check and the insert are atomic across every process sharing the file; the others wait up to the busy timeout, off
 * the thread (./sqlite-busy.ts): an append that finds the file locked is retried whole from timers, and later appends
 * of this store wait behind it, in order.
 */
import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import Database from 'better-sqlite3';
import {
  ConcurrencyError,
  type AppendRequest,
  type AppendResult,
  type EventStore,
  type LogPage,
  type ReadAllOptions,
  type ScanOptions,
  type StoredEvent,
  type SubscribeOptions,
  type Subscription,
} from '#app/ports';
import { startModuleWorker } from '#app/module-worker';
import { checkExpectedRevision } from './expected-revision.ts';
import { COLUMNS, fromPage, parseData, prefixPages, PREFIX_INDEXES, READ_AFTER, type RawRow, type ScanJob, type ScanMessage } from './sqlite-scan-page.ts';
import { BUSY_SPIN_MS, DEFAULT_BUSY_TIMEOUT_MS, isBusy, whenFree, writeQueue } from './sqlite-busy.ts';
import { createSqliteSnapshots } from './sqlite-snapshots.ts';
import { checkExternalCommits, releaseWakes, wakeLocal, wakesOf, watchWal, type Wake } from './sqlite-wakes.ts';
import { OpenSubscriptions, tailSubscription } from './tail-subscription.ts';

export interface SqliteEventStoreOptions {
  /** The database file; its directory is created if missing. */
  path: string;
  /**
   * How often a subscription re-reads when idle. Other processes' appends wake it through a watch on the WAL file, so
   * this is only the fallback for a missed or unavailable watch: default 1000 ms (50 ms where no watch can be set).
   */
  pollIntervalMs?: number;
  /**
   * How long a statement waits for another connection's lock before failing (SQLITE_BUSY). Default 30 s. The wait is
   * spent on timers, not on the thread, except at open (creating the schema), when nothing is being served yet.
   */
  busyTimeoutMs?: number;
  /**
   * A scan with at least this many positions ahead of it reads on a worker thread of its own. Default 100,000; 0
   * always, Infinity never. The thread saves ~10% of a long replay, and starting one costs: its first page came after
   * 86-105 ms on a busy 2-core machine (196 ms the first time), a page read here after 7-14 ms.
   */
  scanThreadMinRows?: number;
}

const DEFAULT_LIMIT = 1000;
const DEFAULT_SCAN_THREAD_MIN_ROWS = 100_000;
/** Pages a scan's worker reads ahead of its consumer (each up to `limit` rows). */
const SCAN_AHEAD = 4;

/**
 * `position` is the rowid: one more than the largest so far, since no event is ever deleted. Not AUTOINCREMENT, which
 * only adds a guarantee for deleted rows and costs every commit one more page (its sequence table) to write and fsync.
 * A store created with AUTOINCREMENT (before this) keeps it, and works the same.
 */
const SCHEMA = `
  CREATE TABLE IF NOT EXISTS events (
    position    INTEGER PRIMARY KEY,
    stream_id   TEXT    NOT NULL,
    revision    INTEGER NOT NULL,
    type        TEXT    NOT NULL,
    data        TEXT    NOT NULL,
    recorded_at TEXT    NOT NULL,
    UNIQUE (stream_id, revision)
  );
  ${PREFIX_INDEXES}
`;


/** The durability settings of a store's own connection (PRAGMAs are per connection: only it can answer them). */
export interface SqliteDurability {
  journalMode: string;
  /** 0 OFF, 1 NORMAL, 2 FULL, 3 EXTRA. */
  synchronous: number;
}

export function createSqliteEventStore(options: SqliteEventStoreOptions): EventStore & { durability(): SqliteDurability } {
  const file = resolve(options.path);
  mkdirSync(dirname(file), { recursive: true });

  const busyTimeoutMs = options.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS;
  const db = new Database(file, { timeout: busyTimeoutMs });
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  // Several processes may open a fresh file together; IMMEDIATE makes them take turns creating the schema.
  db.transaction(() => db.exec(SCHEMA)).immediate();
  // From here on a locked file is waited for on timers (./sqlite-busy.ts), never more than a moment on the thread.
  db.pragma(`busy_timeout = ${BUSY_SPIN_MS}`);

  const headStmt = db.prepare<[string], { head: number | null }>(
    'SELECT MAX(revision) AS head FROM events WHERE stream_id = ?',
  );
  const insertStmt = db.prepare<[string, number, string, string, string]>(
    'INSERT INTO events (stream_id, revision, type, data, recorded_at) VALUES (?, ?, ?, ?, ?)',
  );
  // LIMIT -1: no limit.
  const readStreamStmt = db
    .prepare<[string, number, number], RawRow>(
      `SELECT ${COLUMNS} FROM events WHERE stream_id = ? AND revision >= ? ORDER BY revision LIMIT ?`,
    )
    .raw(true);
  const readStreamBackStmt = db
    .prepare<[string, number, number], RawRow>(
      `SELECT ${COLUMNS} FROM events WHERE stream_id = ? AND revision <= ? ORDER BY revision DESC LIMIT ?`,
    )
    .raw(true);
  const readAllStmt = db.prepare<[number, number], RawRow>(READ_AFTER).raw(true);
  const prefixRows = prefixPages(db);
  /** One page after a position; '' for every stream. */
  const rowsAfter = (after: number, prefix: string, limit: number): RawRow[] =>
    prefix === '' ? readAllStmt.all(after, limit) : prefixRows(prefix, after, Number.MAX_SAFE_INTEGER, limit);

  // The first stream id at or after a prefix (the UNIQUE index's order): if it does not start with the prefix, no stream
  // does, and a prefix read need not scan the log (a server's upstream registry on a store of only tools and runs).
  const firstStreamFromStmt = db.prepare<[string], { stream_id: string }>('SELECT stream_id FROM events WHERE stream_id >= ? ORDER BY stream_id LIMIT 1');
  const anyStreamWith = (prefix: string): boolean => firstStreamFromStmt.get(prefix)?.stream_id.startsWith(prefix) === true;
  const nextStreamStmt = db.prepare<[string], { stream_id: string }>('SELECT stream_id FROM events WHERE stream_id > ? ORDER BY stream_id LIMIT 1');
  /** The streams under a prefix, one index step each (the UNIQUE index's order is the ids' byte order). */
  const streamIdsWith = (prefix: string): string[] => {
    const ids: string[] = [];
    for (let id = firstStreamFromStmt.get(prefix)?.stream_id; id !== undefined && id.startsWith(prefix); id = nextStreamStmt.get(id)?.stream_id) ids.push(id);
    return ids;
  };
  const headPositionStmt = db.prepare<[], { head: number | null }>('SELECT MAX(position) AS head FROM events');

  const appendTx = db.transaction((requests: AppendRequest[]): AppendResult[] => {
    const recordedAt = new Date().toISOString();
    return requests.map(({ streamId, events, expectedRevision }) => {
      const actual = headStmt.get(streamId)?.head ?? -1;
      checkExpectedRevision(streamId, expectedRevision, actual);
      const positions: string[] = [];
      let revision = actual;
      for (const event of events) {
        revision++;
        const { lastInsertRowid } = insertStmt.run(
          streamId,
          revision,
          event.type,
          JSON.stringify(event.data ?? null),
          event.recordedAt ?? recordedAt,
        );
        positions.push(String(lastInsertRowid));
      }
      return { revision, positions };
    });
  });

  // Other connections' commits move it; this connection's own do not (they are told by wakeLocal instead).
  const dataVersionStmt = db.prepare<[], number>('PRAGMA data_version').pluck();
  let seenVersion = dataVersionStmt.get() as number;
  const stopChecking = checkExternalCommits(file, () => {
    let v: number;
    try {
      v = dataVersionStmt.get() as number;
    } catch (e) {
      // Locked for a moment (a peer recovering the WAL): assume it changed; the tails' reads wait it out.
      if (isBusy(e)) return true;
      throw e;
    }
    if (v === seenVersion) return false;
    seenVersion = v;
    return true;
  });
  // Probed once: where no watch can be set (some network file systems), the poll is the only way and stays short.
  const watchable = watchWal(file);
  releaseWakes(file);
  const pollIntervalMs = options.pollIntervalMs ?? (watchable ? 1000 : 50);
  const ownWakes = new Set<Wake>();
  const subscriptions = new OpenSubscriptions();
  const snapshots = createSqliteSnapshots(file, busyTimeoutMs);
  const writes = writeQueue(busyTimeoutMs);
  let closed = false;

  /** One transaction: retried whole (and its revisions checked again) while the file is locked. */
  function appendAll(requests: AppendRequest[]): AppendResult[] {
    if (requests.length === 0) return [];
    let results: AppendResult[];
    try {
      results = appendTx.immediate(requests);
    } catch (error) {
      throw asConcurrencyError(error, requests) ?? error;
    }
    wakeLocal(
      file,
      requests.map((r) => r.streamId),
    );
    return results;
  }

  /** One statement, matching rows only: a page short of the limit is the end of the log as this connection sees it. */
  function readAllPage(options: ReadAllOptions = {}): LogPage {
    const after = parsePosition(options.after);
    const limit = options.limit ?? DEFAULT_LIMIT;
    const prefix = options.streamPrefix;
    if (prefix !== undefined && prefix !== '' && !anyStreamWith(prefix)) return { events: [], end: true };
    const rows = rowsAfter(after, prefix ?? '', limit);
    return { events: rows.map(toStored), end: rows.length < limit };
  }

  function readAll(options: ReadAllOptions = {}): StoredEvent[] {
    return readAllPage(options).events;
  }

  const scanThreadMinRows = options.scanThreadMinRows ?? DEFAULT_SCAN_THREAD_MIN_ROWS;
  const scanWorkers = new Set<{ stop(why?: Error): void }>();

  async function* scan(options: ScanOptions = {}): AsyncGenerator<StoredEvent[]> {
    if (closed) throw new Error('sqlite store: scan after close');
    let after = parsePosition(options.after);
    const limit = options.limit ?? DEFAULT_LIMIT;
    const prefix = options.streamPrefix ?? '';
    const head = await whenFree(() => (prefix !== '' && !anyStreamWith(prefix) ? null : (headPositionStmt.get()?.head ?? 0)), busyTimeoutMs);
    if (head === null) return;
    if (head - after >= scanThreadMinRows) {
      yield* scanOnThread({ file, after, prefix, pageSize: limit, ahead: SCAN_AHEAD });
      return;
    }
    for (;;) {
      let rows: RawRow[];
      try {
        rows = rowsAfter(after, prefix, limit);
      } catch (e) {
        if (!isBusy(e)) throw e;
        rows = await whenFree(() => rowsAfter(after, prefix, limit), busyTimeoutMs);
      }
      if (rows.length > 0) yield rows.map(toStored);
      // Short: the end of the log as this connection sees it.
      if (rows.length < limit) return;
      after = rows[rows.length - 1]![0];
    }
  }

  /** Pages read by a worker thread, parsed here as they are taken; leaving early (or closing the store) ends it. */
  function scanOnThread(job: ScanJob): AsyncIterable<StoredEvent[]> {
    return {
      [Symbol.asyncIterator]() {
        const worker = startModuleWorker(import.meta.url, 'sqlite-scan-worker', { workerData: job });
        const queue: ScanMessage[] = [];
        let failure: Error | undefined;
        let exited = false;
        let finished = false;
        let wake: (() => void) | undefined;
        const poke = () => {
          wake?.();
          wake = undefined;
        };
        /** `why`: the store was closed under the scan, which must not look like the end of the log. */
        const handle = {
          stop(why?: Error) {
            finished = why === undefined;
            if (why !== undefined) failure ??= why;
            scanWorkers.delete(handle);
            void worker.terminate();
            poke();
          },
        };
        scanWorkers.add(handle);
        worker.on('message', (m: ScanMessage) => {
          queue.push(m);
          poke();
        });
        worker.on('error', (e) => {
          failure = e;
          poke();
        });
        worker.on('exit', () => {
          exited = true;
          poke();
        });
        const end = { done: true, value: undefined } as const;
        return {
          async next(): Promise<IteratorResult<StoredEvent[]>> {
            for (;;) {
              const m = queue.shift();
              if (m !== undefined) {
                if ('error' in m) {
                  handle.stop();
                  throw Object.assign(new Error(`sqlite store: scan of ${file} failed: ${m.error}`), m.code ? { code: m.code } : {});
                }
                if (m.last) handle.stop();
                else worker.postMessage(0);
                if (m.data.length === 0) return end;
                return { done: false, value: fromPage(m) };
              }
              if (finished) return end;
              if (failure !== undefined || exited) {
                handle.stop(failure);
                throw new Error(`sqlite store: the scan of ${file} stopped before its end${failure ? `: ${failure.message}` : ''}`);
              }
              await new Promise<void>((resolve) => (wake = resolve));
            }
          },
          async return(): Promise<IteratorResult<StoredEvent[]>> {
            handle.stop();
            return end;
          },
        };
      },
    };
  }

  // better-sqlite3 is synchronous; each call runs at once, inside a promise so its errors become rejections, and a
  // read that finds the file locked (rare in WAL: a peer's exclusive locking mode, WAL recovery) waits on timers.
  const settle = <T>(work: () => T): Promise<T> => whenFree(work, busyTimeoutMs);

  return {
    kind: 'sqlite',
    durability: () => ({ journalMode: String(db.pragma('journal_mode', { simple: true })), synchronous: Number(db.pragma('synchronous', { simple: true })) }),

    append: (streamId, events, { expectedRevision }) => writes.run(() => appendAll([{ streamId, events, expectedRevision }])[0]!),

    appendMany: (requests, options) => writes.run(() => appendAll(requests), options?.since),

    readStream: (streamId, options = {}) =>
      settle(() =>
        (options.direction === 'backwards'
          ? readStreamBackStmt.all(streamId, options.fromRevision ?? Number.MAX_SAFE_INTEGER, options.limit ?? -1)
          : readStreamStmt.all(streamId, Math.max(0, options.fromRevision ?? 0), options.limit ?? -1)
        ).map(toStored),
      ),

    readAll: (options) => settle(() => readAll(options)),
    readAllPage: (options) => settle(() => readAllPage(options)),
    streamIds: (prefix) => settle(() => streamIdsWith(prefix)),
    scan,
    snapshots,

    subscribe(options: SubscribeOptions): Subscription {
      // A filtered tail must not rescan what it already found nothing in: a server's catalogue subscription would
      // otherwise re-read every call record since the last catalogue change on each wake-up (one per call). Writers
      // are serialised and positions assigned in commit order, so nothing can later appear at or below the head
      // read here. The cursor moves only on EMPTY pages: a delivered page may be offered again, so it stays readable.
      const prefix = options.streamPrefix ?? '';
      let skipTo = 0;
      // A read that found nothing stays true until this process appends to a matching stream (`dirty`) or another
      // connection commits (data_version moves): until then a wake-up (the WAL watch, the poll) costs one PRAGMA.
      let dirty = true;
      let quiet: { after: string | null; version: number } | null = null;
      const readRows = (after: string | null): StoredEvent[] => {
        if (prefix === '') return readAll({ after });
        const from = Math.max(parsePosition(after), skipTo);
        const head = headPositionStmt.get()?.head ?? 0;
        if (!anyStreamWith(prefix)) {
          skipTo = head;
          return [];
        }
        const rows = prefixRows(prefix, from, head, DEFAULT_LIMIT);
        if (rows.length === 0) skipTo = head;
        return rows.map(toStored);
      };
      const readPage = (after: string | null): LogPage => {
        const version = dataVersionStmt.get() as number;
        if (!dirty && quiet !== null && quiet.version === version && quiet.after === after) return { events: [], end: true };
        // Cleared only once read: a read that found the file locked and is tried again must not take itself as done.
        const page = readRows(after);
        dirty = false;
        quiet = page.length === 0 ? { after, version } : null;
        // A short page read everything up to the head as this connection saw it; a later commit wakes the tail.
        return { events: page, end: page.length < DEFAULT_LIMIT };
      };
      const subscription = tailSubscription({
        subscribe: options,
        readPage: (after) => settle(() => readPage(after)),
        pollIntervalMs,
        onLocalAppend(wake) {
          const onAppend: Wake = (streams) => {
            if (streams !== null) {
              if (prefix !== '' && !streams.some((s) => s.startsWith(prefix))) return;
              dirty = true;
            }
            wake();
          };
          wakesOf(file).add(onAppend);
          ownWakes.add(onAppend);
          if (watchable) watchWal(file);
          return () => {
            wakesOf(file).delete(onAppend);
            ownWakes.delete(onAppend);
            releaseWakes(file);
          };
        },
      });
      return subscriptions.track(subscription);
    },

    async close() {
      if (closed) return;
      closed = true;
      // Appends waiting for a lock finish first (each within its deadline): a call's record is not dropped at shutdown.
      await writes.idle();
      await subscriptions.closeAll();
      for (const w of [...scanWorkers]) w.stop(new Error('the store was closed'));
      for (const wake of ownWakes) wakesOf(file).delete(wake);
      stopChecking();
      releaseWakes(file);
      snapshots.close();
      db.close();
    },
  };
}

function toStored(row: RawRow): StoredEvent {
  return {
    position: String(row[0]),
    streamId: row[1],
    revision: row[2],
    type: row[3],
    data: parseData(row[4], row[0], row[1], row[2]),
    recordedAt: row[5],
  };
}

function parsePosition(position: string | null | undefined): number {
  if (position === null || position === undefined) return 0;
  if (!/^\d+$/.test(position)) throw new Error(`not a SQLite store position: '${position}'`);
  return Number(position);
}

/**
 * BEGIN IMMEDIATE already serialises writers, so a UNIQUE(stream_id, revision) violation should not happen; if it
 * does (a writer that bypassed this adapter), it is still a lost race, and callers retry races.
 */
function asConcurrencyError(error: unknown, requests: AppendRequest[]): ConcurrencyError | undefined {
  if (error instanceof ConcurrencyError) return error;
  const code = (error as { code?: unknown } | null)?.code;
  if (code !== 'SQLITE_CONSTRAINT_UNIQUE') return undefined;
  const message = String((error as { message?: unknown }).message ?? '');
  if (!message.includes('events.stream_id')) return undefined;
  const first = requests[0]!;
  return new ConcurrencyError(first.streamId, first.expectedRevision);
}
