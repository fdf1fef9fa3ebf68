/**
 * The relay's lease and checkpoint, kept in one event-store stream (`relay-<topic>`). Every event is the whole state
 * `{holder, position, ttlMs}`; only the last one counts. Writing it with the expected revision of the last event read
 * is what makes the lease exclusive: two candidates racing to take (or one to renew while another takes over) cannot
 * both append after the same revision — the store's optimistic concurrency (ConcurrencyError) picks one.
 *
 * Expiry is judged without comparing clocks across machines: a candidate measures, on its OWN monotonic clock, how
 * long the stream's last revision has stood unchanged since it first saw it; the holder's `ttlMs` elapsed → expired.
 * The holder counts its own validity from just BEFORE its last successful append, so it always believes in its lease
 * for less time than any rival waits before taking it. A holder that was paused past its lease (GC, SIGSTOP) finds
 * out at its next append (a conflict) and steps down; what it produced meanwhile is a duplicate, which at-least-once
 * delivery allows and consumers deduplicate by position.
 */
import { z } from 'zod';
import { ConcurrencyError, type EventStore, type StoredEvent } from './ports.ts';

export const RELAY_STATE_EVENT = 'RelayStateRecorded';

const stateSchema = z.object({ holder: z.string(), position: z.string().nullable(), ttlMs: z.number().int().positive() });
export type RelayState = z.infer<typeof stateSchema>;

export interface RelayLeaseOptions {
  store: EventStore;
  streamId: string;
  holder: string;
  ttlMs: number;
  /** Monotonic milliseconds. Default: performance.now(). */
  now?: () => number;
}

export class RelayLease {
  private readonly store: EventStore;
  readonly streamId: string;
  readonly holder: string;
  readonly ttlMs: number;
  private readonly now: () => number;
  /** Revision of the last event seen (-1: none). */
  private revision = -1;
  private state: RelayState | null = null;
  /** Local time at which `revision` was first seen. */
  private seenAt = 0;
  /** Local time before our last successful append, or null when we do not hold the lease. */
  private heldSince: number | null = null;

  constructor(o: RelayLeaseOptions) {
    this.store = o.store;
    this.streamId = o.streamId;
    this.holder = o.holder;
    this.ttlMs = o.ttlMs;
    this.now = o.now ?? (() => performance.now());
  }

  /** The checkpoint: position of the last catalogue event Kafka acknowledged (null: none yet). */
  get position(): string | null {
    return this.state?.position ?? null;
  }

  get currentHolder(): string | null {
    return this.state?.holder ?? null;
  }

  get isHeld(): boolean {
    return this.heldSince !== null && this.now() - this.heldSince < this.ttlMs;
  }

  /** A third of the lease gone: time to renew, leaving two thirds for a slow store. */
  get renewDue(): boolean {
    return this.heldSince === null || this.now() - this.heldSince >= this.ttlMs / 3;
  }

  /**
   * Read the stream's last event, if it is newer than the one we saw. Only the last counts, and the stream grows by
   * one event a second while a relay runs (a renewal every third of the default 3 s TTL): read from the start, a
   * month of it (2.6 million events) would be read at every start of every replica.
   */
  async refresh(): Promise<void> {
    const [last] = await this.store.readStream(this.streamId, { direction: 'backwards', limit: 1 });
    if (!last || last.revision <= this.revision) return;
    this.observe(last);
  }

  private observe(last: StoredEvent): void {
    this.revision = last.revision;
    this.seenAt = this.now();
    const parsed = stateSchema.safeParse(last.data);
    // An unreadable state keeps the last good checkpoint and is held by nobody (holder ''), like a released one.
    this.state = parsed.success ? parsed.data : { holder: '', position: this.state?.position ?? null, ttlMs: this.ttlMs };
    if (this.state.holder !== this.holder) this.heldSince = null;
  }

  /** Take the lease if free or expired (or renew it if ours). True when we hold it afterwards. */
  async tryAcquire(): Promise<boolean> {
    if (this.isHeld) return this.renew();
    await this.refresh();
    const expired = this.state === null || this.state.holder === '' || this.now() - this.seenAt >= this.state.ttlMs;
    if (!expired) return false;
    return this.write(this.position);
  }

  /** Extend the lease; false if it was lost (someone else took it). */
  renew(): Promise<boolean> {
    return this.write(this.position);
  }

  /** Move the checkpoint (only after Kafka acknowledged everything up to `position`); false if the lease was lost. */
  record(position: string): Promise<boolean> {
    return this.write(position);
  }

  /** Let a successor take over at once instead of after the TTL (a clean shutdown). */
  async release(): Promise<void> {
    if (!this.isHeld) return;
    await this.writeState({ holder: '', position: this.position, ttlMs: 1 }).catch(() => undefined);
    this.heldSince = null;
  }

  private async write(position: string | null): Promise<boolean> {
    return this.writeState({ holder: this.holder, position, ttlMs: this.ttlMs });
  }

  private async writeState(state: RelayState): Promise<boolean> {
    const before = this.now();
    try {
      const r = await this.store.append(this.streamId, [{ type: RELAY_STATE_EVENT, data: state }], {
        expectedRevision: this.revision < 0 ? 'no_stream' : this.revision,
      });
      this.revision = r.revision;
      this.seenAt = before;
      this.state = state;
      this.heldSince = state.holder === this.holder ? before : null;
      return this.heldSince !== null;
    } catch (e) {
      if (!(e instanceof ConcurrencyError)) throw e;
      this.heldSince = null;
      await this.refresh();
      return false;
    }
  }
}
