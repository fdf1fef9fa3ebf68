/**
 * A relay candidate in its own process, so tests can SIGKILL it. Usage (through tsx):
 *   kafka-relay-worker.ts <pgUrl> <schema> <brokers> <topic> <holder> <ttlMs> <batchSize> [dieAfterAckedBatches]
 * Prints one JSON line per fact: {"active":true} once it holds the lease, {"acked":n} after each batch Kafka
 * acknowledged. With dieAfterAckedBatches = n it SIGKILLs itself right after Kafka acknowledged its n-th batch and
 * BEFORE the checkpoint is written: the worst moment for a relay to die.
 *
 * It also prints {"held":[from,to]} for every successful append of its own lease state: the longest time it may
 * believe it holds the lease from that append (it starts counting just before it), on CLOCK_MONOTONIC in ms, which
 * every process on the machine shares; and {"released":at} when it gave the lease up. Two candidates' intervals must
 * never overlap, however the machine stalls them: that is the lease's property, judged without a wall-clock race.
 */
import { systemTimer, type EventStore } from '#app/ports';
import { RELAY_STATE_EVENT } from '#app/relay-lease';
import { startRelay, type ChangePublisher } from '#app/relay';
import { KafkaChangePublisher } from '#bus/kafka-change-bus';
import { createPostgresEventStore } from '#store/postgres-event-store';

const [pgUrl, schema, brokers, topic, holder, ttl, batch, dieAfter] = process.argv.slice(2);
const store = await createPostgresEventStore({ connectionString: pgUrl as string, schema: schema as string, pollIntervalMs: 20 });
const monotonicMs = (): number => Number(process.hrtime.bigint()) / 1e6;
/** The store as the relay sees it, reporting each of our own lease appends that succeeded. */
const watched: EventStore = {
  kind: store.kind,
  appendMany: (requests) => store.appendMany(requests),
  readStream: (streamId, options) => store.readStream(streamId, options),
  readAll: (options) => store.readAll(options),
  subscribe: (options) => store.subscribe(options),
  close: () => store.close(),
  async append(...args) {
    const before = monotonicMs();
    const r = await store.append(...args);
    for (const e of args[1]) {
      if (e.type !== RELAY_STATE_EVENT) continue;
      const state = e.data as { holder: string; ttlMs: number };
      if (state.holder === holder) console.log(JSON.stringify({ held: [before, before + state.ttlMs] }));
      else if (state.holder === '') console.log(JSON.stringify({ released: before }));
    }
    return r;
  },
};
const kafka = new KafkaChangePublisher({ brokers: (brokers as string).split(','), topic: topic as string });
let acked = 0;
const publisher: ChangePublisher = {
  async publish(changes) {
    await kafka.publish(changes);
    acked++;
    if (dieAfter !== undefined && acked >= Number(dieAfter)) process.kill(process.pid, 'SIGKILL');
  },
  close: () => kafka.close(),
};
const relay = startRelay({
  store: watched,
  // The same clock as the intervals reported above (the lease measures on it).
  timer: { now: monotonicMs, sleep: systemTimer.sleep },
  publisher,
  topic: topic as string,
  holder: holder as string,
  ttlMs: Number(ttl),
  batchSize: Number(batch),
  onPublished: (changes) => console.log(JSON.stringify({ acked, count: changes.length })),
});
let reported = false;
const timer = setInterval(() => {
  if (relay.active !== reported) {
    reported = relay.active;
    console.log(JSON.stringify({ active: reported }));
  }
}, 20);
process.once('SIGTERM', () => {
  clearInterval(timer);
  void relay.close().then(() => store.close()).then(() => process.exit(0));
});
