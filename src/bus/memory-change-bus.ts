/**
 * The ChangeBus port in memory: a topic object standing in for the broker, a bus per replica consuming it, and a
 * publisher for the relay. It keeps the same contract as KafkaChangeBus (test/contract/change-bus-contract.ts runs
 * both), so the relay and the bus follower can be tested without a broker, on a hand-driven clock, with outages made
 * on demand (`topic.down = true`).
 *
 * Messages go through the same bytes as on Kafka (`encodeChange` / `decodeChange`), so a malformed message is skipped
 * here exactly as there. Delivery is asynchronous (never inside `publish`): a publisher must not learn anything from
 * its consumers' speed, and a consumer's `onChange` must not run on the relay's stack.
 */
import type { CatalogueChange, ChangeBus, ChangePublisher, Timer } from '#app/ports';
import { systemTimer } from '#app/ports';
import { silentLog, type Log } from '#app/log';
import { decodeChange, encodeChange, warnMalformed, type MalformedMessage } from './change-message.ts';

/** A message as produced: the tool name as key, the value as on the wire (null: a tombstone). */
export interface MemoryMessage {
  key: string;
  value: string | null;
}

export class BrokerDownError extends Error {
  constructor() {
    super('memory change topic: the broker is down');
    this.name = 'BrokerDownError';
  }
}

/** The broker and its one topic. Every bus started on it sees every message produced after its start. */
export class MemoryChangeTopic {
  /** While true, producing and starting a bus fail, as they do while Kafka is unreachable. */
  down = false;
  /** Every message ever produced, in order: what a test reads back, as it reads the Kafka topic. */
  readonly messages: MemoryMessage[] = [];
  private readonly consumers = new Set<(m: MemoryMessage) => void>();

  /** Append messages (all or none) and hand them to every consumer. */
  produce(messages: readonly MemoryMessage[]): void {
    if (this.down) throw new BrokerDownError();
    for (const m of messages) {
      this.messages.push(m);
      for (const c of this.consumers) c(m);
    }
  }

  /** Start receiving what is produced from now on; returns the way to stop. */
  consume(consumer: (m: MemoryMessage) => void): () => void {
    if (this.down) throw new BrokerDownError();
    this.consumers.add(consumer);
    return () => this.consumers.delete(consumer);
  }
}

export interface MemoryChangeBusOptions {
  topic: MemoryChangeTopic;
  log?: Log;
  /** Waits before redelivering a batch whose `onChange` threw. Default: setTimeout. */
  timer?: Timer;
  /** Default 100. */
  redeliverAfterMs?: number;
}

export class MemoryChangeBus implements ChangeBus {
  readonly kind = 'memory';
  private readonly log: Log;
  private readonly timer: Timer;
  private stopConsuming: (() => void) | null = null;
  private onChange: ((changes: CatalogueChange[]) => Promise<void> | void) | null = null;
  private queue: MemoryMessage[] = [];
  private draining: Promise<void> | null = null;
  private stopping = new AbortController();

  constructor(private readonly options: MemoryChangeBusOptions) {
    this.log = options.log ?? silentLog;
    this.timer = options.timer ?? systemTimer;
  }

  async start(onChange: (changes: CatalogueChange[]) => Promise<void> | void): Promise<void> {
    if (this.stopConsuming) throw new Error('memory change bus: already started');
    this.stopping = new AbortController();
    this.onChange = onChange;
    this.stopConsuming = this.options.topic.consume((m) => {
      this.queue.push(m);
      this.draining ??= this.drain();
    });
  }

  /** One batch at a time, awaited: what arrives meanwhile waits and goes in the next batch. */
  private async drain(): Promise<void> {
    await Promise.resolve(); // never deliver on the producer's stack
    try {
      while (this.stopConsuming && this.queue.length > 0) {
        const batch = this.queue;
        this.queue = [];
        const changes = this.decode(batch);
        if (changes.length === 0) continue;
        try {
          await this.onChange?.(changes);
        } catch (err) {
          // At least once: the batch is offered again (as Kafka does when eachBatch throws), after a pause.
          this.log.warn({ err, count: changes.length }, 'memory change bus: onChange failed; redelivering the batch');
          this.queue = [...batch, ...this.queue];
          await this.timer.sleep(this.options.redeliverAfterMs ?? 100, this.stopping.signal);
        }
      }
    } finally {
      this.draining = null;
    }
  }

  private decode(batch: readonly MemoryMessage[]): CatalogueChange[] {
    const changes: CatalogueChange[] = [];
    const skipped: MalformedMessage[] = [];
    for (const m of batch) {
      const d = decodeChange(m.value);
      if (d.ok) changes.push(d.change);
      else skipped.push({ key: m.key, reason: d.reason });
    }
    warnMalformed(this.log, undefined, skipped);
    return changes;
  }

  async stop(): Promise<void> {
    this.stopConsuming?.();
    this.stopConsuming = null;
    this.queue = [];
    this.stopping.abort();
    // A batch being handled finishes first: after stop() resolves, onChange is not running and will not run again.
    await this.draining;
    this.onChange = null;
  }
}

/** The relay's way onto the memory topic: all of a batch or none of it, acknowledged when `publish` resolves. */
export class MemoryChangePublisher implements ChangePublisher {
  constructor(private readonly topic: MemoryChangeTopic) {}

  async publish(changes: readonly CatalogueChange[]): Promise<void> {
    this.topic.produce(changes.map((c) => ({ key: c.tool, value: encodeChange(c) })));
  }

  async close(): Promise<void> {}
}
