/**
 * KafkaChangeBus: the ChangeBus port on Kafka (kafkajs 2.2.x), and KafkaChangePublisher, the relay's way onto the
 * topic.
 *
 * Every replica must see every message, so each bus instance is its own consumer group (a fresh id per process).
 * Before the group first joins, its committed offsets are set to the topic's current ends: everything produced
 * after `start()` begins is consumed, and everything produced before it was produced after its event was committed,
 * so the catch-up from the store that the caller runs after `start()` sees it. Nothing falls between the two.
 *
 * The consumer's `maxWaitTimeInMs` is lowered from kafkajs's 5000 to 50: an idle fetch returns as soon as one byte
 * arrives anyway, and the wait only bounds how late an idle replica notices a new message after a rebalance.
 */
import { randomUUID } from 'node:crypto';
import { Kafka, logLevel, Partitioners, type Consumer, type LogEntry, type Producer } from 'kafkajs';
import { silentLog, type Log } from '#app/log';
import type { CatalogueChange, ChangeBus, ChangePublisher } from '#app/ports';
import { decodeChange, encodeChange } from './change-message.ts';


export interface KafkaConnection {
  brokers: string[];
  topic: string;
  clientId?: string;
  log?: Log;
}

/** `kafka://host:port[,host:port]` → broker list. */
export const parseKafkaUrl = (url: string): string[] => {
  const m = /^kafka:\/\/(.+)$/.exec(url);
  if (!m?.[1]) throw new Error(`not a kafka:// URL: '${url}'`);
  return m[1].split(',').map((b) => b.trim()).filter((b) => b.length > 0);
};

/** kafkajs logs through our logger (JSON on stderr) rather than its own console lines. */
const kafkaLogCreator = (log: Log) => () => (entry: LogEntry) => {
  const { message, ...rest } = entry.log;
  const obj = { kafka: entry.namespace, ...rest };
  if (entry.level === logLevel.ERROR) log.warn(obj, `kafka: ${message}`);
  else if (entry.level === logLevel.WARN) log.warn(obj, `kafka: ${message}`);
  else log.debug(obj, `kafka: ${message}`);
};

export const createKafka = (c: KafkaConnection): Kafka =>
  new Kafka({
    clientId: c.clientId ?? 'estate',
    brokers: c.brokers,
    logLevel: logLevel.WARN,
    logCreator: kafkaLogCreator(c.log ?? silentLog),
    connectionTimeout: 3000,
    requestTimeout: 10_000,
    retry: { initialRetryTime: 200, maxRetryTime: 3000, retries: 8 },
  });

/**
 * Create the topic if it is missing. Several partitions let the broker spread load; order per tool holds because
 * every message of a tool has the same key and so the same partition.
 */
export const ensureTopic = async (kafka: Kafka, topic: string, numPartitions = 3): Promise<void> => {
  const admin = kafka.admin();
  await admin.connect();
  try {
    // Replicas starting together race to create it; a slow broker may time a creation out and still complete it.
    for (let attempt = 1; ; attempt++) {
      if ((await admin.listTopics()).includes(topic)) return;
      try {
        await admin.createTopics({ waitForLeaders: true, timeout: 15_000, topics: [{ topic, numPartitions, replicationFactor: -1 }] });
        return;
      } catch (e) {
        if (attempt >= 5) throw e;
        await new Promise((r) => setTimeout(r, 300 * attempt));
      }
    }
  } finally {
    await admin.disconnect();
  }
};

export interface KafkaChangeBusOptions extends KafkaConnection {
  /** Default: `estate-replica-<uuid>`, so every process sees every message. */
  groupId?: string;
  numPartitions?: number;
  maxWaitTimeInMs?: number;
}

export class KafkaChangeBus implements ChangeBus {
  readonly kind = 'kafka';
  readonly groupId: string;
  private readonly kafka: Kafka;
  private readonly log: Log;
  private consumer: Consumer | null = null;

  constructor(private readonly options: KafkaChangeBusOptions) {
    this.groupId = options.groupId ?? `estate-replica-${randomUUID()}`;
    this.log = options.log ?? silentLog;
    this.kafka = createKafka(options);
  }

  /** Resolves once the consumer has joined its group; messages produced after the call began are delivered. */
  async start(onChange: (changes: CatalogueChange[]) => Promise<void> | void): Promise<void> {
    const { topic } = this.options;
    await ensureTopic(this.kafka, topic, this.options.numPartitions);
    const admin = this.kafka.admin();
    await admin.connect();
    try {
      const ends = await admin.fetchTopicOffsets(topic);
      await admin.setOffsets({ groupId: this.groupId, topic, partitions: ends.map((e) => ({ partition: e.partition, offset: e.offset })) });
    } finally {
      await admin.disconnect();
    }

    const consumer = this.kafka.consumer({
      groupId: this.groupId,
      maxWaitTimeInMs: this.options.maxWaitTimeInMs ?? 50,
      minBytes: 1,
      sessionTimeout: 10_000,
      heartbeatInterval: 1000,
      // A broker outage outlasts any retry budget; the consumer must come back by itself when the broker does.
      retry: { initialRetryTime: 300, maxRetryTime: 5000, retries: 10, restartOnFailure: () => Promise.resolve(true) },
    });
    try {
      await this.run(consumer, onChange);
      this.consumer = consumer;
    } catch (e) {
      // A half-started consumer would keep retrying in the background; the caller may call start() again.
      await consumer.disconnect().catch(() => undefined);
      throw e;
    }
  }

  private async run(consumer: Consumer, onChange: (changes: CatalogueChange[]) => Promise<void> | void): Promise<void> {
    const { topic } = this.options;
    const joined = new Promise<void>((resolve) => {
      const off = consumer.on(consumer.events.GROUP_JOIN, () => {
        off();
        resolve();
      });
    });
    consumer.on(consumer.events.CRASH, (e) => this.log.warn({ err: e.payload.error, restart: e.payload.restart }, 'kafka consumer crashed'));
    await consumer.connect();
    // Only used when the group has no committed offset — the broker lost it (a wiped or rebuilt cluster): reading
    // the topic again is then safe (announcements the read model already reflects cost nothing), missing some is not.
    await consumer.subscribe({ topic, fromBeginning: true });
    await consumer.run({
      eachBatch: async ({ batch }) => {
        const changes: CatalogueChange[] = [];
        for (const m of batch.messages) {
          const d = decodeChange(m.value);
          if (d.ok) changes.push(d.change);
          else this.log.warn({ topic, partition: batch.partition, offset: m.offset, reason: d.reason }, 'change topic: malformed message skipped');
        }
        if (changes.length > 0) await onChange(changes);
      },
    });
    await joined;
  }

  async stop(): Promise<void> {
    const consumer = this.consumer;
    this.consumer = null;
    if (!consumer) return;
    await consumer.disconnect().catch(() => undefined);
    // The group is this process's alone: leaving it behind would only clutter the broker until offsets expire.
    const admin = this.kafka.admin();
    try {
      await admin.connect();
      await admin.deleteGroups([this.groupId]);
    } catch {
      // Best effort: the broker forgets an empty group's offsets after offsets.retention.minutes anyway.
    } finally {
      await admin.disconnect().catch(() => undefined);
    }
  }
}

/**
 * Produces changes to the topic: acks from all in-sync replicas, the idempotent producer (no duplicates from the
 * producer's own retries) with one request in flight (so a retry cannot reorder a tool's messages). `publish` resolves
 * only once Kafka has acknowledged every message, which is what lets the relay move its checkpoint.
 */
export class KafkaChangePublisher implements ChangePublisher {
  private readonly kafka: Kafka;
  private producer: Producer | null = null;
  private topicReady = false;

  constructor(private readonly options: KafkaConnection & { numPartitions?: number }) {
    this.kafka = createKafka(options);
  }

  async publish(changes: readonly CatalogueChange[]): Promise<void> {
    if (changes.length === 0) return;
    try {
      const producer = await this.connected();
      await producer.send({
        topic: this.options.topic,
        acks: -1,
        messages: changes.map((c) => ({ key: c.tool, value: encodeChange(c) })),
      });
    } catch (e) {
      // After a broker outage kafkajs's producer can stay wedged (and a rebuilt broker may lack the topic); the next
      // attempt starts from a fresh producer and checks the topic again.
      this.topicReady = false;
      await this.close();
      throw e;
    }
  }

  private async connected(): Promise<Producer> {
    if (!this.topicReady) {
      await ensureTopic(this.kafka, this.options.topic, this.options.numPartitions);
      this.topicReady = true;
    }
    if (this.producer) return this.producer;
    const producer = this.kafka.producer({
      idempotent: true,
      maxInFlightRequests: 1,
      allowAutoTopicCreation: false,
      createPartitioner: Partitioners.DefaultPartitioner,
      retry: { initialRetryTime: 200, maxRetryTime: 2000, retries: 3 },
    });
    await producer.connect();
    this.producer = producer;
    return producer;
  }

  async close(): Promise<void> {
    const p = this.producer;
    this.producer = null;
    await p?.disconnect().catch(() => undefined);
  }
}
