/**
 * `--bus kafka://...` for a serving process: it is a relay candidate (at most one in the estate publishes; see
 * src/app/relay.ts) and a consumer of the topic that refreshes its read side from the store on each announcement.
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { followBus } from '../app/bus-follower.ts';
import type { CatalogueReader } from '../app/catalogue-reader.ts';
import type { EventStore, Subscription } from '../app/ports.ts';
import { startRelay } from '../app/relay.ts';
import { KafkaChangeBus, KafkaChangePublisher, parseKafkaUrl, type BusLog } from './kafka-change-bus.ts';

export interface KafkaChangeFeedOptions {
  url: string;
  topic: string;
  store: EventStore;
  reader: CatalogueReader;
  log: BusLog;
  /** Default: ESTATE_RELAY_TTL_MS, else 3000 (src/app/relay.ts). */
  relayTtlMs?: number;
}

const ttlFromEnv = (): number | undefined => {
  const raw = process.env.ESTATE_RELAY_TTL_MS;
  if (raw === undefined || raw === '') return undefined;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 100) throw new Error(`ESTATE_RELAY_TTL_MS must be a whole number of milliseconds >= 100, got '${raw}'`);
  return n;
};

export const startKafkaChangeFeed = async (o: KafkaChangeFeedOptions): Promise<Subscription> => {
  const brokers = parseKafkaUrl(o.url);
  const holder = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  const bus = new KafkaChangeBus({ brokers, topic: o.topic, log: o.log, clientId: `estate-replica-${process.pid}` });
  const following = await followBus(o.reader, bus, o.log);
  const ttlMs = o.relayTtlMs ?? ttlFromEnv();
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
