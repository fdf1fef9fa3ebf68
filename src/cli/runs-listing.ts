/**
 * `estate calls` without a run id (SPEC §9): the recent runs, newest last call first: run id, calls, first and last
 * time, subject, tenant. Scans the run streams of the log (an operator's verb, not a request path).
 */
import { DomainError } from '#domain/errors';
import type { EventStore, StoredEvent } from '#app/ports';

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

export const parseRunFilter = (f: { since?: string; tool?: string; limit?: string }): RunFilter => {
  const out: RunFilter = {};
  if (f.since !== undefined) {
    const t = Date.parse(f.since);
    if (!/^\d{4}-\d{2}-\d{2}/.test(f.since) || Number.isNaN(t)) throw new DomainError('usage', 'bad-since', `--since ${JSON.stringify(f.since.slice(0, 40))} is not an ISO-8601 time (e.g. 2026-11-30T12:00:00Z)`);
    out.since = new Date(t).toISOString();
  }
  if (f.tool !== undefined) out.tool = f.tool;
  if (f.limit !== undefined) {
    if (!/^\d{1,6}$/.test(f.limit) || Number(f.limit) < 1) throw new DomainError('usage', 'bad-limit', `--limit ${JSON.stringify(f.limit.slice(0, 40))} is not a whole number from 1 to 999999`);
    out.limit = Number(f.limit);
  }
  return out;
};

interface Acc extends RunSummary {
  started: Set<string>;
  finished: Set<string>;
}

const str = (d: unknown, k: string): string | undefined => {
  const v = (d as Record<string, unknown> | null)?.[k];
  return typeof v === 'string' ? v : undefined;
};

export const listRuns = async (store: EventStore, filter: RunFilter = {}): Promise<RunSummary[]> => {
  const runs = new Map<string, Acc>();
  const take = (e: StoredEvent): void => {
    if (e.type !== 'ToolCalled' && e.type !== 'ToolCallStarted') return;
    const at = str(e.data, 'at') ?? e.recordedAt;
    const runId = str(e.data, 'runId') ?? e.streamId.slice('run-'.length);
    let r = runs.get(e.streamId);
    if (!r) {
      r = { runId, calls: 0, unfinished: 0, first: at, last: at, subject: str(e.data, 'subject') ?? '', tenant: str(e.data, 'tenant') ?? '', tools: [], started: new Set(), finished: new Set() };
      runs.set(e.streamId, r);
    }
    const tool = str(e.data, 'tool');
    if (tool !== undefined && !r.tools.includes(tool)) r.tools.push(tool);
    if (at < r.first) r.first = at;
    if (at > r.last) r.last = at;
    const callId = str(e.data, 'callId');
    if (e.type === 'ToolCalled') {
      r.calls++;
      if (callId !== undefined) r.finished.add(callId);
    } else if (callId !== undefined) r.started.add(callId);
  };
  let after: string | null = null;
  for (;;) {
    const page = await store.readAll({ after, streamPrefix: 'run-' });
    if (page.length === 0) break;
    for (const e of page) take(e);
    after = (page[page.length - 1] as StoredEvent).position;
  }
  const out: RunSummary[] = [];
  for (const { started, finished, ...r } of runs.values()) {
    r.unfinished = [...started].filter((c) => !finished.has(c)).length;
    if (filter.since !== undefined && r.last < filter.since) continue;
    if (filter.tool !== undefined && !r.tools.includes(filter.tool)) continue;
    out.push(r);
  }
  out.sort((a, b) => (a.last < b.last ? 1 : a.last > b.last ? -1 : 0));
  return out.slice(0, filter.limit ?? 20);
};
