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
 *
 * A consumer kafkajs gives up on, or one wedged after a broker restart, is replaced by a fresh one in the same group
 * (consumer-watchdog.ts): a replica never stops hearing about changes until someone restarts it.
 */
import { randomUUID } from 'node:crypto';
import type { Consumer, Kafka } from 'kafkajs';
import { silentLog, type Log } from '#app/log';
import { systemTimer, type CatalogueChange, type ChangeBus, type Timer } from '#app/ports';
import { decodeChange, warnMalformed, type MalformedMessage } from './change-message.ts';
import { watchConsumer, type ConsumerWatchdog } from './consumer-watchdog.ts';
import { createKafka, ensureTopic, fetchTopicEnds, within, type KafkaConnection } from './kafka-client.ts';

export { KafkaChangePublisher } from './kafka-change-publisher.ts';
export { parseKafkaUrl, type KafkaConnection } from './kafka-client.ts';


export interface KafkaChangeBusOptions extends KafkaConnection {
  /** Default: `estate-replica-<uuid>`, so every process sees every message. */
  groupId?: string;
  numPartitions?: number;
  maxWaitTimeInMs?: number;
  /** A consumer with no fetch or heartbeat for this long (outside a batch) is replaced. Default 30000. */
  stallMs?: number;
  /** Default: the system clock (tests drive the watchdog with a manual one). */
  timer?: Timer;
}

type OnChange = (changes: CatalogueChange[]) => Promise<void> | void;

export class KafkaChangeBus implements ChangeBus {
  readonly kind = 'kafka';
  readonly groupId: string;
  private readonly kafka: Kafka;
  private readonly log: Log;
  private consumer: Consumer | null = null;
  private watchdog: ConsumerWatchdog | null = null;

  constructor(private readonly options: KafkaChangeBusOptions) {
    this.groupId = options.groupId ?? `estate-replica-${randomUUID()}`;
    this.log = options.log ?? silentLog;
    this.kafka = createKafka(options);
  }

  /** Resolves once the consumer has joined its group; messages produced after the call began are delivered. */
  async start(onChange: OnChange): Promise<void> {
    const { topic } = this.options;
    await ensureTopic(this.kafka, topic, this.options.numPartitions);
    const admin = this.kafka.admin();
    await admin.connect();
    try {
      const ends = await fetchTopicEnds(admin, topic);
      await admin.setOffsets({ groupId: this.groupId, topic, partitions: ends.map((e) => ({ partition: e.partition, offset: e.offset })) });
    } finally {
      await admin.disconnect();
    }
    const stallMs = this.options.stallMs ?? 30_000;
    const watchdog = watchConsumer({
      stallMs,
      deadRestartMs: 2000,
      timer: this.options.timer ?? systemTimer,
      log: this.log,
      restart: async () => {
        const old = this.consumer;
        this.consumer = null;
        if (old) await within(stallMs, 'kafka consumer disconnect', old.disconnect()).catch(() => undefined);
        const launching = this.launch(onChange, watchdog);
        try {
          this.consumer = await within(stallMs * 2, 'kafka consumer restart', launching);
        } catch (e) {
          // Given up on: should it join after all, it must not run on unowned (stop() would never reach it).
          void launching.then((late) => late.disconnect()).catch(() => undefined);
          throw e;
        }
        this.log.warn({ group: this.groupId }, 'kafka consumer: restarted; following the topic again');
      },
    });
    try {
      this.consumer = await this.launch(onChange, watchdog);
      this.watchdog = watchdog;
    } catch (e) {
      await watchdog.close();
      throw e;
    }
  }

  /** A consumer in this bus's group, joined and running; on failure nothing is left running. */
  private async launch(onChange: OnChange, watchdog: ConsumerWatchdog): Promise<Consumer> {
    const consumer = this.kafka.consumer({
      groupId: this.groupId,
      maxWaitTimeInMs: this.options.maxWaitTimeInMs ?? 50,
      minBytes: 1,
      sessionTimeout: 10_000,
      heartbeatInterval: 1000,
      // A broker outage outlasts any retry budget; the consumer must come back by itself when the broker does.
      retry: { initialRetryTime: 300, maxRetryTime: 5000, retries: 10, restartOnFailure: () => Promise.resolve(true) },
    });
    // Signs of life count only from the consumer in place: one being replaced may still emit a last event or two.
    const current = (): boolean => this.consumer === consumer || this.consumer === null;
    for (const event of [consumer.events.FETCH_START, consumer.events.HEARTBEAT, consumer.events.GROUP_JOIN]) {
      consumer.on(event, () => {
        if (current()) watchdog.alive();
      });
    }
    consumer.on(consumer.events.CRASH, (e) => {
      this.log.warn({ err: e.payload.error, restart: e.payload.restart }, 'kafka consumer crashed');
      if (current()) watchdog.crashed(e.payload.restart);
    });
    try {
      await this.run(consumer, async (changes) => {
        watchdog.batchStarted();
        try {
          await onChange(changes);
        } finally {
          watchdog.batchEnded();
        }
      });
      return consumer;
    } catch (e) {
      // A half-started consumer would keep retrying in the background; the caller may call start() again.
      await consumer.disconnect().catch(() => undefined);
      throw e;
    }
  }

  private async run(consumer: Consumer, onChange: OnChange): Promise<void> {
    const { topic } = this.options;
    const joined = new Promise<void>((resolve) => {
      const off = consumer.on(consumer.events.GROUP_JOIN, () => {
        off();
        resolve();
      });
    });
    await consumer.connect();
    // Only used when the group has no committed offset — the broker lost it (a wiped or rebuilt cluster): reading
    // the topic again is then safe (announcements the read model already reflects cost nothing), missing some is not.
    await consumer.subscribe({ topic, fromBeginning: true });
    await consumer.run({
      eachBatch: async ({ batch }) => {
        const changes: CatalogueChange[] = [];
        const skipped: MalformedMessage[] = [];
        for (const m of batch.messages) {
          const d = decodeChange(m.value);
          if (d.ok) changes.push(d.change);
          else skipped.push({ partition: batch.partition, offset: m.offset, reason: d.reason });
        }
        warnMalformed(this.log, topic, skipped);
        if (changes.length > 0) await onChange(changes);
      },
    });
    await joined;
  }

  /** Restarts made by the watchdog (tests, metrics). */
  get restarts(): number {
    return this.watchdog?.restarts ?? 0;
  }

  async stop(): Promise<void> {
    await this.watchdog?.close();
    this.watchdog = null;
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
