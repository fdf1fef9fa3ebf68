/**
 * What the change bus and the publisher share: the kafkajs client as Estate configures it, the topic's creation, the
 * `kafka://` URL, and a time bound for kafkajs calls that can hang across a broker restart.
 */
import { Kafka, logLevel, type Admin, type LogEntry } from 'kafkajs';
import { silentLog, type Log } from '#app/log';

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

/** `work`, or an error naming `what` once `ms` have passed (the work itself is not cancelled). */
export const within = <T>(ms: number, what: string, work: Promise<T>): Promise<T> => {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not finish within ${ms} ms`)), ms);
  });
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
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

/** Broker answers that mean "this partition has no settled leader yet": a new topic's first seconds, or an election. */
const LEADERLESS = new Set(['NOT_LEADER_FOR_PARTITION', 'LEADER_NOT_AVAILABLE', 'UNKNOWN_TOPIC_OR_PARTITION']);

/**
 * The topic's offsets, as `admin.fetchTopicOffsets`, but waiting out a partition whose leader is not in place yet.
 * kafkajs gives up at once on NOT_LEADER_FOR_PARTITION, and a broker may say so for a topic that `createTopics`
 * (with `waitForLeaders`) or `listTopics` already reported: its metadata names the leader a moment before that
 * broker serves the partition. Any other error, and the last leaderless one after `attempts`, is thrown.
 */
export const fetchTopicEnds = async (
  admin: Pick<Admin, 'fetchTopicOffsets'>,
  topic: string,
  attempts = 12,
  sleep: (ms: number) => Promise<void> = (ms) => new Promise((r) => setTimeout(r, ms)),
): Promise<Awaited<ReturnType<Admin['fetchTopicOffsets']>>> => {
  for (let attempt = 1; ; attempt++) {
    try {
      return await admin.fetchTopicOffsets(topic);
    } catch (e) {
      const type = (e as { type?: unknown }).type;
      if (attempt >= attempts || typeof type !== 'string' || !LEADERLESS.has(type)) throw e;
      await sleep(Math.min(100 * attempt, 1000));
    }
  }
};
