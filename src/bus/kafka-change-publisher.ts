/**
 * KafkaChangePublisher: the relay's way onto the change topic (kafkajs 2.2.x).
 */
import { Partitioners, type Kafka, type Producer } from 'kafkajs';
import type { CatalogueChange, ChangePublisher } from '#app/ports';
import { encodeChange } from './change-message.ts';
import { createKafka, ensureTopic, within, type KafkaConnection } from './kafka-client.ts';

/** Longer than kafkajs's own retries of one send (requestTimeout 10 s, 3 retries up to 2 s apart). */
const SEND_TIMEOUT_MS = 45_000;

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
      // kafkajs bounds each request, but a send can still hang across a broker restart; the relay's loop (and so its
      // lease renewals) waits on this, so it is bounded too. A send that completes after all is a duplicate, which
      // consumers drop by position.
      await within(SEND_TIMEOUT_MS, 'kafka send', producer.send({
        topic: this.options.topic,
        acks: -1,
        messages: changes.map((c) => ({ key: c.tool, value: encodeChange(c) })),
      }));
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
    if (p) await within(SEND_TIMEOUT_MS, 'kafka producer disconnect', p.disconnect()).catch(() => undefined);
  }
}
