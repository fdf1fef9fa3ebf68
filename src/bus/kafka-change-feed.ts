/**
 * `--bus kafka://...` for a serving process: it is a relay candidate (at most one in the estate publishes; see
 * src/app/relay.ts) and a consumer of the topic that refreshes its read side from the store on each announcement.
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { followBus } from '#app/bus-follower';
import type { CatalogueReader } from '#app/catalogue-reader';
import type { EventStore, Subscription } from '#app/ports';
import { startRelay } from '#app/relay';
import type { Log } from '#app/log';
import { KafkaChangeBus, KafkaChangePublisher, parseKafkaUrl } from './kafka-change-bus.ts';

export interface KafkaChangeFeedOptions {
  url: string;
  topic: string;
  store: EventStore;
  reader: CatalogueReader;
  log: Log;
  /** ESTATE_RELAY_TTL_MS through src/config.ts; absent: src/app/relay.ts's default (3000). */
  relayTtlMs?: number;
}

export const startKafkaChangeFeed = async (o: KafkaChangeFeedOptions): Promise<Subscription> => {
  const brokers = parseKafkaUrl(o.url);
  const holder = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  const bus = new KafkaChangeBus({ brokers, topic: o.topic, log: o.log, clientId: `estate-replica-${process.pid}` });
  const following = await followBus(o.reader, bus, o.log);
  const ttlMs = o.relayTtlMs;
  const relay = startRelay({
    store: o.store,
    publisher: new KafkaChangePublisher({ brokers, topic: o.topic, log: o.log, clientId: `estate-relay-${process.pid}` }),
    topic: o.topic,
    holder,
    ...(ttlMs !== undefined ? { ttlMs } : {}),
    log: o.log,
  });
  o.log.info({ bus: 'kafka', brokers, topic: o.topic, group: bus.groupId, holder }, 'change bus: consuming the topic; relay candidate');
  return {
    close: async () => {
      await relay.close();
      await following.close();
    },
  };
};
