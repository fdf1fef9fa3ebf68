/**
 * The ports the application core depends on. Adapters (src/store, src/bus) implement them; only src/compose picks one.
 */
import type { CatalogueChange } from '#domain/events';

// ───────────────────────────── EventStore ─────────────────────────────

/**
 * What the writer believes about the stream before appending.
 * - `no_stream`: the stream must not exist yet;
 * - `exists`: it must have at least one event;
 * - `any`: no check;
 * - a number: the revision of the stream's LAST event must be exactly this (first event = revision 0).
 * An empty/missing stream has revision -1 in every adapter (the ESDB convention); map it in the adapter.
 */
export type ExpectedRevision = 'no_stream' | 'exists' | 'any' | number;

export interface EventToAppend {
  type: string;
  /** JSON-serialisable payload. */
  data: unknown;
  /**
   * When it was first recorded, ISO-8601: only `estate copy` sets it, so a moved estate keeps its history's times
   * (replay `--at <time>`, run listings). Absent: the store's own clock at commit.
   */
  recordedAt?: string;
}

export interface StoredEvent {
  streamId: string;
  /** 0-based, gap-free within the stream. */
  revision: number;
  /**
   * Opaque, made by the store; identifies the event and orders `readAll`. Only the adapter that made it can interpret
   * it (a decimal number for SQLite and memory; `<xid>:<seq>` style for PostgreSQL; commit:prepare for KurrentDB).
   */
  position: string;
  type: string;
  data: unknown;
  /** ISO-8601, when the store recorded it. */
  recordedAt: string;
}

export interface AppendResult {
  /** Revision of the last event appended. */
  revision: number;
  /** Position of each appended event, in order. */
  positions: string[];
}

export interface AppendRequest {
  streamId: string;
  events: EventToAppend[];
  expectedRevision: ExpectedRevision;
}

export interface ReadAllOptions {
  /** Exclusive: return events strictly after this position; null/undefined = from the beginning. */
  after?: string | null;
  /** Page size; adapters may return fewer. Default 1000. */
  limit?: number;
  /** Only streams whose id starts with this prefix (e.g. `tool-`). */
  streamPrefix?: string;
}

export interface ReadStreamOptions {
  /** Forwards: the first revision read (default 0). Backwards: the highest (default: the stream's last). */
  fromRevision?: number;
  /** At most this many events (a positive whole number); none: every one from `fromRevision` on. */
  limit?: number;
  /**
   * `backwards`: newest first, from `fromRevision` down. For a stream whose last event is its state (the relay's
   * lease and checkpoint, one event a second while a relay runs): read the end, not the years before it.
   */
  direction?: 'forwards' | 'backwards';
}

/** A page of `readAll` and whether the read reached the end of the log (`EventStore.readAllPage`). */
export interface LogPage {
  events: StoredEvent[];
  end: boolean;
}

/** A bulk read of the log (a replay): `limit` is the page size. */
export type ScanOptions = ReadAllOptions;

export interface SubscribeOptions extends Omit<ReadAllOptions, 'limit'> {
  /**
   * Called with each batch, in `readAll` order, never concurrently: the next batch waits for the promise.
   * Events committed by OTHER processes on the same store must arrive too (tail the store, not just this process).
   */
  onEvents(events: StoredEvent[]): Promise<void> | void;
  onError?(error: unknown): void;
}

export interface Subscription {
  close(): Promise<void>;
}

/** Thrown by every adapter, and only this type, when an expected revision does not hold. */
export class ConcurrencyError extends Error {
  readonly streamId: string;
  readonly expected: ExpectedRevision;
  /** The stream's actual revision (-1 = no stream), if the adapter knows it. */
  readonly actual: number | undefined;

  constructor(streamId: string, expected: ExpectedRevision, actual?: number) {
    super(`stream ${streamId}: expected revision ${String(expected)}, actual ${actual ?? 'unknown'}`);
    this.name = 'ConcurrencyError';
    this.streamId = streamId;
    this.expected = expected;
    this.actual = actual;
  }
}

/** What `EventStore.heldBack` reports. */
export interface HeldBack {
  /** Committed events a read of the log does not return yet (capped at HELD_BACK_COUNT_CAP). */
  events: number;
  /** Age of the oldest of them by its recorded time, in seconds (0 when none; a copied event keeps its original time). */
  oldestSeconds: number;
  /** When some are held: the oldest open write transaction, which holds them (as far as the store can see it). */
  holder?: HeldBackHolder;
}

/**
 * The transaction that holds the log back (PostgreSQL: the session with the oldest transaction id still running, or a
 * prepared transaction). Names what the store's role may see: any role sees a session's pid, database, user and
 * application; its state and start only a role allowed to read that user's statistics.
 */
export interface HeldBackHolder {
  /** Server process id of the session (`pg_terminate_backend` takes it); absent for a prepared transaction. */
  pid?: number;
  /** A prepared (two-phase) transaction's id: it holds until COMMIT PREPARED or ROLLBACK PREPARED, with no session. */
  prepared?: string;
  database: string;
  user: string;
  /** The session's `application_name` ('' when none or a prepared transaction). */
  application: string;
  /** e.g. 'idle in transaction' (absent when not visible to the store's role). */
  state?: string;
  /** Seconds since the transaction started (or was prepared); absent when not visible to the store's role. */
  seconds?: number;
}
export const HELD_BACK_COUNT_CAP = 10_000;

export interface AppendManyOptions {
  /**
   * `performance.now()` when the oldest of these writes was asked for (default: now). A store that waits for another
   * connection's lock (SQLite's busy timeout) counts the wait from then: writes that queued behind a batch that waited
   * out a lock have waited already, and are not given a whole timeout more.
   */
  since?: number;
}

export interface EventStore {
  /** `sqlite`, `memory`, `postgres`, `kurrentdb`: for logs and benchmarks. */
  readonly kind: string;

  /** Atomically append to one stream, checking the expected revision. Throws ConcurrencyError on a mismatch. */
  append(streamId: string, events: EventToAppend[], options: { expectedRevision: ExpectedRevision }): Promise<AppendResult>;

  /**
   * Append to several streams in one durable commit where the backend can (group commit of call records); all or
   * nothing when it can. Results are in request order.
   */
  appendMany(requests: AppendRequest[], options?: AppendManyOptions): Promise<AppendResult[]>;

  /**
   * The events of a stream, in revision order, starting at `fromRevision` (default 0): at most `limit` of them
   * (default: every one); with `direction: 'backwards'`, newest first. Empty if no stream. A stream of any length is
   * read page by page with `readStreamPages` (./read-pages.ts).
   */
  readStream(streamId: string, options?: ReadStreamOptions): Promise<StoredEvent[]>;

  /** One page of the global log, in the store's order, strictly after `after`. */
  readAll(options?: ReadAllOptions): Promise<StoredEvent[]>;

  /**
   * Optional: the ids of the streams whose id starts with `prefix`, in id order, found by the store's index of stream
   * ids (SQLite, PostgreSQL, memory). For a reader of a few streams among many (one run's streams, one per owner: the
   * console's run page); without it they are found by reading the log under the prefix, past every other event.
   */
  streamIds?(prefix: string): Promise<string[]>;

  /**
   * Optional: committed events the log cannot be read past yet, and the age of the oldest (PostgreSQL: a read stops at
   * the oldest write transaction still open anywhere in the cluster, whose rows may yet come before them; a long one,
   * even another application's, holds back every reader and the relay). Counted up to HELD_BACK_COUNT_CAP.
   */
  heldBack?(): Promise<HeldBack>;

  /**
   * Optional: `readAll`'s page, and whether it reached the end of the log as the read found it. `end: true` promises
   * that a read after the page's last event (or after `after`, for an empty page) would have found nothing then;
   * `end: false` promises nothing (a short page may not be the end: PostgreSQL reads a prefix window by window). A
   * catch-up that knows it has reached the end need not ask for the empty page that says so: one store round trip
   * fewer for every change a replica learns of (`pageThrough`, src/app/read-pages.ts).
   */
  readAllPage?(options?: ReadAllOptions): Promise<LogPage>;

  /**
   * Optional: the log from `after` to its end as the read finds it, in pages of `limit`, in `readAll` order, read ahead
   * of the consumer (SQLite: on a thread of its own for a long read). For replays; `readPages` (src/app/read-pages.ts)
   * falls back to paging `readAll` where a store has none. Leaving the loop early stops the read.
   */
  scan?(options?: ScanOptions): AsyncIterable<StoredEvent[]>;

  /** Catch up from `after`, then tail. Survives transient read errors (reported through onError) by retrying. */
  subscribe(options: SubscribeOptions): Subscription;

  /**
   * Where this store keeps projection snapshots (SQLite and PostgreSQL: a `projection_snapshots` table beside the
   * events); absent when it keeps none (memory, KurrentDB), and a process then replays from the first event.
   */
  readonly snapshots?: SnapshotStore;

  close(): Promise<void>;
}

// ───────────────────────────── SnapshotStore ─────────────────────────────

/**
 * One stored projection snapshot: a read-side cache, never a source of truth. The state itself is text in chunks
 * (src/app/catalogue-snapshot.ts makes and checks it); the store only keeps them with this head.
 */
export interface SnapshotHead {
  /** Which projection (`catalogue`). */
  name: string;
  /** The projection's version tag when written: another tag means "rebuild from events". */
  version: string;
  /** Position of the last event folded in; the tail is read after it. */
  position: string;
  /** Events folded in (the projection's own count). */
  eventCount: number;
  /** sha256 hex over the chunks' UTF-8 text, in order. */
  checksum: string;
  chunkCount: number;
  /** Characters over all chunks. */
  chars: number;
  /** ISO-8601. */
  writtenAt: string;
}

export interface StoredSnapshotHead extends SnapshotHead {
  /** Made by the adapter: which write the chunks belong to. */
  readonly id: string;
}

export interface SnapshotStore {
  /** The last snapshot written completely under that name; null when there is none. */
  head(name: string): Promise<StoredSnapshotHead | null>;
  /** That snapshot's chunks, in order (fewer than `chunkCount` when rows went missing: the reader judges). */
  chunks(head: StoredSnapshotHead): AsyncIterable<string>;
  /**
   * Store a snapshot: each chunk as it comes (the caller yields between them, so a large state is never written in
   * one step), then, in one commit, the head that `head()` returns once every chunk is in, replacing the previous
   * snapshot of that name. A write that fails half-way leaves the previous snapshot in place.
   */
  write(chunks: AsyncIterable<string>, head: () => SnapshotHead): Promise<void>;
}

// ───────────────────────────── Clock ─────────────────────────────

export interface Clock {
  /** ISO-8601 UTC. */
  now(): string;
}

export const systemClock: Clock = { now: () => new Date().toISOString() };

/**
 * Monotonic time and waiting, for the loops that run on their own (relay, bus follower): injected so that their
 * logic is tested on a hand-driven clock, never by racing the wall clock.
 */
export interface Timer {
  /** Monotonic milliseconds. */
  now(): number;
  /** Resolves after `ms`, or as soon as `signal` aborts (it resolves then too; it never rejects). */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

export const systemTimer: Timer = {
  now: () => performance.now(),
  sleep: (ms, signal) =>
    new Promise<void>((resolve) => {
      if (signal?.aborted) return resolve();
      const done = (): void => {
        clearTimeout(t);
        signal?.removeEventListener('abort', done);
        resolve();
      };
      const t = setTimeout(done, ms);
      signal?.addEventListener('abort', done, { once: true });
    }),
};

// ───────────────────────────── ChangeBus ─────────────────────────────

/** One catalogue change as carried on the bus (SPEC §4); declared with the events in src/domain/events.ts. */
export type { CatalogueChange } from '#domain/events';

/**
 * Carries catalogue changes to every replica; the relay (src/app/relay.ts) puts them on it through a
 * `ChangePublisher`. What every adapter keeps (test/contract/change-bus-contract.ts runs it against each):
 * - every bus instance sees every change published after its `start()` began (each replica is its own consumer), and
 *   none published before it (the caller's catch-up from the store covers those);
 * - changes of one tool arrive in the order published; there is no order across tools;
 * - delivery is at least once: consumers deduplicate by position;
 * - `onChange` is awaited and never called concurrently, so a slow consumer slows delivery instead of piling up;
 * - a malformed message is skipped (and logged), never delivered and never the end of delivery;
 * - after `stop()` resolves, `onChange` is not called again.
 */
export interface ChangeBus {
  readonly kind: string;
  /** Start delivering changes to `onChange`; resolves once changes published from now on will be delivered. */
  start(onChange: (changes: CatalogueChange[]) => Promise<void> | void): Promise<void>;
  stop(): Promise<void>;
}

/** Where the relay's changes go; `publish` resolves only once the bus acknowledged every change. */
export interface ChangePublisher {
  publish(changes: readonly CatalogueChange[]): Promise<void>;
  close(): Promise<void>;
}
