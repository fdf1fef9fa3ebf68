/**
 * Shared by the tests that need the real Kafka broker (`npm run services:up` starts one on 127.0.0.1:9092) and the
 * real PostgreSQL. The rule (DESIGN.md): a test that cannot reach its server FAILS when CI=true and is skipped with a
 * loud reason anywhere else.
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, openSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import { beforeAll, describe, it } from 'vitest';
import { probePostgres, testPgUrl } from './pg-helpers.ts';

export const testKafkaBrokers = (): string[] => (process.env.ESTATE_TEST_KAFKA ?? '127.0.0.1:9092').split(',');

export const quietKafka = (brokers: string[], clientId = 'estate-test'): Kafka =>
  new Kafka({ clientId, brokers, logLevel: logLevel.NOTHING, connectionTimeout: 2000, requestTimeout: 5000, retry: { retries: 2, initialRetryTime: 100 } });

/** null when a metadata request answers; otherwise why not. */
export async function probeKafka(brokers: string[]): Promise<string | null> {
  const admin = quietKafka(brokers).admin();
  try {
    await admin.connect();
    await admin.listTopics();
    return null;
  } catch (e) {
    return e instanceof Error ? e.message : String(e);
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
}

export interface Services {
  pgUrl: string;
  brokers: string[];
}

/**
 * Resolves to the services when PostgreSQL and Kafka both answer. Otherwise registers a suite that fails (CI) or is
 * skipped with a warning (elsewhere) under `label`, and resolves to null: the caller then registers nothing else.
 */
export async function requireServices(label: string): Promise<Services | null> {
  const pgUrl = testPgUrl();
  const brokers = testKafkaBrokers();
  const [pg, kafka] = await Promise.all([probePostgres(pgUrl), probeKafka(brokers)]);
  if (pg === null && kafka === null) return { pgUrl, brokers };
  const missing = [pg !== null ? `PostgreSQL at ${pgUrl} (${pg})` : null, kafka !== null ? `Kafka at ${brokers.join(',')} (${kafka})` : null]
    .filter((x) => x !== null)
    .join(' and ');
  const message = `${missing} not reachable: `;
  if (process.env.CI === 'true') {
    describe(label, () => {
      beforeAll(() => {
        throw new Error(`${message}CI needs them; start them with npm run services:up`);
      });
      it('needs PostgreSQL and Kafka', () => undefined);
    });
  } else {
    console.warn(`\n*** ${message}skipping ${label}; run npm run services:up ***\n`);
    describe.skip(label, () => {
      it('needs PostgreSQL and Kafka', () => undefined);
    });
  }
  return null;
}

/** A topic name no other run uses. */
export const uniqueTopic = (purpose: string): string => `estate.test.${purpose}.${randomUUID().slice(0, 8)}`;

export interface TopicMessage {
  key: string | null;
  value: string;
  partition: number;
  offset: string;
}

/** Every message on the topic, from the beginning, once at least `count` have been read (or the deadline passed). */
export async function readTopic(brokers: string[], topic: string, count: number, timeoutMs = 30_000): Promise<TopicMessage[]> {
  const kafka = quietKafka(brokers, 'estate-test-reader');
  const groupId = `estate-test-reader-${randomUUID()}`;
  const consumer = kafka.consumer({ groupId, maxWaitTimeInMs: 100 });
  const out: TopicMessage[] = [];
  let done!: () => void;
  const enough = new Promise<void>((r) => (done = r));
  await consumer.connect();
  try {
    await consumer.subscribe({ topic, fromBeginning: true });
    await consumer.run({
      eachMessage: ({ message, partition }) => {
        out.push({ key: message.key?.toString() ?? null, value: message.value?.toString() ?? '', partition, offset: message.offset });
        if (out.length >= count) done();
        return Promise.resolve();
      },
    });
    await Promise.race([enough, new Promise((r) => setTimeout(r, timeoutMs))]);
  } finally {
    await consumer.disconnect();
    const admin = kafka.admin();
    await admin.connect();
    await admin.deleteGroups([groupId]).catch(() => undefined);
    await admin.disconnect();
  }
  return out;
}

/** Produce raw values to the topic (for malformed-message tests). */
export async function produceRaw(brokers: string[], topic: string, messages: { key: string; value: string }[]): Promise<void> {
  const producer = quietKafka(brokers).producer({ allowAutoTopicCreation: true });
  await producer.connect();
  try {
    await producer.send({ topic, messages });
  } finally {
    await producer.disconnect();
  }
}

// ───────────────────────────── stopping and restarting the broker ─────────────────────────────

const REPO = new URL('../../', import.meta.url).pathname;
const PID_FILE = join(REPO, '.cache', 'kafka', 'kafka.pid');

interface BrokerCommand {
  argv: string[];
  cwd: string;
}

const brokerPid = (): number | null => {
  if (!existsSync(PID_FILE)) return null;
  const pid = Number(readFileSync(PID_FILE, 'utf8').trim());
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('kafka.Kafka') ? pid : null;
  } catch {
    return null;
  }
};

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/**
 * Stop the broker that `npm run services:up` started (its pid is in .cache/kafka/kafka.pid) and return how to start it
 * again with its data intact — the way a real broker restart keeps its log, unlike a fresh `services:up`.
 */
export async function stopBroker(): Promise<BrokerCommand> {
  const pid = brokerPid();
  if (pid === null) throw new Error(`no Kafka broker started by npm run services:up (${PID_FILE}); cannot run the outage test`);
  const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter((a) => a.length > 0);
  const cwd = readlinkSync(`/proc/${pid}/cwd`);
  process.kill(pid, 'SIGTERM');
  const deadline = Date.now() + 30_000;
  while (alive(pid)) {
    if (Date.now() > deadline) process.kill(pid, 'SIGKILL');
    await new Promise((r) => setTimeout(r, 200));
  }
  return { argv, cwd };
}

/** Start the broker again with the same command line, detached (it must outlive the test), and wait until it answers. */
export async function startBroker(cmd: BrokerCommand, brokers: string[]): Promise<void> {
  const logFd = openSync(join(REPO, '.cache', 'kafka', 'logs', 'stdout.log'), 'a');
  const [bin, ...args] = cmd.argv;
  const child = spawn(bin as string, args, { cwd: cmd.cwd, detached: true, stdio: ['ignore', logFd, logFd] });
  child.unref();
  writeFileSync(PID_FILE, `${String(child.pid)}\n`);
  const deadline = Date.now() + 90_000;
  for (;;) {
    if ((await probeKafka(brokers)) === null) {
      // The group coordinator may still be loading __consumer_offsets; ask for a group until it answers.
      const admin = quietKafka(brokers).admin();
      try {
        await admin.connect();
        await admin.describeGroups(['estate-test-ready']);
        return;
      } catch {
        // not yet
      } finally {
        await admin.disconnect().catch(() => undefined);
      }
    }
    if (Date.now() > deadline) throw new Error('Kafka did not come back within 90 s; see .cache/kafka/logs');
    await new Promise((r) => setTimeout(r, 500));
  }
}
