/**
 * `estate copy` (SPEC §9): every event of one store appended to another, in the source's order, with its stream,
 * revision, type, data and recorded time. How an estate outgrows the embedded store.
 *
 * Why it can be killed at any moment and resumed: each batch is ONE `appendMany` (one commit on SQLite and
 * PostgreSQL), so the target always holds a prefix of the source's log, in the same order. Resuming checks that the
 * target's events are the source's first ones, one for one, and continues after the last of them. Every
 * append also states the exact revision it expects (the source event's revision - 1), so even a wrong guess could
 * never write a duplicate or leave a gap inside a stream: the store would refuse the batch.
 */
import { CATALOGUE_SNAPSHOT } from '#app/catalogue-snapshot';
import { ConcurrencyError, type AppendRequest, type EventStore, type StoredEvent } from '#app/ports';
import { RUNS_SNAPSHOT } from '#app/runs-snapshot';
import { DomainError } from '#domain/errors';
import { canonicalJson } from '#domain/hash';

export interface CopyProgress {
  /** Events in the target so far (those of an earlier, interrupted copy included). */
  copied: number;
  /** Events this run appended. */
  appended: number;
  /** The source position of the last event copied. */
  position: string | null;
}

export interface CopyOptions {
  /** Continue an interrupted copy instead of refusing a non-empty target. */
  resume?: boolean;
  /** Events per commit. Default 500. */
  batchSize?: number;
  onProgress?(p: CopyProgress): void;
  /** Resuming: how many of the target's events have been checked against the source so far (after each page). */
  onChecked?(checked: number): void;
}

export interface CopyResult extends CopyProgress {
  /** Events the target already held when this run started (resume). */
  resumedAfter: number;
}

const DEFAULT_BATCH = 500;
const SCAN_PAGE = 5000;

/** Up to `n` of the source's events after a position (a read may return fewer than asked: asked again). */
const readUpTo = async (store: EventStore, after: string | null, n: number): Promise<StoredEvent[]> => {
  const out: StoredEvent[] = [];
  while (out.length < n) {
    const page = await store.readAll({ after: out.at(-1)?.position ?? after, limit: n - out.length });
    if (page.length === 0) break;
    out.push(...page);
  }
  return out;
};

const sameEvent = (a: StoredEvent, b: StoredEvent): boolean =>
  a.streamId === b.streamId &&
  a.revision === b.revision &&
  a.type === b.type &&
  Date.parse(a.recordedAt) === Date.parse(b.recordedAt) &&
  canonicalJson(a.data ?? null) === canonicalJson(b.data ?? null);

const notACopy = (detail: string): DomainError =>
  new DomainError('conflict', 'target-not-a-copy', `copy --resume: ${detail}: the target is not an interrupted copy of this source`);

/**
 * Where in the source to continue, and how many events the target holds: the target's log, read whole, must be the
 * source's first events, one for one and in order. Checking its last event alone accepted a target copied from another
 * source whose last event this source also holds (two stores with a shared history), and appended the rest onto it.
 */
const resumePoint = async (from: EventStore, to: EventStore, onChecked?: (n: number) => void): Promise<{ after: string | null; count: number }> => {
  let targetAfter: string | null = null;
  let after: string | null = null;
  let count = 0;
  for (;;) {
    const mine = await to.readAll({ after: targetAfter, limit: SCAN_PAGE });
    if (mine.length === 0) return { after, count };
    const theirs = await readUpTo(from, after, mine.length);
    for (const [i, t] of mine.entries()) {
      const s = theirs[i];
      if (s === undefined) throw notACopy(`the target holds more events than the source (${count + i} in the source)`);
      if (!sameEvent(s, t)) {
        throw notACopy(`the target's event ${count + i + 1} (${t.streamId}@${t.revision}, ${t.type}) is not the source's (${s.streamId}@${s.revision}, ${s.type}, source position ${s.position}) as it is in the target`);
      }
    }
    count += mine.length;
    targetAfter = mine[mine.length - 1]!.position;
    after = theirs[theirs.length - 1]!.position;
    onChecked?.(count);
  }
};

/**
 * A target without events but with a projection snapshot: no snapshot is ever written of an empty log, so this one was
 * made from another log whose events were removed by hand (the tables beside them left). A server on the copy would
 * restore it and read only the events after its position, a position of that other log: it served 61 tools of a log
 * that holds 40. Snapshots are a cache the copy does not carry (positions are per store), so the target must have none.
 */
const refuseStaleSnapshots = async (to: EventStore): Promise<void> => {
  for (const name of [CATALOGUE_SNAPSHOT, RUNS_SNAPSHOT]) {
    const head = await to.snapshots?.head(name);
    if (!head) continue;
    throw new DomainError(
      'conflict',
      'target-has-snapshots',
      `copy: the target holds no events but a ${name} snapshot (position ${head.position}, ${head.eventCount} events, written ${head.writtenAt}) made from another log, which a server on the copy would restore; delete the target's projection_snapshots rows, or copy into a new store`,
    );
  }
};

/** The event named for people: where it is in the source, and what it is. */
const named = (e: StoredEvent): string => `${e.streamId}@${e.revision} (${e.type}, source position ${e.position})`;

/**
 * A source event the store would never have written: the copy refuses it by name rather than write something else.
 * A recorded time that is not a time would otherwise fail as "Invalid time value", naming nothing.
 */
const timeOf = (e: StoredEvent): string => {
  const ms = Date.parse(e.recordedAt);
  if (Number.isNaN(ms)) {
    throw new DomainError('conflict', 'source-event-invalid', `copy: the source's event ${named(e)} has a recorded time that is not a time: '${e.recordedAt}'; nothing of this batch was written`);
  }
  return new Date(ms).toISOString();
};

/**
 * A NUL character in a stream id or a type: Estate never writes one (stream ids are made of checked names and run ids,
 * types are its own), and PostgreSQL's text cannot hold one, so a batch with it failed there with PostgreSQL's own
 * "invalid byte sequence for encoding \"UTF8\": 0x00", naming no event. Refused on every target, so a source copies
 * the same way wherever it goes. Data is not checked: it travels as JSON text, where a NUL is the escape `\u0000`,
 * which PostgreSQL's `json` column keeps as it came (it is `jsonb` that refuses it).
 */
const refuseNul = (e: StoredEvent): void => {
  const where = e.streamId.includes('\u0000') ? 'stream id' : e.type.includes('\u0000') ? 'type' : undefined;
  if (where === undefined) return;
  throw new DomainError(
    'conflict',
    'source-event-invalid',
    `copy: the source's event ${JSON.stringify(e.streamId)}@${e.revision} (${JSON.stringify(e.type)}, source position ${e.position}) has a NUL ` +
      `character in its ${where}, which Estate never writes and PostgreSQL cannot store; nothing of this batch was written (correct the source, ` +
      'then --resume)',
  );
};

/** A stream of the source that skips a revision: the target numbers its events itself, so it would renumber them. */
const gapError = (e: StoredEvent, previous: number): DomainError =>
  new DomainError(
    'conflict',
    'source-gap',
    `copy: the source's stream ${e.streamId} has no revision ${e.revision - 1}: its event ${named(e)} follows ${previous < 0 ? 'nothing' : `revision ${previous}`}; a copy would renumber it, so nothing of this batch was written`,
  );

/**
 * Consecutive events of one stream become one request, so the batch keeps the source's order exactly. Within a request
 * the store numbers the events itself from the revision expected, so each must follow the one before it: a gap in the
 * source (written around the store) would be renumbered in the target, not refused.
 */
const toRequests = (page: readonly StoredEvent[]): AppendRequest[] => {
  const requests: AppendRequest[] = [];
  let previous: StoredEvent | undefined;
  for (const e of page) {
    refuseNul(e);
    if (!Number.isSafeInteger(e.revision) || e.revision < 0) {
      throw new DomainError('conflict', 'source-event-invalid', `copy: the source's event ${named(e)} has a revision that is not a whole number from 0; nothing of this batch was written`);
    }
    let current = requests[requests.length - 1];
    if (current?.streamId !== e.streamId) {
      current = { streamId: e.streamId, events: [], expectedRevision: e.revision - 1 };
      requests.push(current);
    } else if (e.revision !== previous!.revision + 1) {
      throw gapError(e, previous!.revision);
    }
    current.events.push({ type: e.type, data: e.data, recordedAt: timeOf(e) });
    previous = e;
  }
  return requests;
};

/**
 * Why the target refused a batch: the revision it expected is missing in the SOURCE (a gap, or a stream that does not
 * start at 0), or the target's stream is not the source's (something else wrote to it).
 */
const refusal = async (from: EventStore, page: readonly StoredEvent[], e: ConcurrencyError): Promise<DomainError> => {
  const first = page.find((p) => p.streamId === e.streamId && p.revision - 1 === e.expected);
  if (first !== undefined) {
    const [before] = first.revision === 0 ? [] : await from.readStream(first.streamId, { fromRevision: first.revision - 1, direction: 'backwards', limit: 1 });
    if (first.revision > 0 && before?.revision !== first.revision - 1) return gapError(first, before?.revision ?? -1);
  }
  return new DomainError(
    'conflict',
    'target-diverged',
    `copy: stream ${e.streamId} in the target does not match the source (expected revision ${String(e.expected)}, found ${e.actual ?? 'another'}): something else writes to the target; nothing of this batch was written`,
  );
};

export const copyStore = async (from: EventStore, to: EventStore, options: CopyOptions = {}): Promise<CopyResult> => {
  const batchSize = options.batchSize ?? DEFAULT_BATCH;
  if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > 10_000) {
    throw new DomainError('usage', 'bad-batch-size', `--batch-size must be a whole number from 1 to 10000, got ${batchSize}`);
  }
  let after: string | null = null;
  let resumedAfter = 0;
  const [first] = await to.readAll({ limit: 1 });
  if (first) {
    if (!options.resume) {
      throw new DomainError(
        'conflict',
        'target-not-empty',
        'copy: the target store already holds events; copy only into an empty store, or add --resume to continue an interrupted copy into it',
      );
    }
    ({ after, count: resumedAfter } = await resumePoint(from, to, options.onChecked));
  } else {
    await refuseStaleSnapshots(to);
  }

  let appended = 0;
  for (;;) {
    const page = await from.readAll({ after, limit: batchSize });
    if (page.length === 0) break;
    const requests = toRequests(page);
    try {
      await to.appendMany(requests);
    } catch (e) {
      if (!(e instanceof ConcurrencyError)) throw e;
      throw await refusal(from, page, e);
    }
    appended += page.length;
    after = page[page.length - 1]!.position;
    options.onProgress?.({ copied: resumedAfter + appended, appended, position: after });
  }
  return { copied: resumedAfter + appended, appended, position: after, resumedAfter };
};
