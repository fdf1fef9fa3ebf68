/**
 * The run log's read side, for operators: one run's calls (`estate calls <run>`, the console's run page), read from
 * its run streams. The recent runs (`estate calls` without a run id, the console's runs page) are ./runs-index.ts.
 */
import type { ToolCallStarted, ToolCalled } from '#domain/events';
import { runCalls, type CallRecordView, type StartedCallView } from '#projections/calls';
import { scanRunStreams } from './call-recorder.ts';
import { decodeToolCallStarted, decodeToolCalled } from './event-codec.ts';
import type { EventStore, StoredEvent } from './ports.ts';

const str = (d: unknown, k: string): string | undefined => {
  const v = (d as Record<string, unknown> | null)?.[k];
  return typeof v === 'string' ? v : undefined;
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
