/**
 * Call records (SPEC §4 `ToolCalled`): every executed call is appended to `run-<runId>` and durable before its result
 * is returned. Group commit: calls that arrive while a commit is in flight wait together and go into ONE `appendMany`
 * (one transaction, one fsync), so throughput under concurrency is bounded by commits, not by calls.
 *
 * On SQLite the commit blocks the thread, so "while a commit is in flight" gathers nothing: a batch is what the loop
 * turn before it handled. Under concurrency (the last batch held more than one record) a commit is therefore held open
 * for a few more loop turns while each turn brings more records, and stops at the first turn that brings none: fewer,
 * larger commits (each one a device flush) when calls keep coming, and a lone caller's record is never held.
 */
import { runStream, runStreamPrefix, type ToolCallStarted, type ToolCalled } from '#domain/events';
import type { AppendRequest, EventStore, StoredEvent } from './ports.ts';
import { readStreamPages } from './read-pages.ts';

export type CallRecord = ToolCalled['data'];
export type CallIntent = ToolCallStarted['data'];

export interface CallRecorder {
  /** Resolves once the record is committed; rejects if the commit failed. */
  record(call: CallRecord): Promise<void>;
  /**
   * Commit a non_idempotent call's intent (`ToolCallStarted`) before its handler runs; rejects if the store cannot take
   * it (then the handler must not run). Shares the group commit with records.
   */
  start(intent: CallIntent): Promise<void>;
  /** Wait for everything queued so far. */
  flush(): Promise<void>;
}

export interface CallRecorderOptions {
  /** Upper bound on records in one commit, so one transaction never grows without bound. */
  maxBatch?: number;
  /**
   * Under concurrency, at most this many more loop turns a commit waits for records still coming (each turn must bring
   * some). Default 16; 0 commits on the first turn always.
   */
  holdTurns?: number;
  /** ... and never longer than this many ms past the first turn. Default 1. */
  holdMs?: number;
  /** One event-loop turn (default: setImmediate) and the clock in ms (default: performance.now); tests drive both. */
  turn?: () => Promise<void>;
  now?: () => number;
}

interface Pending {
  call: CallRecord | CallIntent;
  type: 'ToolCalled' | 'ToolCallStarted';
  /** performance.now() when it was asked for: a store waiting for a lock counts this record's wait from then. */
  at: number;
  resolve(): void;
  reject(e: unknown): void;
}

/** One request per run stream: records of one run in one batch stay in arrival order. */
const toRequests = (batch: readonly Pending[]): AppendRequest[] => {
  const byStream = new Map<string, AppendRequest>();
  for (const { call, type } of batch) {
    // Keyed by owner: a run belongs to the tenant and subject recording into it, whoever else names the same id.
    const streamId = runStream(call.runId, { tenant: call.tenant, subject: call.subject });
    let req = byStream.get(streamId);
    if (!req) {
      // Run streams are append-only logs with many concurrent writers; no decision depends on their revision.
      req = { streamId, events: [], expectedRevision: 'any' };
      byStream.set(streamId, req);
    }
    req.events.push({ type, data: call });
  }
  return [...byStream.values()];
};

const setImmediateTurn = (): Promise<void> => new Promise<void>((r) => setImmediate(r));

export const createCallRecorder = (store: EventStore, options: CallRecorderOptions = {}): CallRecorder => {
  const { maxBatch = 512, holdTurns = 16, holdMs = 1, turn = setImmediateTurn, now = () => performance.now() } = options;
  let queue: Pending[] = [];
  let running: Promise<void> | null = null;
  let lastBatch = 0;

  // The next macrotask turn, so calls finishing in the same tick join the commit; then, under concurrency, more turns
  // while they bring more records.
  const gather = async (): Promise<void> => {
    await turn();
    if (lastBatch <= 1) return;
    const until = now() + holdMs;
    for (let i = 0; i < holdTurns && queue.length < maxBatch && now() < until; i++) {
      const before = queue.length;
      await turn();
      if (queue.length === before) return;
    }
  };

  const drain = async (): Promise<void> => {
    while (queue.length > 0) {
      const batch = queue.slice(0, maxBatch);
      queue = queue.slice(batch.length);
      lastBatch = batch.length;
      try {
        // The batch's oldest record may have waited for the one before it (a lock waited out): the store's wait for a
        // lock is counted from that record's arrival, so no record waits a whole timeout more behind another batch.
        await store.appendMany(toRequests(batch), { since: batch[0]!.at });
        for (const p of batch) p.resolve();
      } catch (e) {
        for (const p of batch) p.reject(e);
      }
    }
  };

  const kick = (): Promise<void> => {
    if (!running) {
      running = gather()
        .then(drain)
        .finally(() => {
          running = null;
          if (queue.length > 0) void kick();
        });
    }
    return running;
  };

  return {
    record(call) {
      return new Promise<void>((resolve, reject) => {
        queue.push({ call, type: 'ToolCalled', at: performance.now(), resolve, reject });
        void kick();
      });
    },
    start(intent) {
      return new Promise<void>((resolve, reject) => {
        queue.push({ call: intent, type: 'ToolCallStarted', at: performance.now(), resolve, reject });
        void kick();
      });
    },
    async flush() {
      while (running || queue.length > 0) await kick();
    },
  };
};

/**
 * Every stored event of every run named `runId`, grouped by stream (one group per owner; plus the stream written before
 * runs were keyed by owner, if any), each in revision order. For operators (`estate calls`): it scans the run streams.
 */
export const readRunStreams = async (store: EventStore, runId: string): Promise<StoredEvent[][]> => {
  const groups = new Map<string, StoredEvent[]>();
  await scanRunStreams(store, runId, (e) => {
    let g = groups.get(e.streamId);
    if (!g) groups.set(e.streamId, (g = []));
    g.push(e);
  });
  for (const g of groups.values()) g.sort((a, b) => a.revision - b.revision);
  return [...groups.values()];
};

/**
 * Every stored event of every run named `runId`, one at a time, page by page (the stream written before runs were keyed
 * by owner first): for a reader that keeps only what it needs of a run of any length.
 */
export const scanRunStreams = async (store: EventStore, runId: string, visit: (e: StoredEvent) => void): Promise<void> => {
  const pages = async (streamId: string): Promise<void> => {
    for await (const page of readStreamPages(store, streamId)) for (const e of page) visit(e);
  };
  await pages(runStream(runId));
  // Where the store finds streams by id (SQLite), the run's own streams are read, not the log past every other event:
  // one run's page on a log of 1,000,000 other events held the serving thread 343 ms (SQLite), whoever asked.
  if (store.streamIds) {
    for (const id of await store.streamIds(runStreamPrefix(runId))) await pages(id);
    return;
  }
  let after: string | null = null;
  for (;;) {
    const page = await store.readAll({ after, streamPrefix: runStreamPrefix(runId) });
    if (page.length === 0) break;
    for (const e of page) visit(e);
    after = (page[page.length - 1] as StoredEvent).position;
    // Between pages the thread is let go: a store that answers at once (SQLite) held it for a whole long run's read.
    await setImmediateTurn();
  }
};
