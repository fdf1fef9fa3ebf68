// Waits until a Kafka broker answers a metadata request AND can name a group coordinator, retrying within a deadline.
// An open port is not enough: a fresh KRaft broker accepts connections before it has metadata, and consumer groups
// report "coordinator not available" until __consumer_offsets exists. Exit 0 when ready, 1 when the deadline passes.
// Usage: node scripts/kafka/wait-ready.mjs <host:port> [deadlineSeconds]
import { Kafka, logLevel } from 'kafkajs';

const broker = process.argv[2] ?? '127.0.0.1:9092';
const deadline = Date.now() + Number(process.argv[3] ?? 60) * 1000;

const kafka = new Kafka({
  clientId: 'estate-services-up',
  brokers: [broker],
  logLevel: logLevel.NOTHING,
  connectionTimeout: 2000,
  requestTimeout: 5000,
  retry: { retries: 0 },
});

let lastError = 'no attempt';
while (Date.now() < deadline) {
  const admin = kafka.admin();
  try {
    await admin.connect();
    await admin.listTopics();
    // Asking for a group makes the broker create __consumer_offsets and elect its coordinator now, not in a test.
    await admin.describeGroups(['estate-services-up']);
    await admin.disconnect();
    process.exit(0);
  } catch (error) {
    lastError = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    await admin.disconnect().catch(() => undefined);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}
console.error(`kafka at ${broker} not ready: ${lastError}`);
process.exit(1);
