/**
 * The recent runs (the console's runs page, `estate calls` without a run id) as a projection of the run streams that
 * is kept, not rebuilt at every view: each view reads only the call records written since the one before, from the
 * position the index has reached. Before it, every view scanned every run event of the log (293-296 ms a view beside
 * 100,000 calls, and linear in the call log).
 *
 * Bounded: it keeps the `maxRuns` runs most recently written to (a stateless call is a run of its own, so a busy
 * estate makes millions); the runs page shows the newest 50. A run dropped from it and written to again is read back
 * from its own stream when it is shown (it is `partial` until then: its earlier calls were folded and dropped). A
 * filtered listing that finds fewer runs than asked for in an index that has dropped runs falls back to a scan of
 * the whole log (listRuns), so a filter never misses a run: what the index cannot answer exactly it does not answer.
 *
 * Kept as a snapshot (name `runs`, ./runs-snapshot.ts) where the store keeps snapshots, written by a serving process's
 * console: a restarted console, and `estate calls` (which reads it and, a read-only verb, writes none), read the tail
 * after it, not the log.
 */
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import type { Log } from './log.ts';
import type { EventAnchor } from '#domain/events';
import type { EventStore, SnapshotStore, StoredEvent } from './ports.ts';
import { pageThrough, readStreamPages } from './read-pages.ts';
import { readRunsSnapshot, writeRunsSnapshot, type RunEntry, type RunsCut } from './runs-snapshot.ts';
import { holdsAnchor } from './snapshot-read.ts';

/** One run as listed: its entry's counts and names (runs-snapshot.ts), and how many of its calls are unfinished. */
export type RunSummary = Pick<RunEntry, 'runId' | 'calls' | 'first' | 'last' | 'subject' | 'tenant' | 'tools' | 'moreTools'> & {
  /** Intents (`ToolCallStarted`) with no outcome on record. */
  unfinished: number;
};

export interface RunFilter {
  /** ISO-8601: runs with a call at or after it. */
  since?: string;
  /** Runs with a call to this tool. */
  tool?: string;
  limit?: number;
}


export interface RunsListing {
  runs: RunSummary[];
  /** Present when the wait ran out while the index was still reading the log: how many events it has read so far. */
  reading?: { events: number };
}

export interface RunsIndexOptions {
  /** Runs kept, those most recently written to (default DEFAULT_INDEXED_RUNS; Infinity: every run). */
  maxRuns?: number;
  /** Tool names kept per run (default DEFAULT_TOOLS_PER_RUN; Infinity: every one). */
  maxToolsPerRun?: number;
  /** Where the index's snapshot is kept (the store's `snapshots`); none: it is rebuilt from the log in each process. */
  snapshots?: SnapshotStore;
  /** Write the snapshot once this many events were folded since the last one (default 10,000). */
  snapshotEvery?: number;
  /** Read the snapshot but never write one (a read-only verb: `estate calls` creates nothing in the store). */
  readSnapshotOnly?: boolean;
  log?: Log;
}

export const DEFAULT_INDEXED_RUNS = 10_000;
/** A run may call hundreds of tools: the index keeps this many names per run, and says when there were more. */
export const DEFAULT_TOOLS_PER_RUN = 16;
const DEFAULT_SNAPSHOT_EVERY = 10_000;

const str = (d: unknown, k: string): string | undefined => {
  const v = (d as Record<string, unknown> | null)?.[k];
  return typeof v === 'string' ? v : undefined;
};

const isCall = (e: StoredEvent): boolean => e.type === 'ToolCalled' || e.type === 'ToolCallStarted';

const emptyEntry = (e: StoredEvent, at: string): RunEntry => ({
  streamId: e.streamId,
  runId: str(e.data, 'runId') ?? e.streamId.slice('run-'.length),
  calls: 0,
  first: at,
  last: at,
  subject: str(e.data, 'subject') ?? '',
  tenant: str(e.data, 'tenant') ?? '',
  tools: [],
  open: new Set(),
  lastSeq: 0,
  revision: -1,
  partial: false,
});

/** Count one call event into its run, keeping at most `maxTools` tool names; true when it is the run's latest call so far. */
const count = (r: RunEntry, e: StoredEvent, at: string, maxTools: number): boolean => {
  const tool = str(e.data, 'tool');
  if (tool !== undefined && !r.tools.includes(tool)) {
    if (r.tools.length < maxTools) r.tools.push(tool);
    else r.moreTools = true;
  }
  if (at < r.first) r.first = at;
  const latest = at >= r.last;
  if (latest) r.last = at;
  const callId = str(e.data, 'callId');
  if (e.type === 'ToolCalled') {
    r.calls++;
    if (callId !== undefined) r.open.delete(callId);
  } else if (callId !== undefined) r.open.add(callId);
  return latest;
};

const summary = (r: RunEntry): RunSummary => ({ runId: r.runId, calls: r.calls, unfinished: r.open.size, first: r.first, last: r.last, subject: r.subject, tenant: r.tenant, tools: r.tools, ...(r.moreTools ? { moreTools: true as const } : {}) });

/** Newest latest call first; calls in the same millisecond in the order they were written (newest first). */
const newestFirst = (a: RunEntry, b: RunEntry): number => (a.last < b.last ? 1 : a.last > b.last ? -1 : b.lastSeq - a.lastSeq);

export class RunsIndex {
  /** Every run kept, in the order each was last written to: the first is the one the bound drops next. */
  private readonly runs = new Map<string, RunEntry>();
  private readonly maxRuns: number;
  private readonly maxTools: number;
  private readonly snapshotEvery: number;
  private position: string | null = null;
  /** The event at `position` (its snapshot names it; a restore checks the log has it there). */
  private anchor: EventAnchor | null = null;
  private seq = 0;
  /** Runs dropped by the bound, over the index's life (its snapshots' included). */
  private dropped = 0;
  /** Events folded, over the index's life. */
  private folded = 0;
  private foldedAtSnapshot = 0;
  /** Events read by the update under way. */
  private reading = 0;
  private restored = false;
  private current = false;
  private queue: Promise<unknown> = Promise.resolve();
  private updating: Promise<void> | null = null;
  private writing: Promise<void> | null = null;

  constructor(
    private readonly store: EventStore,
    private readonly o: RunsIndexOptions = {},
  ) {
    this.maxRuns = o.maxRuns ?? DEFAULT_INDEXED_RUNS;
    this.maxTools = o.maxToolsPerRun ?? DEFAULT_TOOLS_PER_RUN;
    this.snapshotEvery = o.snapshotEvery ?? DEFAULT_SNAPSHOT_EVERY;
  }

  /**
   * The runs the filter asks for, newest latest call first, after reading what was written since the last view. With
   * `waitMs`, a read that takes longer (the first, on a long log) goes on in the background and the answer says how
   * far it has got instead of waiting: a page never hangs on it.
   */
  async list(filter: RunFilter = {}, o: { waitMs?: number } = {}): Promise<RunsListing> {
    const update = this.update();
    if (o.waitMs !== undefined) {
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<false>((resolve) => (timer = setTimeout(resolve, o.waitMs, false)));
      const done = await Promise.race([update.then(() => true), late]).finally(() => clearTimeout(timer));
      if (!done) {
        // Nothing to wait for now: a failure shows at the next view, which starts a new read.
        update.catch(() => undefined);
        return { runs: [], reading: { events: this.reading } };
      }
    } else await update;
    return { runs: await this.serial(() => this.select(filter)) };
  }

  /** Read the log from where the index stands to its end (one read shared by concurrent callers). */
  update(): Promise<void> {
    this.updating ??= this.serial(() => this.readOn()).finally(() => (this.updating = null));
    return this.updating;
  }

  /** The index's state, for its snapshot and for tests. */
  cut(): RunsCut {
    return { position: this.position, anchor: this.anchor, seq: this.seq, dropped: this.dropped, folded: this.folded, runs: [...this.runs.values()] };
  }

  /** Wait for a snapshot write under way (tests, shutdown). */
  async settled(): Promise<void> {
    await this.writing;
  }

  /** Work on the index one piece at a time: a read and a run read back never interleave. */
  private serial<T>(work: () => Promise<T>): Promise<T> {
    const next = this.queue.then(work);
    this.queue = next.catch(() => undefined);
    return next;
  }

  private async readOn(): Promise<void> {
    if (!this.restored) await this.restore();
    this.reading = 0;
    // readAll's pages, not the store's scan: on SQLite the scan (a second thread) read 100,000 call records among
    // 120,000 in 685-688 ms where these pages took 499-510 (.cache/ab/runs-idx.ts, ad hoc, twice each).
    for await (const page of pageThrough(this.store, { after: this.position, streamPrefix: 'run-' })) {
      for (const e of page) this.fold(e);
      this.reading += page.length;
      const last = page[page.length - 1] as StoredEvent;
      this.position = last.position;
      this.anchor = { streamId: last.streamId, revision: last.revision };
      this.dropOldest();
      // A store that answers at once (SQLite) would otherwise hold the thread for the whole read: 7 s for the first
      // read of 1,500,000 call records, every call the process serves waiting, and the page's wait never ending.
      await yieldToLoop();
    }
    this.current = true;
    if (this.o.snapshots && !this.o.readSnapshotOnly && this.folded - this.foldedAtSnapshot >= this.snapshotEvery && !this.writing) this.writeSnapshot(this.o.snapshots);
  }

  private fold(e: StoredEvent): void {
    let r = this.runs.get(e.streamId);
    if (r && e.revision <= r.revision) return;
    this.folded++;
    if (!isCall(e)) {
      if (r) r.revision = e.revision;
      return;
    }
    const at = str(e.data, 'at') ?? e.recordedAt;
    if (r) this.runs.delete(e.streamId);
    // A run first seen past its stream's start was dropped (or began with other events): read back when shown.
    else r = { ...emptyEntry(e, at), partial: e.revision > 0 };
    this.runs.set(e.streamId, r);
    r.revision = e.revision;
    if (count(r, e, at, this.maxTools)) r.lastSeq = ++this.seq;
  }

  private dropOldest(): void {
    for (const key of this.runs.keys()) {
      if (this.runs.size <= this.maxRuns) return;
      this.runs.delete(key);
      this.dropped++;
    }
  }

  /**
   * Read a partial run's stream back from its start: its counts become those of every call it has. Page by page, the
   * thread let go between pages: a run is as long as its session, and read whole (300,000 calls on SQLite) it held the
   * thread 1.8 s and 231 MiB more.
   */
  private async readBack(r: RunEntry): Promise<void> {
    let whole: RunEntry | undefined;
    let last = -1;
    for await (const page of readStreamPages(this.store, r.streamId)) {
      for (const e of page) {
        if (!isCall(e)) continue;
        whole ??= emptyEntry(e, str(e.data, 'at') ?? e.recordedAt);
        count(whole, e, str(e.data, 'at') ?? e.recordedAt, this.maxTools);
      }
      last = (page[page.length - 1] as StoredEvent).revision;
    }
    if (!whole) return;
    Object.assign(r, { calls: whole.calls, first: whole.first, last: whole.last, tools: whole.tools, open: whole.open, partial: false });
    if (whole.moreTools) r.moreTools = true;
    r.revision = Math.max(r.revision, last);
  }

  private async select(filter: RunFilter): Promise<RunSummary[]> {
    const limit = filter.limit ?? 20;
    const kept: RunSummary[] = [];
    for (const r of [...this.runs.values()].sort(newestFirst)) {
      if (kept.length >= limit) break;
      if (r.partial) await this.readBack(r);
      if (filter.since !== undefined && r.last < filter.since) continue;
      if (filter.tool !== undefined && !r.tools.includes(filter.tool)) {
        // A run that called more tools than it names may have called this one: only the whole log can say.
        if (r.moreTools) return listRuns(this.store, filter);
        continue;
      }
      kept.push(summary(r));
    }
    // The runs dropped by the bound may hold the ones a filter asks for: only the whole log can say.
    if (kept.length < limit && this.dropped > 0) return listRuns(this.store, filter);
    return kept;
  }

  private async restore(): Promise<void> {
    this.restored = true;
    const { snapshots, log } = this.o;
    if (!snapshots) return;
    try {
      const read = await readRunsSnapshot(snapshots);
      if (read.kind !== 'loaded') {
        if (read.kind !== 'none') log?.info({ why: read.kind === 'corrupt' ? read.reason : 'another index version' }, 'runs snapshot ignored: the runs index is read from the log');
        return;
      }
      const cut = read.cut;
      // Else a log replaced under the snapshot would list runs it no longer has.
      if (!(await holdsAnchor(this.store, cut.anchor, cut.position))) {
        log?.warn({ position: cut.position, anchor: `${cut.anchor.streamId}@${cut.anchor.revision}` }, 'runs snapshot ends at an event this store does not have there: the runs index is read from the log');
        return;
      }
      this.position = cut.position;
      this.anchor = cut.anchor;
      this.seq = cut.seq;
      this.dropped = cut.dropped;
      this.folded = this.foldedAtSnapshot = cut.folded;
      for (const r of cut.runs) this.runs.set(r.streamId, r);
      this.dropOldest();
    } catch (e) {
      log?.warn({ err: e }, 'runs snapshot unreadable: the runs index is read from the log');
    }
  }

  private writeSnapshot(snapshots: SnapshotStore): void {
    const cut = this.cut();
    this.foldedAtSnapshot = this.folded;
    this.writing = writeRunsSnapshot(snapshots, cut)
      .then((written) => this.o.log?.debug({ runs: cut.runs.length, position: cut.position, chars: written.chars }, 'runs snapshot written'))
      .catch((e: unknown) => this.o.log?.warn({ err: e }, 'runs snapshot not written (tried again later)'))
      .finally(() => (this.writing = null));
  }

  /** Whether the index has read to the end of the log at least once. */
  get caughtUp(): boolean {
    return this.current;
  }
}

/**
 * Every run of the log, read from its first event (an index without a bound, used once): a filtered listing the
 * bounded index cannot answer exactly.
 */
export const listRuns = async (store: EventStore, filter: RunFilter = {}): Promise<RunSummary[]> => {
  const runs = (await new RunsIndex(store, { maxRuns: Infinity, maxToolsPerRun: Infinity }).list(filter)).runs;
  // Read whole to decide the filter; shown with as many tool names as the index keeps.
  return runs.map((r) => (r.tools.length <= DEFAULT_TOOLS_PER_RUN ? r : { ...r, tools: r.tools.slice(0, DEFAULT_TOOLS_PER_RUN), moreTools: true as const }));
};
