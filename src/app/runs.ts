/**
 * The run log's read side, for operators: the recent runs, newest last call first (`estate calls` without a run id,
 * SPEC §9, and the console's runs page), and one run's calls (`estate calls <run>`, the console's run page). Both scan
 * the run streams of the log.
 */
import type { ToolCallStarted, ToolCalled } from '#domain/events';
import { runCalls, type CallRecordView, type StartedCallView } from '#projections/calls';
import { scanRunStreams } from './call-recorder.ts';
import { decodeToolCallStarted, decodeToolCalled } from './event-codec.ts';
import type { EventStore, StoredEvent } from './ports.ts';

export interface RunSummary {
  runId: string;
  calls: number;
  /** Intents (`ToolCallStarted`) with no outcome on record. */
  unfinished: number;
  first: string;
  last: string;
  subject: string;
  tenant: string;
  tools: string[];
}

export interface RunFilter {
  /** ISO-8601: runs with a call at or after it. */
  since?: string;
  /** Runs with a call to this tool. */
  tool?: string;
  limit?: number;
}

interface Acc extends RunSummary {
  /**
   * Intents with no outcome seen yet. An outcome follows its intent in the run's stream, so it is removed when it
   * comes: what the scan holds is the unfinished calls, not (as before) every call id of every run in the log.
   */
  open: Set<string>;
  /** Where in the log its latest call was written: orders runs whose latest calls share a millisecond. */
  lastSeq: number;
}

const str = (d: unknown, k: string): string | undefined => {
  const v = (d as Record<string, unknown> | null)?.[k];
  return typeof v === 'string' ? v : undefined;
};

export const listRuns = async (store: EventStore, filter: RunFilter = {}): Promise<RunSummary[]> => {
  const runs = new Map<string, Acc>();
  let seq = 0;
  const take = (e: StoredEvent): void => {
    if (e.type !== 'ToolCalled' && e.type !== 'ToolCallStarted') return;
    const at = str(e.data, 'at') ?? e.recordedAt;
    const runId = str(e.data, 'runId') ?? e.streamId.slice('run-'.length);
    let r = runs.get(e.streamId);
    if (!r) {
      r = { runId, calls: 0, unfinished: 0, first: at, last: at, subject: str(e.data, 'subject') ?? '', tenant: str(e.data, 'tenant') ?? '', tools: [], open: new Set(), lastSeq: 0 };
      runs.set(e.streamId, r);
    }
    const tool = str(e.data, 'tool');
    if (tool !== undefined && !r.tools.includes(tool)) r.tools.push(tool);
    if (at < r.first) r.first = at;
    if (at >= r.last) {
      r.last = at;
      r.lastSeq = ++seq;
    }
    const callId = str(e.data, 'callId');
    if (e.type === 'ToolCalled') {
      r.calls++;
      if (callId !== undefined) r.open.delete(callId);
    } else if (callId !== undefined) r.open.add(callId);
  };
  let after: string | null = null;
  for (;;) {
    const page = await store.readAll({ after, streamPrefix: 'run-' });
    if (page.length === 0) break;
    for (const e of page) take(e);
    after = (page[page.length - 1] as StoredEvent).position;
  }
  const kept: Acc[] = [];
  for (const r of runs.values()) {
    r.unfinished = r.open.size;
    if (filter.since !== undefined && r.last < filter.since) continue;
    if (filter.tool !== undefined && !r.tools.includes(filter.tool)) continue;
    kept.push(r);
  }
  // Newest latest call first; calls in the same millisecond in the order they were written (newest first).
  kept.sort((a, b) => (a.last < b.last ? 1 : a.last > b.last ? -1 : b.lastSeq - a.lastSeq));
  return kept.slice(0, filter.limit ?? 20).map(({ open: _o, lastSeq: _q, ...r }) => r);
};

export type CallView = CallRecordView | StartedCallView;

/** One owner's calls under a run id: the same id used by two tenants (or subjects) is two runs. */
export interface OwnedRun {
  owner: { subject: string; tenant: string };
  calls: CallView[];
  /** Calls of the run before those in `calls`, not read into it (readRun's `newest`); 0 when `calls` is all of them. */
  earlier: number;
}

const decodeCall = (s: StoredEvent): (ToolCalled | ToolCallStarted)[] =>
  s.type === 'ToolCalled' ? [decodeToolCalled(s)] : s.type === 'ToolCallStarted' ? [decodeToolCallStarted(s)] : [];

/** One owner's stream as it is scanned: its newest events only, and the counts that say how many calls it has. */
interface Tail {
  events: StoredEvent[];
  /** `ToolCalled` events: each is one call. */
  called: number;
  /** Intents (`ToolCallStarted`) with no outcome seen yet: each is one call more. */
  open: Set<string>;
}

/**
 * Every run named `runId`, one per owner, each with its calls in order (intents with no outcome included). With
 * `newest`, each owner's newest `newest` calls only, and how many came before them: the scan keeps only a window of the
 * newest events (a run is as long as its session: a session open for days makes hundreds of thousands of calls, and
 * the console's run page read and rendered every one, 20 MB of HTML for 100,000 calls).
 */
export const readRun = async (store: EventStore, runId: string, o: { newest?: number } = {}): Promise<OwnedRun[]> => {
  const newest = o.newest ?? Infinity;
  // A call is one or two events (an intent, then its outcome): twice the calls wanted, trimmed once it doubles.
  const window = 2 * newest;
  const tails = new Map<string, Tail>();
  await scanRunStreams(store, runId, (e) => {
    if (e.type !== 'ToolCalled' && e.type !== 'ToolCallStarted') return;
    let t = tails.get(e.streamId);
    if (!t) tails.set(e.streamId, (t = { events: [], called: 0, open: new Set() }));
    const callId = str(e.data, 'callId');
    if (e.type === 'ToolCalled') {
      t.called++;
      if (callId !== undefined) t.open.delete(callId);
    } else if (callId !== undefined) t.open.add(callId);
    t.events.push(e);
    if (t.events.length >= 2 * window) t.events.splice(0, t.events.length - window);
  });
  const runs: OwnedRun[] = [];
  for (const t of tails.values()) {
    t.events.sort((a, b) => a.revision - b.revision);
    const all = runCalls(t.events.flatMap(decodeCall));
    const calls = all.length > newest ? all.slice(all.length - newest) : all;
    const first = calls[0];
    if (first) runs.push({ owner: { subject: first.subject, tenant: first.tenant }, calls, earlier: t.called + t.open.size - calls.length });
  }
  return runs;
};
