// A cache-invalidation consumer: reads Estate's change topic with `estate/changes` (decode, checked with zod;
// deduplicate by position; a malformed message is reported and skipped) and evicts what it caches per tool.
//
//   ESTATE_BROKERS=127.0.0.1:9092 ESTATE_TOPIC=estate.catalogue.changes node --import tsx examples/cache-consumer.ts [--max <n>]
import { consumeChanges, type CatalogueChange } from 'estate/changes';

const brokers = (process.env.ESTATE_BROKERS ?? '127.0.0.1:9092').split(',');
const topic = process.env.ESTATE_TOPIC ?? 'estate.catalogue.changes';
const maxAt = process.argv.indexOf('--max');
const max = maxAt >= 0 ? Number(process.argv[maxAt + 1]) : Number.POSITIVE_INFINITY;

// What this consumer caches: anything derived from a tool's contract, keyed by tool name.
const cached = new Map<string, string>();
let seen = 0;

const consumer = consumeChanges({
  brokers,
  topic,
  fromBeginning: process.env.ESTATE_FROM_BEGINNING === '1',
  onMalformed: (e, at) => console.error(`skipped (partition ${at.partition}, offset ${at.offset}): ${e.message}`),
  onChange: async (change: CatalogueChange) => {
    cached.delete(change.tool);
    console.log(`evicted ${change.tool} (${change.event} ${change.version} at position ${change.position})`);
    seen += 1;
    if (seen >= max) await shutdown();
  },
});

const shutdown = async (): Promise<void> => {
  console.log(JSON.stringify({ stats: consumer.stats() }));
  setImmediate(() => void consumer.stop().then(() => process.exit(0)));
};
process.once('SIGINT', () => void shutdown());
process.once('SIGTERM', () => void shutdown());
await consumer.ready;
console.error(`listening on ${topic} at ${brokers.join(',')}`);
