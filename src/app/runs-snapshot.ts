/**
 * The runs index (./runs-index.ts) as a snapshot named `runs`: a line of JSON per run, in the order the runs were
 * last written to, after a first line with the index's counters; chunks of at most CHUNK_CHARS. Trusted only when the
 * version tag, the chunk count, the checksum and every line's shape check; otherwise the index is read from the log,
 * as if there were no snapshot (it only ever saves time).
 */
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import { createHash } from 'node:crypto';
import type { EventAnchor } from '#domain/events';
import type { SnapshotStore, StoredSnapshotHead } from './ports.ts';
import { readStoredSnapshot } from './snapshot-read.ts';

export const RUNS_SNAPSHOT = 'runs';
/** Bumped with any change to what a run line holds or how the index folds. */
export const RUNS_SNAPSHOT_VERSION = 'runs-3';
const CHUNK_CHARS = 256 * 1024;

/** One run stream (one owner's calls under a run id) as the index has folded it so far, and as its snapshot holds it. */
export interface RunEntry {
  streamId: string;
  runId: string;
  /** Outcomes on record. */
  calls: number;
  first: string;
  last: string;
  subject: string;
  tenant: string;
  /** The tools it called, in the order first called, as many as the index keeps. */
  tools: string[];
  /** Present (true) when it called more tools than `tools` names. */
  moreTools?: true;
  /**
   * Intents with no outcome seen yet. An outcome follows its intent in the run's stream, so it is removed when it
   * comes: what is held is the unfinished calls, not every call id of the run.
   */
  open: Set<string>;
  /** Where in the fold its latest call came: orders runs whose latest calls share a millisecond. */
  lastSeq: number;
  /** The stream's revision last folded: an event at or below it is one already counted (a stream read back). */
  revision: number;
  /** Written to again after it was dropped: its counts lack the calls before, until its stream is read back. */
  partial: boolean;
}

/** The index's state at one position. */
export interface RunsCut {
  position: string | null;
  /** The event at `position`: a restore checks that its store's log has it there (snapshot-read.ts). */
  anchor: EventAnchor | null;
  seq: number;
  dropped: number;
  folded: number;
  runs: RunEntry[];
}

export type RunsSnapshotRead = { kind: 'none' } | { kind: 'stale'; version: string } | { kind: 'corrupt'; reason: string } | { kind: 'loaded'; cut: RunsCut & { position: string; anchor: EventAnchor } };

const encodeRun = (r: RunEntry): string => JSON.stringify([r.streamId, r.runId, r.calls, r.first, r.last, r.subject, r.tenant, r.tools, [...r.open], r.lastSeq, r.revision, r.partial, r.moreTools === true]);

/**
 * Store the cut. Its runs are the index's own objects, which its later reads change: their text is made at once, in
 * this call's first step, before anything is awaited.
 */
export async function writeRunsSnapshot(store: SnapshotStore, cut: RunsCut): Promise<{ chars: number }> {
  const position = cut.position;
  if (position === null || cut.anchor === null) return { chars: 0 };
  const n = [cut.anchor.streamId, cut.anchor.revision];
  const lines = cut.runs.map(encodeRun);
  const hash = createHash('sha256');
  let chunkCount = 0;
  let chars = 0;
  async function* chunks(): AsyncGenerator<string> {
    let chunk = `${JSON.stringify({ seq: cut.seq, dropped: cut.dropped, n })}\n`;
    for (const line of lines) {
      if (chunk.length + line.length > CHUNK_CHARS) {
        hash.update(chunk);
        chunkCount++;
        chars += chunk.length;
        yield chunk;
        chunk = '';
        await yieldToLoop();
      }
      chunk += `${line}\n`;
    }
    hash.update(chunk);
    chunkCount++;
    chars += chunk.length;
    yield chunk;
  }
  await store.write(chunks(), () => ({ name: RUNS_SNAPSHOT, version: RUNS_SNAPSHOT_VERSION, position, eventCount: cut.folded, checksum: hash.digest('hex'), chunkCount, chars, writtenAt: new Date().toISOString() }));
  return { chars };
}

class Corrupt extends Error {}

const isStr = (v: unknown): v is string => typeof v === 'string';
const isInt = (v: unknown): v is number => Number.isSafeInteger(v);

const decodeRun = (line: string): RunEntry => {
  const a: unknown = JSON.parse(line);
  if (!Array.isArray(a) || a.length !== 13) throw new Corrupt('a run line is not a 13-field array');
  const [streamId, runId, calls, first, last, subject, tenant, tools, open, lastSeq, revision, partial, moreTools] = a as unknown[];
  const strings = [streamId, runId, first, last, subject, tenant];
  if (!strings.every(isStr) || !isInt(calls) || !isInt(lastSeq) || !isInt(revision) || typeof partial !== 'boolean' || typeof moreTools !== 'boolean') throw new Corrupt('a run line has a field of the wrong type');
  if (!Array.isArray(tools) || !tools.every(isStr) || !Array.isArray(open) || !open.every(isStr)) throw new Corrupt('a run line has a field of the wrong type');
  const [sid, rid, f, l, s, t] = strings as string[];
  const run: RunEntry = { streamId: sid as string, runId: rid as string, calls, first: f as string, last: l as string, subject: s as string, tenant: t as string, tools, open: new Set(open), lastSeq, revision, partial };
  if (moreTools) run.moreTools = true;
  return run;
};

/** Read the stored runs snapshot, checking everything on the way. */
export const readRunsSnapshot = (store: SnapshotStore): Promise<RunsSnapshotRead> => readStoredSnapshot(store, RUNS_SNAPSHOT, (head) => readFrom(store, head));

async function readFrom(store: SnapshotStore, head: StoredSnapshotHead): Promise<RunsSnapshotRead> {
  if (head.version !== RUNS_SNAPSHOT_VERSION) return { kind: 'stale', version: head.version };
  const hash = createHash('sha256');
  const runs: RunEntry[] = [];
  let counters: { seq: number; dropped: number; anchor: EventAnchor } | undefined;
  let chunks = 0;
  try {
    for await (const chunk of store.chunks(head)) {
      hash.update(chunk);
      chunks++;
      for (const line of chunk.split('\n')) {
        if (line === '') continue;
        if (counters) {
          runs.push(decodeRun(line));
          continue;
        }
        const c = JSON.parse(line) as { seq?: unknown; dropped?: unknown; n?: unknown } | null;
        if (!isInt(c?.seq) || !isInt(c?.dropped)) throw new Corrupt('the first line is not the counters');
        const n = c.n;
        if (!Array.isArray(n) || n.length !== 2 || !isStr(n[0]) || !isInt(n[1])) throw new Corrupt('the first line names no event to end at');
        counters = { seq: c.seq, dropped: c.dropped, anchor: { streamId: n[0], revision: n[1] } };
      }
      await yieldToLoop();
    }
    if (chunks !== head.chunkCount) throw new Corrupt(`truncated: ${chunks} of ${head.chunkCount} chunks`);
    if (hash.digest('hex') !== head.checksum) throw new Corrupt('checksum mismatch');
    if (!counters) throw new Corrupt('empty');
  } catch (e) {
    if (e instanceof Corrupt || e instanceof SyntaxError) return { kind: 'corrupt', reason: e.message };
    throw e;
  }
  return { kind: 'loaded', cut: { position: head.position, anchor: counters.anchor, seq: counters.seq, dropped: counters.dropped, folded: head.eventCount, runs } };
}
