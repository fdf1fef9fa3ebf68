/**
 * Relay and consumer lag (SPEC §9), read from the store at scrape time, so every replica reports them whoever holds
 * the relay lease:
 * - relay lag: catalogue events the relay has not yet had acknowledged by Kafka (after the checkpoint in
 *   `relay-<topic>`), and the age of the oldest of them. Rises while Kafka is down, falls to 0 once it is back.
 * - consumer lag: catalogue events in the store that this replica's read model has not applied yet.
 */
import { RELAY_STATE_EVENT } from '#app/relay-lease';
import { relayStream } from '#app/relay';
import type { EventStore, StoredEvent } from '#app/ports';
import { TOOL_STREAM_PREFIX } from '#domain/events';

/** Counting stops here: a lag this large is an outage either way, and a scrape must stay cheap. */
export const LAG_COUNT_CAP = 10_000;

export interface LagReading {
  /** Absent when the estate has no Kafka relay (`local` bus). */
  relay?: { events: number; oldestSeconds: number };
  catalogueEvents: number;
}

/** Catalogue events after `after` (capped), and the first of them. */
const after = async (store: EventStore, position: string | null): Promise<{ count: number; first: StoredEvent | undefined }> => {
  let count = 0;
  let first: StoredEvent | undefined;
  let cursor = position;
  while (count < LAG_COUNT_CAP) {
    const page = await store.readAll({ after: cursor, limit: 1000, streamPrefix: TOOL_STREAM_PREFIX });
    if (page.length === 0) break;
    first ??= page[0];
    count += page.length;
    cursor = page[page.length - 1]!.position;
  }
  return { count: Math.min(count, LAG_COUNT_CAP), first };
};

export interface LagProbeOptions {
  store: EventStore;
  /** The read model's position (null: nothing applied yet). */
  readerPosition: () => string | null;
  /** The change topic when the bus is Kafka; absent for the `local` bus. */
  topic?: string;
  now?: () => number;
}

/** Reads the lag; `relay` says whether there is a relay to report on (a Kafka bus), so its series exist at all. */
export type LagProbe = (() => Promise<LagReading>) & { readonly relay: boolean };

export const createLagProbe = (o: LagProbeOptions): LagProbe => {
  // The relay stream grows by one event per lease renewal (one a second by default), and the newest readable state is
  // the checkpoint: read from the end back, only as far as the newest readable one or what the last scrape saw (read
  // from the start instead, a first scrape after a month of renewals read 2.6 million events).
  let nextRevision = 0;
  let checkpoint: string | null = null;
  const now = o.now ?? Date.now;
  const readCheckpoint = async (topic: string): Promise<string | null> => {
    let top: number | undefined;
    let head: number | undefined;
    for (;;) {
      // The last event first (it is the state nearly always), then pages further back.
      const page = await o.store.readStream(relayStream(topic), { direction: 'backwards', ...(top === undefined ? { limit: 1 } : { fromRevision: top, limit: 64 }) });
      for (const e of page) {
        if (e.revision < nextRevision) break;
        head ??= e.revision;
        const position = (e.data as { position?: unknown } | null)?.position;
        if (e.type === RELAY_STATE_EVENT && (typeof position === 'string' || position === null)) {
          checkpoint = position;
          nextRevision = head + 1;
          return checkpoint;
        }
      }
      const lowest = page[page.length - 1];
      if (lowest === undefined || lowest.revision <= nextRevision) break;
      top = lowest.revision - 1;
    }
    if (head !== undefined) nextRevision = head + 1;
    return checkpoint;
  };
  const probe = async (): Promise<LagReading> => {
    const consumer = await after(o.store, o.readerPosition());
    if (o.topic === undefined) return { catalogueEvents: consumer.count };
    const relay = await after(o.store, await readCheckpoint(o.topic));
    const oldestSeconds = relay.first ? Math.max(0, (now() - Date.parse(relay.first.recordedAt)) / 1000) : 0;
    return { catalogueEvents: consumer.count, relay: { events: relay.count, oldestSeconds } };
  };
  return Object.assign(probe, { relay: o.topic !== undefined });
};
