/**
 * Keeps a Kafka consumer alive across broker outages, which kafkajs 2.2 does not always do by itself:
 * - a crash kafkajs judges not retriable ends the consumer for good (its CRASH event says `restart: false`);
 * - a consumer can also wedge without crashing after a broker restart (no fetch, no heartbeat, no error; kafkajs
 *   issues #267 and #659 describe both).
 * Either way a replica would stop hearing about changes until it is restarted by hand. The watchdog restarts the
 * consumer (a fresh one in the same group, so it resumes from the committed offsets) when it is dead, or when it has
 * shown no sign of life (a fetch, a heartbeat, a batch) for `stallMs` while not busy with a batch. A restart that
 * fails (the broker is still down) is tried again after `stallMs`.
 *
 * Pure: time comes from the Timer port, the restart is the caller's; the unit tests drive it by hand.
 */
import type { Log } from '#app/log';
import type { Timer } from '#app/ports';

export interface ConsumerWatchdogOptions {
  /** No sign of life for this long (and no batch in progress) means wedged. */
  stallMs: number;
  /** After a crash kafkajs will not restart from, wait this long before restarting it ourselves. */
  deadRestartMs: number;
  timer: Timer;
  /** Replace the consumer with a fresh one; throws if it cannot (the broker is down). */
  restart: () => Promise<void>;
  log: Log;
}

export interface ConsumerWatchdog {
  /** A fetch, heartbeat or join happened. */
  alive(): void;
  /** A batch handler started / finished (a long catch-up from the store is not a stall). */
  batchStarted(): void;
  batchEnded(): void;
  /** The consumer crashed; `willRestart` is kafkajs's own verdict. */
  crashed(willRestart: boolean): void;
  /** How many restarts the watchdog made (metrics, tests). */
  readonly restarts: number;
  close(): Promise<void>;
}

export const watchConsumer = (o: ConsumerWatchdogOptions): ConsumerWatchdog => {
  let lastSign = o.timer.now();
  let busy = 0;
  /** When a dead consumer is to be restarted; null while kafkajs still runs (or restarts) it. */
  let deadSince: number | null = null;
  let restarts = 0;
  let closed = false;
  const closing = new AbortController();
  const checkEvery = Math.max(10, Math.min(o.stallMs, o.deadRestartMs) / 3);

  const due = (now: number): string | null => {
    if (deadSince !== null) return now - deadSince >= o.deadRestartMs ? 'crashed and kafkajs will not restart it' : null;
    if (busy === 0 && now - lastSign >= o.stallMs) return `no fetch or heartbeat for ${Math.round(now - lastSign)} ms`;
    return null;
  };

  const loop = (async () => {
    while (!closed) {
      await o.timer.sleep(checkEvery, closing.signal);
      if (closed) return;
      const why = due(o.timer.now());
      if (why === null) continue;
      o.log.warn({ why, restarts }, 'kafka consumer: restarting it');
      try {
        restarts += 1;
        await o.restart();
        deadSince = null;
        busy = 0;
      } catch (err) {
        o.log.warn({ err, retryInMs: o.stallMs }, 'kafka consumer: restart failed; trying again');
        // A dead consumer stays dead: try again after the stall period rather than at every check.
        if (deadSince !== null) deadSince = o.timer.now() + o.stallMs - o.deadRestartMs;
      }
      lastSign = o.timer.now();
    }
  })();

  return {
    alive: () => {
      lastSign = o.timer.now();
    },
    batchStarted: () => {
      busy += 1;
      lastSign = o.timer.now();
    },
    batchEnded: () => {
      busy = Math.max(0, busy - 1);
      lastSign = o.timer.now();
    },
    crashed: (willRestart) => {
      busy = 0;
      lastSign = o.timer.now();
      if (!willRestart) deadSince ??= o.timer.now();
    },
    get restarts() {
      return restarts;
    },
    close: async () => {
      closed = true;
      closing.abort();
      await loop;
    },
  };
};
