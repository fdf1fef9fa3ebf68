/**
 * Keeps a read side current from bus announcements instead of tailing the store: each announced change makes the
 * reader catch up from the STORE (the message names a position, the store holds the event), and the reader's own
 * onUpdate path then tells the sessions whose view changed.
 *
 * Deduplication is by content, never by position alone: a change the read model already reflects (the version exists,
 * or already has that status) needs no read, so redelivered messages and messages for events an earlier catch-up
 * already applied cost nothing. A position is not remembered as seen: a message written to the topic by anyone
 * else, naming the position the store will give its next event and a change this replica already reflects, would have
 * made the real announcement at that position a "redelivery" and hidden it (a retirement, say) from every replica
 * until some later change. A change that is announced but not yet visible to this reader's store connection
 * (a replica of the store lagging) is read for again briefly, beside the topic rather than in its way: the topic is
 * shared (other producers, other estates), and a message naming a position this store will never show must not hold
 * up the announcements behind it (it held each batch ~2 s, so a trickle of them delayed every real change).
 */
import type { CatalogueReader } from './catalogue-reader.ts';
import type { Log } from './log.ts';
import { systemTimer, type CatalogueChange, type ChangeBus, type Subscription, type Timer } from './ports.ts';

/** Announced positions being read for at once; past it the oldest are given up on (and reported). */
const CHASE_LIMIT = 1_000;
/**
 * Pauses before reading again when an announced change is not visible yet. The usual cause on PostgreSQL is not a
 * lagging replica but an older transaction still open somewhere in the cluster (the store returns rows only below
 * the oldest open one), which typically ends within milliseconds: start short, then back off.
 */
const RETRIES_MS = [2, 5, 10, 20, 50, 100, 250, 500, 1000];

/** One announced change: the same position may be named by several messages, only one of them the store's. */
const keyOf = (c: CatalogueChange): string => `${c.position}\u0000${c.event}\u0000${c.tool}\u0000${c.version}`;

const reflected = (reader: CatalogueReader, c: CatalogueChange): boolean => {
  const v = reader.catalogue.tool(c.tool)?.versions.find((x) => x.version === c.version);
  if (!v) return false;
  if (c.event === 'ToolVersionPublished') return true;
  if (c.event === 'ToolVersionDeprecated') return v.status !== 'active';
  return v.status === 'retired';
};

export interface FollowBusOptions {
  /** Pause between attempts to start a bus that was down at start. Default 5000. */
  retryMs?: number;
  /** Monotonic time and waiting (tests drive it by hand). Default: setTimeout. */
  timer?: Timer;
}

/**
 * Start the bus, then catch up from the store (in that order: anything announced after the bus started is delivered,
 * anything before is in the store). Resolves once the reader is current.
 */
export const followBus = async (reader: CatalogueReader, bus: ChangeBus, log?: Log, options: FollowBusOptions = {}): Promise<Subscription> => {
  const { retryMs = 5000, timer = systemTimer } = options;
  /** Aborted by close(), so a pending retry pause does not hold the shutdown up. */
  const closing = new AbortController();
  let markReady!: () => void;
  const ready = new Promise<void>((r) => (markReady = r));

  /**
   * Announced changes the store did not show at their batch's read, each with the time it was first read for. One
   * loop reads for all of them on the backoff schedule (a change joining it late takes the schedule where it is:
   * a flood of such announcements costs ~10 reads per round, not one per pause), and gives each up once the
   * schedule's whole length has passed since its first read.
   */
  const chased = new Map<string, { change: CatalogueChange; since: number }>();
  const patienceMs = RETRIES_MS.reduce((a, b) => a + b, 0);
  let chasing: Promise<void> | null = null;
  const giveUp = (positions: string[]): void => {
    if (positions.length > 0) log?.warn({ positions: positions.slice(0, 20), count: positions.length }, 'bus: announced changes not found in the store; the next announcement will catch up');
  };
  const chase = async (): Promise<void> => {
    for (let step = 0; chased.size > 0 && !closing.signal.aborted; step++) {
      await timer.sleep(RETRIES_MS[Math.min(step, RETRIES_MS.length - 1)] as number, closing.signal);
      if (closing.signal.aborted) return;
      await reader.catchUp();
      const lost: string[] = [];
      const now = timer.now();
      for (const [key, c] of chased) {
        if (reflected(reader, c.change)) chased.delete(key);
        else if (now - c.since >= patienceMs) {
          chased.delete(key);
          lost.push(c.change.position);
        }
      }
      giveUp(lost);
    }
  };
  const startChase = (): void => {
    if (chasing || chased.size === 0 || closing.signal.aborted) return;
    chasing = chase()
      .catch((e: unknown) => log?.warn({ err: e }, 'bus: reading for announced changes failed; the next announcement will catch up'))
      .finally(() => {
        chasing = null;
        startChase(); // one added after the loop's last look
      });
  };

  const onChange = async (changes: CatalogueChange[]): Promise<void> => {
    // Batches arrive one at a time (the consumer awaits this); the first waits for the initial catch-up.
    await ready;
    const pending = changes.filter((c) => !reflected(reader, c));
    if (pending.length === 0) return;
    await reader.catchUp();
    const now = timer.now();
    const missing = pending.filter((c) => !reflected(reader, c));
    for (const c of missing) if (!chased.has(keyOf(c))) chased.set(keyOf(c), { change: c, since: now });
    if (missing.length > 0) log?.debug({ positions: missing.slice(0, 20).map((c) => c.position), count: missing.length }, 'bus: announced changes not in the store yet; reading for them beside the topic');
    if (chased.size > CHASE_LIMIT) {
      const oldest = [...chased.keys()].slice(0, chased.size - CHASE_LIMIT);
      giveUp(oldest.map((k) => (chased.get(k) as { change: CatalogueChange }).change.position));
      for (const k of oldest) chased.delete(k);
    }
    startChase();
  };

  let closed = false;
  let retrying: Promise<void> | null = null;
  try {
    await bus.start(onChange);
  } catch (error) {
    // Kafka down while this replica starts: serve what the store holds now rather than not at all, and keep trying.
    // Nothing is announced meanwhile anyway (the relay cannot publish either); once the bus is up, one more catch-up
    // covers whatever was committed in between.
    log?.warn({ err: error, retryInMs: retryMs }, 'change bus: unavailable at start; serving the catalogue as the store has it and retrying');
    retrying = (async () => {
      while (!closed) {
        await timer.sleep(retryMs, closing.signal);
        if (closed) return;
        try {
          await bus.start(onChange);
          await reader.catchUp();
          log?.warn({}, 'change bus: connected after all; following the topic');
          return;
        } catch (e) {
          log?.debug({ err: e }, 'change bus: still unavailable');
        }
      }
    })();
  }
  try {
    await reader.catchUp();
  } finally {
    markReady();
  }
  return {
    close: async () => {
      closed = true;
      closing.abort();
      await retrying;
      await chasing;
      await bus.stop();
    },
  };
};
