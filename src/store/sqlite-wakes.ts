/**
 * How a SQLite store's tails learn of new rows without polling (sqlite-event-store.ts).
 *
 * In this process: every append tells the wake-ups registered on the same file which streams it wrote, so a tail of
 * `tool-` streams is not woken by the call records a server appends on every tools/call (issue 15: that re-read cost
 * more than a tenth of a call).
 *
 * Other processes: every commit writes the WAL file (`<file>-wal`), so a watch on its directory filtered to that name
 * wakes the tails on the file, not knowing which streams changed (`null`). A hint only (inotify may coalesce or drop
 * events; the WAL may be recreated): the tails still poll, at a longer interval. One watch per file per process, while
 * anyone tails. The write that fires the watch comes BEFORE the commit is visible (the writer then fsyncs the WAL and
 * updates the shared-memory index, which raises no file event), so a reader woken at once may find nothing yet: each
 * burst of WAL writes also schedules re-reads shortly after its last write, spaced out to outlast a slow fsync. This
 * process's own commits fire the watch too: each store on the file registers a check that another connection has
 * committed (PRAGMA data_version, sqlite-event-store.ts), and an event that none of them confirms wakes nobody; the
 * settle re-reads still check, so a commit that becomes visible late is found then.
 */
import { watch, type FSWatcher } from 'node:fs';
import { basename, dirname } from 'node:path';

/** A tail's wake-up: `streams` written by this process, or null when another process may have written anything. */
export type Wake = (streams: readonly string[] | null) => void;

/** Wake-ups per file, shared by every store instance of this process on that file. */
const localWakes = new Map<string, Set<Wake>>();

const SETTLE_MS = [5, 25, 100, 400];
const BURST_MS = 2;
const walWatchers = new Map<string, { watcher: FSWatcher; timers: NodeJS.Timeout[] }>();
/** Per file: whether another connection committed since the check last looked (one per store instance). */
const externalChecks = new Map<string, Set<() => boolean>>();

/** Register a store's check for other connections' commits; returns its removal. */
export const checkExternalCommits = (file: string, changed: () => boolean): (() => void) => {
  let set = externalChecks.get(file);
  if (!set) externalChecks.set(file, (set = new Set()));
  set.add(changed);
  return () => {
    set.delete(changed);
    if (set.size === 0) externalChecks.delete(file);
  };
};

/** No check registered: assume anything may have changed. Every check runs (each moves its own baseline). */
const committedElsewhere = (file: string): boolean => {
  const checks = externalChecks.get(file);
  if (!checks || checks.size === 0) return true;
  let changed = false;
  for (const check of checks) if (check()) changed = true;
  return changed;
};

export const wakesOf = (file: string): Set<Wake> => {
  let set = localWakes.get(file);
  if (!set) localWakes.set(file, (set = new Set()));
  return set;
};

/** Forget the file (and stop watching its WAL) once no tail of this process is left on it. */
export const releaseWakes = (file: string): void => {
  if ((localWakes.get(file)?.size ?? 0) === 0) {
    localWakes.delete(file);
    unwatchWal(file);
  }
};

/** Tell every tail on `file` that this process appended to `streams`. */
export const wakeLocal = (file: string, streams: readonly string[]): void => {
  const set = localWakes.get(file);
  if (set) for (const wake of set) wake(streams);
};

/** Watch the file's WAL for other processes' commits; false where no watch can be set (some network file systems). */
export const watchWal = (file: string): boolean => {
  if (walWatchers.has(file)) return true;
  const wal = `${basename(file)}-wal`;
  const wakeAll = (): void => {
    if (!committedElsewhere(file)) return;
    for (const wake of localWakes.get(file) ?? []) wake(null);
  };
  try {
    const timers: NodeJS.Timeout[] = [];
    // One commit raises several events (one per WAL write), and a busy server commits every millisecond: events are
    // handled at most once per BURST_MS, the last one of a burst always (a trailing turn), so another process's commit
    // is still looked for within that time and the settle re-reads still follow the last write.
    let queued = false;
    let lastRun = 0;
    const onBurst = (): void => {
      queued = false;
      lastRun = performance.now();
      wakeAll();
      for (const t of timers.splice(0)) clearTimeout(t);
      for (const ms of SETTLE_MS) timers.push(setTimeout(wakeAll, ms).unref());
    };
    const watcher = watch(dirname(file), { persistent: false }, (_event, name) => {
      if (name !== wal || queued) return;
      queued = true;
      const wait = lastRun + BURST_MS - performance.now();
      if (wait > 0) setTimeout(onBurst, wait).unref();
      else setImmediate(onBurst);
    });
    watcher.on('error', () => unwatchWal(file));
    walWatchers.set(file, { watcher, timers });
    return true;
  } catch {
    return false;
  }
};

export const unwatchWal = (file: string): void => {
  const entry = walWatchers.get(file);
  if (!entry) return;
  walWatchers.delete(file);
  entry.watcher.close();
  for (const t of entry.timers.splice(0)) clearTimeout(t);
};
