/**
 * A relay candidate in its own process, so tests can SIGKILL it. Usage (through tsx):
 *   kafka-relay-worker.ts <pgUrl> <schema> <brokers> <topic> <holder> <ttlMs> <batchSize> [dieAfterAckedBatches]
 * Prints one JSON line per fact: {"active":true} once it holds the lease, {"acked":n} after each batch Kafka
 * acknowledged. With dieAfterAckedBatches = n it SIGKILLs itself right after Kafka acknowledged its n-th batch and
 * BEFORE the checkpoint is written: the worst moment for a relay to die.
 */
import { startRelay, type ChangePublisher } from '../../src/app/relay.ts';
import { KafkaChangePublisher } from '../../src/bus/kafka-change-bus.ts';
import { createPostgresEventStore } from '../../src/store/postgres-event-store.ts';

const [pgUrl, schema, brokers, topic, holder, ttl, batch, dieAfter] = process.argv.slice(2);
const store = await createPostgresEventStore({ connectionString: pgUrl as string, schema: schema as string, pollIntervalMs: 20 });
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
  store,
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
