/**
 * Says when the store's log has been held back for a while, and by whom, and when it is not any more: for a serving
 * process's log and `estate watch`'s stderr (the `estate_store_held_*` gauges say it to a scraper). On PostgreSQL a
 * read of the log stops at the oldest write transaction open in the cluster, so one long transaction of any client
 * silently stalls every replica, the relay and every watcher until it ends (docs/operations.md).
 *
 * One read every `everyMs` (never two at once); `held` once per holder when events have waited at least
 * `afterSeconds` (another holder after it is said again), `released` once when nothing waits any more. A
 * failing read is not this watch's to report (the store's own health check and the tails say so): it is skipped.
 */
import type { HeldBack, HeldBackHolder } from '#app/ports';

export interface HeldBackWatchOptions {
  /** The store's `heldBack`. */
  read: () => Promise<HeldBack>;
  held(h: NamedHeldBack): void;
  released(): void;
  /** Default 2,000 ms. */
  everyMs?: number;
  /** Say nothing until the oldest waiting event is this old (default 5 s: a commit in flight holds for milliseconds). */
  afterSeconds?: number;
}

export interface HeldBackWatch {
  /** One read and what it says (the timer calls it; tests call it directly). */
  check(): Promise<void>;
  stop(): void;
}

/** Which transaction, as far as two readings can tell: the same session's pid, or the same prepared id. */
const holderKey = (h: HeldBackHolder): string => (h.prepared !== undefined ? `prepared:${h.prepared}` : `pid:${h.pid ?? ''}`);

/** What `held` is given: a reading that names its holder. */
export type NamedHeldBack = HeldBack & { holder: HeldBackHolder };

/** One line for a person: how many wait, for how long, and who holds them. */
export const heldBackLine = (h: NamedHeldBack): string => {
  const who = h.holder;
  const by =
    who.prepared !== undefined
      ? `prepared transaction ${JSON.stringify(who.prepared)} (user ${JSON.stringify(who.user)}, database ${JSON.stringify(who.database)}; COMMIT PREPARED or ROLLBACK PREPARED ends it)`
      : `the session with pid ${who.pid} (user ${JSON.stringify(who.user)}, database ${JSON.stringify(who.database)}${who.application ? `, application ${JSON.stringify(who.application)}` : ''}${who.state ? `, ${who.state}` : ''}${who.seconds !== undefined ? `, its transaction open ${Math.round(who.seconds)} s` : ''})`;
  const events = h.events >= 10_000 ? '10,000 or more committed events have' : h.events === 1 ? '1 committed event has' : `${h.events} committed events have`;
  return `${events} waited ${Math.round(h.oldestSeconds)} s behind an open transaction: ${by}; nothing newer is read until it ends`;
};

export const watchHeldBack = (o: HeldBackWatchOptions): HeldBackWatch => {
  const afterSeconds = o.afterSeconds ?? 5;
  let reading: Promise<void> | null = null;
  let said: string | null = null;
  const once = async (): Promise<void> => {
    let h: HeldBack;
    try {
      h = await o.read();
    } catch {
      return;
    }
    if (h.events > 0 && h.oldestSeconds >= afterSeconds) {
      // Unnamed: the holder ended between the store's two reads; the next reading tells.
      if (h.holder === undefined) return;
      const key = holderKey(h.holder);
      if (key === said) return;
      said = key;
      o.held({ ...h, holder: h.holder });
    } else if (h.events === 0 && said !== null) {
      said = null;
      o.released();
    }
  };
  const check = (): Promise<void> => (reading ??= once().finally(() => (reading = null)));
  const timer = setInterval(() => void check(), o.everyMs ?? 2_000);
  timer.unref();
  return { check, stop: () => clearInterval(timer) };
};
