/**
 * `estate/changes`: for consumers of the change topic (SPEC §4). A message is decoded and checked with zod (the topic
 * is shared, so nothing on it is trusted), deduplicated by position (delivery is at least once), and a small kafkajs
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
  /** True the first time a position is seen (process it), false for a redelivery (skip it). */
  first(change: Pick<CatalogueChange, 'position'>): boolean;
  readonly size: number;
}

/**
 * Remembers the last `capacity` positions seen (default 10 000). Positions are opaque and only ordered within one
 * stream, so they are compared for equality only, never for order.
 */
export const createDeduplicator = (capacity = 10_000): Deduplicator => {
  if (!Number.isInteger(capacity) || capacity < 1) throw new RangeError(`capacity must be a positive integer, got ${String(capacity)}`);
  const seen = new Set<string>();
  return {
    first: ({ position }) => {
      if (seen.has(position)) return false;
      seen.add(position);
      if (seen.size > capacity) seen.delete(seen.values().next().value as string);
      return true;
    },
    get size() {
      return seen.size;
    },
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
  /** Called once per change (after deduplication by position). */
  onChange?: (change: CatalogueChange) => void | Promise<void>;
  /** Called for a malformed message; the consumer skips it and keeps going. Default: a line on stderr. */
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
  const consumer: Consumer = kafka.consumer({ groupId: options.groupId ?? `estate-changes-${process.pid}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}` });
  const listeners = new Set<(c: CatalogueChange) => void>();
  const dedupe = createDeduplicator();
  const counts = { delivered: 0, duplicates: 0, malformed: 0 };
  const onMalformed = options.onMalformed ?? ((e, at) => process.stderr.write(`estate/changes: skipped ${e.message} (partition ${at.partition}, offset ${at.offset})\n`));
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
    },
  };
};
