/**
 * The relay: puts every catalogue event of the store on the change bus, once at least, in store order.
 *
 * Checkpoint. The relay reads `tool-` events after its checkpoint, hands them to the publisher, and only once the
 * publisher says Kafka acknowledged them (acks from all in-sync replicas) appends the new checkpoint to the event
 * store. A change made while Kafka is down waits in the store and is sent when Kafka returns; a relay killed between
 * the send and the checkpoint sends that batch again (a duplicate, never a loss); consumers deduplicate by position.
 *
 * Exactly one relay publishes at a time: why a lease in the event store itself (see relay-lease.ts).
 * - It works on every store Estate runs on (SQLite, memory, PostgreSQL, KurrentDB) with the one primitive the port
 *   already guarantees everywhere, an append with an expected revision. A PostgreSQL advisory lock would tie the
 *   design to one store, and a lock held by a session says nothing about a relay whose connection outlived it.
 * - The lease and the checkpoint are the same stream, so moving the checkpoint IS the fencing check: a relay that
 *   lost the lease while paused cannot move the checkpoint of its successor (its append conflicts); at worst it has
 *   produced one batch twice.
 * - Kafka group membership would also elect one member, but it fails exactly when this relay matters most — while
 *   Kafka is down nobody could tell who leads, and after a rebalance two members can both believe they lead until
 *   their next heartbeat, with nothing to fence the checkpoint.
 * - Expiry never compares clocks across machines (each candidate measures the lease on its own monotonic clock).
 * The price: renewals append one small event per third of the TTL while a relay runs (default TTL 3 s → one event a
 * second, ~86,400 a day), and a dead relay's successor starts after at most the TTL (a clean stop releases it). Only
 * the last event counts and it is read from the stream's end (relay-lease.ts, src/ops/lag.ts): read from the start,
 * 1,000,000 renewals held a replica's thread 10.6 s and 596 MiB at its start, and its first scrape 9.5 s.
 */
import { changeOfEvent, TOOL_STREAM_PREFIX } from '#domain/events';
import { exponentialBackoff } from './backoff.ts';
import { decodeCatalogueEvent } from './event-codec.ts';
import { silentLog, type Log } from './log.ts';
import { systemTimer, type CatalogueChange, type ChangePublisher, type EventStore, type StoredEvent, type Subscription, type Timer } from './ports.ts';
import { RelayLease } from './relay-lease.ts';

export type { ChangePublisher } from './ports.ts';

export interface RelayOptions {
  store: EventStore;
  publisher: ChangePublisher;
  /** The topic; names the lease/checkpoint stream `relay-<topic>`. */
  topic: string;
  /** Who this candidate is, for the lease and logs (host:pid:uuid is a good choice). */
  holder: string;
  /**
   * Lease time to live. Default 3000: renewed every third of it, and a rival takes over a TTL after the last renewal
   * it saw (checking every third), so a SIGKILLed holder is replaced within about 4 s (issue 14: 31 s with 30000).
   */
  ttlMs?: number;
  /**
   * How often the active relay looks for new events when idle without being woken. Default 1000: the relay tails the
   * store's catalogue streams, which wakes it as soon as the store sees an append (its own, PostgreSQL NOTIFY, a
   * change to SQLite's WAL file), so this poll only covers a lost wake-up.
   */
  pollMs?: number;
  /** Events per batch. Default 500. */
  batchSize?: number;
  log?: Log;
  /** Called after each batch Kafka acknowledged (tests, metrics). */
  onPublished?: (changes: readonly CatalogueChange[]) => void;
  /** Monotonic time and waiting (tests drive it by hand). Default: performance.now() and setTimeout. */
  timer?: Timer;
}

export const relayStream = (topic: string): string => `relay-${topic}`;


/** Retry a failed publish after 200 ms, doubling up to 5 s: Kafka coming back is noticed within 5 s. */
const retryDelay = exponentialBackoff({ initialMs: 200, maxMs: 5000 });

/** The change a stored catalogue event announces; null for any other event under `tool-`. */
export const changeOf = (stored: StoredEvent): CatalogueChange | null => {
  const event = decodeCatalogueEvent(stored);
  return event ? changeOfEvent(stored.position, event) : null;
};

export interface Relay {
  /** True while this candidate holds the lease. */
  readonly active: boolean;
  readonly lease: RelayLease;
  /** Stop; a holder releases the lease so a successor need not wait for the TTL. */
  close(): Promise<void>;
}

/** What one step of the loop asks for next: go on at once, idle until woken (or the poll), or wait that long. */
type Next = 'now' | 'idle' | number;

export const startRelay = (o: RelayOptions): Relay => {
  const log = o.log ?? silentLog;
  const timer = o.timer ?? systemTimer;
  const ttlMs = o.ttlMs ?? 3_000;
  // Never idle past a renewal: a lease renewed a third of the TTL late is still held (ttl/3 + ttl/3 < ttl).
  const pollMs = Math.min(o.pollMs ?? 1000, ttlMs / 3);
  const lease = new RelayLease({ store: o.store, streamId: relayStream(o.topic), holder: o.holder, ttlMs, now: () => timer.now() });
  let closed = false;
  /** Aborted to cut the current pause short: by the tail when idle, by close() always. */
  let interrupt = new AbortController();
  /**
   * Why a tail and not the store's raw append signal: the store also carries call records, one append per call, and
   * the tail (which skips what it already scanned) is the cheap way to learn that a CATALOGUE event arrived. Only an
   * idle pause is cut short by it; a lease wait or a retry backoff keeps its length. `woken` remembers a wake-up
   * during a step, so the idle pause after it does not sleep through that event.
   */
  let tail: Subscription | null = null;
  let woken = false;
  let idle = false;
  /**
   * The tail's last page and the position it followed. When that is the checkpoint, the page IS the next batch, and
   * the step need not read it again (one store read less between a commit and its announcement, ~1–2 ms on
   * PostgreSQL). Otherwise (the relay behind or ahead of its tail, a lease taken over) the step reads as before.
   */
  let handed: { after: string | null; events: readonly StoredEvent[] } | null = null;
  let tailAt: string | null = null;
  const watchCatalogue = (): void => {
    if (tail) return;
    tailAt = lease.position;
    tail = o.store.subscribe({
      after: lease.position,
      streamPrefix: TOOL_STREAM_PREFIX,
      onEvents: (events) => {
        handed = { after: tailAt, events };
        tailAt = events[events.length - 1]?.position ?? tailAt;
        woken = true;
        if (idle) interrupt.abort();
      },
      onError: (err) => log.debug({ err }, 'relay: catalogue tail failed; polling until it recovers'),
    });
  };
  const takeHanded = (): readonly StoredEvent[] | null => {
    const page = handed;
    handed = null;
    return page !== null && page.after === lease.position ? page.events : null;
  };
  const pause = async (next: 'idle' | number): Promise<void> => {
    idle = next === 'idle';
    if (idle && woken) return;
    interrupt = new AbortController();
    await timer.sleep(idle ? pollMs : (next as number), interrupt.signal);
    idle = false;
  };

  /** Decoded once here, on the way from the store to the bus; a corrupt event is skipped, never published. */
  const toChanges = (events: readonly StoredEvent[]): CatalogueChange[] => {
    const out: CatalogueChange[] = [];
    for (const e of events) {
      try {
        const c = changeOf(e);
        if (c) out.push(c);
      } catch (err) {
        // A corrupt event must not stall the topic forever; the read models skip it the same way.
        log.warn({ err, position: e.position, streamId: e.streamId }, 'relay: malformed catalogue event not published');
      }
    }
    return out;
  };

  const step = async (): Promise<Next> => {
    if (!lease.isHeld) {
      if (!(await lease.tryAcquire())) return ttlMs / 3;
      log.info({ holder: o.holder, topic: o.topic, checkpoint: lease.position }, 'relay: lease taken, publishing');
    } else if (lease.renewDue && !(await lease.renew())) {
      log.warn({ holder: o.holder, by: lease.currentHolder }, 'relay: lease lost');
      return 'now';
    }
    watchCatalogue();
    const batchSize = o.batchSize ?? 500;
    const events = takeHanded()?.slice(0, batchSize) ?? (await o.store.readAll({ after: lease.position, streamPrefix: TOOL_STREAM_PREFIX, limit: batchSize }));
    const last = events[events.length - 1];
    if (!last) return 'idle';
    const changes = toChanges(events);
    await o.publisher.publish(changes);
    if (!(await lease.record(last.position))) {
      log.warn({ holder: o.holder, by: lease.currentHolder, count: changes.length }, 'relay: lease lost during a batch; a successor may publish it again');
      return 'now';
    }
    log.debug({ count: changes.length, checkpoint: last.position }, 'relay: batch acknowledged');
    o.onPublished?.(changes);
    // Published all the tail had handed over: whatever comes next wakes the relay through the tail, so reading the
    // store now would find nothing (one read less per announcement). The idle poll still reads, for a failing tail.
    return handed === null && tailAt === last.position ? 'idle' : 'now';
  };

  const loop = (async () => {
    let failures = 0;
    while (!closed) {
      let next: Next;
      woken = false;
      try {
        next = await step();
        failures = 0;
      } catch (err) {
        // Kafka or the store is down: nothing moved, so the same batch is tried again when it answers.
        failures += 1;
        next = retryDelay(failures);
        log.warn({ err, retryInMs: next }, 'relay: publish failed, retrying from the checkpoint');
      }
      if (next !== 'now' && !closed) await pause(next);
    }
  })();

  return {
    get active() {
      return lease.isHeld;
    },
    lease,
    async close() {
      closed = true;
      interrupt.abort();
      await loop;
      await tail?.close();
      await lease.release();
      await o.publisher.close();
    },
  };
};
