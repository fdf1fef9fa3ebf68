/**
 * `estate/changes`: for consumers of the change topic (SPEC §4). A message is decoded and checked with zod (the topic
 * is shared, so nothing on it is trusted), deduplicated by position and content (delivery is at least once), and a small kafkajs
 * consumer ties both together for cache-invalidation consumers: a malformed message is reported and skipped, and the
 * consumer keeps going.
 */
import { Kafka, logLevel, type Consumer } from 'kafkajs';
import { decodeChange as decodeRaw } from '#bus/change-message';
import type { CatalogueChange } from '#app/ports';

export type { CatalogueChange } from '#app/ports';

/** A message that is not a valid change message; `reason` names the field and what is wrong with it. */
export class ChangeMessageError extends Error {
  constructor(readonly reason: string) {
    super(`malformed change message: ${reason}`);
    this.name = 'ChangeMessageError';
  }
}

/** Decode one message value (bytes or text); throws `ChangeMessageError` with a specific reason when it is malformed. */
export const decodeChange = (value: Buffer | Uint8Array | string | null | undefined): CatalogueChange => {
  const v = value === undefined ? null : value instanceof Uint8Array && !Buffer.isBuffer(value) ? Buffer.from(value) : value;
  const r = decodeRaw(v as Buffer | string | null);
  if (!r.ok) throw new ChangeMessageError(r.reason);
  return r.change;
};

/** As `decodeChange`, without throwing. */
export const tryDecodeChange = (value: Buffer | Uint8Array | string | null | undefined): { ok: true; change: CatalogueChange } | { ok: false; error: ChangeMessageError } => {
  try {
    return { ok: true, change: decodeChange(value) };
  } catch (e) {
    return { ok: false, error: e as ChangeMessageError };
  }
};

export interface Deduplicator {
  /**
   * True the first time a change is seen (process it), false for a redelivery (skip it). A redelivery is the same
   * position naming the same event, tool and version (those given): a message naming a position already seen with
   * another change is not one, and passes.
   */
  first(change: Pick<CatalogueChange, 'position'> & Partial<Pick<CatalogueChange, 'event' | 'tool' | 'version'>>): boolean;
  readonly size: number;
}

/**
 * Remembers the last `capacity` changes seen (default 10 000). Positions are opaque and only ordered within one
 * stream, so they are compared for equality only, never for order. Not by position alone: anyone who can write to the
 * topic can name the position the store will give its next event, and a deduplicator that kept positions would then
 * take the real announcement at that position for a redelivery and drop it.
 */
export const createDeduplicator = (capacity = 10_000): Deduplicator => {
  if (!Number.isInteger(capacity) || capacity < 1) throw new RangeError(`capacity must be a positive integer, got ${String(capacity)}`);
  const seen = new Set<string>();
  return {
    first: ({ position, event, tool, version }) => {
      const key = JSON.stringify([position, event ?? null, tool ?? null, version ?? null]);
      if (seen.has(key)) return false;
      seen.add(key);
      if (seen.size > capacity) seen.delete(seen.values().next().value as string);
      return true;
    },
    get size() {
      return seen.size;
    },
  };
};

/** How often the default report of malformed messages writes a line, at most. */
export const MALFORMED_REPORT_INTERVAL_MS = 10_000;

/**
 * The default `onMalformed`: one line for the first malformed message, then at most one every
 * MALFORMED_REPORT_INTERVAL_MS, counting those skipped meanwhile (a line per message was a line per message a topic
 * writer cared to send: 100,000 of them, 100,000 lines). A count left when messages stop is written by a timer that
 * does not hold the process open.
 */
export const malformedReport = (
  write: (line: string) => void,
  now: () => number = Date.now,
): ((error: ChangeMessageError, where: { partition: number; offset: string }) => void) => {
  let last = Number.NEGATIVE_INFINITY;
  let pending: { count: number; first: string } | null = null;
  let timer: NodeJS.Timeout | null = null;
  const flush = (): void => {
    if (timer) clearTimeout(timer);
    timer = null;
    if (!pending) return;
    write(`estate/changes: skipped ${pending.count} malformed message${pending.count === 1 ? '' : 's'} (the first: ${pending.first})`);
    pending = null;
    last = now();
  };
  return (e, at) => {
    const where = `${e.message} (partition ${at.partition}, offset ${at.offset})`;
    pending ??= { count: 0, first: where };
    pending.count += 1;
    const wait = last + MALFORMED_REPORT_INTERVAL_MS - now();
    if (wait <= 0) flush();
    else timer ??= setTimeout(flush, wait).unref();
  };
};

/** What `createToolsCache({ changes })` subscribes to. */
export interface ChangeFeed {
  subscribe(listener: (change: CatalogueChange) => void): () => void;
}

export interface ChangeConsumerOptions {
  /** `host:port` list. */
  brokers: string[];
  /** Default `estate.catalogue.changes`. */
  topic?: string;
  /** Default a fresh group per process (every consumer sees every change). */
  groupId?: string;
  /** Default false: only changes from now on. */
  fromBeginning?: boolean;
  clientId?: string;
  /** Called once per change (after deduplication: the same position, event, tool and version). */
  onChange?: (change: CatalogueChange) => void | Promise<void>;
  /**
   * Called for a malformed message; the consumer skips it and keeps going. Default: a line on stderr at most every
   * 10 s (the first one at once), with how many were skipped since the last and the first reason among them.
   */
  onMalformed?: (error: ChangeMessageError, where: { partition: number; offset: string }) => void;
}

export interface ChangeConsumer extends ChangeFeed {
  /** Resolves once the consumer has joined its group and been assigned the topic's partitions. */
  readonly ready: Promise<void>;
  stats(): { delivered: number; duplicates: number; malformed: number };
  stop(): Promise<void>;
}

/** A kafkajs consumer of the change topic: decode, deduplicate, hand each change to `onChange` and every subscriber. */
export const consumeChanges = (options: ChangeConsumerOptions): ChangeConsumer => {
  if (!Array.isArray(options.brokers) || options.brokers.length === 0) throw new TypeError('consumeChanges: brokers must be a non-empty list of host:port');
  const topic = options.topic ?? 'estate.catalogue.changes';
  const kafka = new Kafka({ clientId: options.clientId ?? 'estate-changes', brokers: options.brokers, logLevel: logLevel.NOTHING });
  const groupId = options.groupId ?? `estate-changes-${process.pid}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
  const consumer: Consumer = kafka.consumer({ groupId });
  const listeners = new Set<(c: CatalogueChange) => void>();
  const dedupe = createDeduplicator();
  const counts = { delivered: 0, duplicates: 0, malformed: 0 };
  const onMalformed = options.onMalformed ?? malformedReport((line) => process.stderr.write(`${line}\n`));
  let stopped = false;

  const ready = (async () => {
    const joined = new Promise<void>((resolve) => {
      consumer.on(consumer.events.GROUP_JOIN, () => resolve());
    });
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: options.fromBeginning ?? false });
    await consumer.run({
      eachMessage: async ({ partition, message }) => {
        const r = tryDecodeChange(message.value);
        if (!r.ok) {
          counts.malformed += 1;
          onMalformed(r.error, { partition, offset: message.offset });
          return;
        }
        if (!dedupe.first(r.change)) {
          counts.duplicates += 1;
          return;
        }
        counts.delivered += 1;
        for (const l of listeners) l(r.change);
        await options.onChange?.(r.change);
      },
    });
    await joined;
  })();
  ready.catch(() => undefined);

  return {
    ready,
    subscribe: (listener) => {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    stats: () => ({ ...counts }),
    stop: async () => {
      if (stopped) return;
      stopped = true;
      await consumer.disconnect().catch(() => undefined);
      // A group this consumer made up is its alone: left behind, it would clutter the broker until its offsets expire
      // (every `estate watch --bus` left one). A group the caller named is the caller's.
      if (options.groupId === undefined) {
        const admin = kafka.admin();
        try {
          await admin.connect();
          await admin.deleteGroups([groupId]);
        } catch {
          // Best effort: the broker forgets an empty group's offsets after offsets.retention.minutes anyway.
        } finally {
          await admin.disconnect().catch(() => undefined);
        }
      }
    },
  };
};
