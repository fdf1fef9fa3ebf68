/**
 * Shared by the tests that need the real Kafka broker (`npm run services:up` starts one on 127.0.0.1:9092) and the
 * real PostgreSQL. The rule (DESIGN.md): a test that cannot reach its server FAILS when CI=true and is skipped with a
 * loud reason anywhere else.
 */
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import { fetchTopicEnds } from '#bus/kafka-client';
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

/** Every message on the topic now: read from the beginning up to the end offsets it had when the call began. */
export async function readTopic(brokers: string[], topic: string, timeoutMs = 30_000): Promise<TopicMessage[]> {
  const kafka = quietKafka(brokers, 'estate-test-reader');
  const admin = kafka.admin();
  await admin.connect();
  const ends = new Map((await fetchTopicEnds(admin, topic)).map((o) => [o.partition, BigInt(o.high)]));
  const groupId = `estate-test-reader-${randomUUID()}`;
  const consumer = kafka.consumer({ groupId, maxWaitTimeInMs: 100 });
  const out: TopicMessage[] = [];
  const next = new Map([...ends].map(([p]) => [p, 0n]));
  const atEnd = () => [...ends].every(([p, high]) => (next.get(p) ?? 0n) >= high);
  let done!: () => void;
  const finished = new Promise<void>((r) => (done = r));
  if (atEnd()) done();
  try {
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    await consumer.run({
      eachMessage: ({ message, partition }) => {
        out.push({ key: message.key?.toString() ?? null, value: message.value?.toString() ?? '', partition, offset: message.offset });
        next.set(partition, BigInt(message.offset) + 1n);
        if (atEnd()) done();
        return Promise.resolve();
      },
    });
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`read only ${out.length} messages of ${topic} in ${timeoutMs} ms`)), timeoutMs)));
    await Promise.race([finished, late]).finally(() => clearTimeout(timer));
  } finally {
    await consumer.disconnect();
    await admin.deleteGroups([groupId]).catch(() => undefined);
    await admin.disconnect();
  }
  return out;
}

/** Read the topic again and again until `enough` holds (the producer may still be at work). */
export async function readTopicUntil(brokers: string[], topic: string, enough: (m: TopicMessage[]) => boolean, timeoutMs = 60_000): Promise<TopicMessage[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const msgs = await readTopic(brokers, topic);
    if (enough(msgs) || Date.now() > deadline) return msgs;
    await new Promise((r) => setTimeout(r, 500));
  }
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

// ───────────────────────────── a private broker for outage tests ─────────────────────────────

const REPO = new URL('../../', import.meta.url).pathname;
const LIBS = join(REPO, '.cache', 'kafka', 'libs');

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

export interface PrivateBroker {
  brokers: string[];
  /** SIGTERM the broker and wait until it has exited (its data stays). */
  stop(): Promise<void>;
  /** Start it again on the same ports and data, and wait until it answers (group coordinator included). */
  start(): Promise<void>;
  /** Stop it and delete its data. */
  destroy(): Promise<void>;
}

/** Why a private broker cannot be started here, or null. */
export const privateBrokerUnavailable = (): string | null =>
  existsSync(LIBS) ? null : `no Kafka jars in ${LIBS} (npm run services:up downloads them)`;

const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as AddressInfo).port;
      srv.close(() => resolve(port));
    });
  });

/**
 * A broker of our own, from the jars `npm run services:up` cached, on free ports with its own data directory. The
 * outage tests stop and restart THIS one: stopping the shared broker would break other suites running at the same
 * time, and a concurrent `services:up` would start a fresh one (wiping its data) while ours was down.
 */
export async function startPrivateBroker(): Promise<PrivateBroker> {
  const why = privateBrokerUnavailable();
  if (why) throw new Error(why);
  const dir = mkdtempSync(join(tmpdir(), 'estate-kafka-'));
  try {
    return await startBrokerIn(dir);
  } catch (e) {
    rmSync(dir, { recursive: true, force: true });
    throw e;
  }
}

/**
 * A KRaft cluster id: 16 random bytes, URL-safe base64 without padding. Such an id may start with `-` (1 in 64); it
 * is always passed as `--cluster-id=<id>`, which no argument parser can read as a flag.
 */
export const newClusterId = (): string => randomBytes(16).toString('base64url');

/** `StorageTool format` the data directory; on failure the error carries the tool's own output. */
export function formatStorage(java: string[], clusterId: string, propsFile: string): void {
  const run = spawnSync('java', [...java, 'kafka.tools.StorageTool', 'format', `--cluster-id=${clusterId}`, '-c', propsFile], { encoding: 'utf8' });
  if (run.error !== undefined || run.status !== 0) {
    const output = `${run.stdout ?? ''}${run.stderr ?? ''}`.trim();
    const cause = run.error !== undefined ? run.error.message : `exit ${run.status ?? run.signal}`;
    throw new Error(`kafka StorageTool format (cluster id ${clusterId}) failed: ${cause}\n${output}`);
  }
}

/** The JVM arguments of a private broker (and its tools) whose logs go to `dir`. */
export const javaArgs = (dir: string): string[] => ['-Xms256m', '-Xmx512m', '-XX:+UseG1GC', '-Djava.awt.headless=true', `-Dlog4j.configuration=file:${join(REPO, 'scripts', 'kafka', 'log4j.properties')}`, `-Dkafka.logs.dir=${dir}`, '-cp', `${LIBS}/*`];

/** The private broker's server.properties, with its data under `dir` and the given ports. */
export function writeBrokerProps(dir: string, port: number, controllerPort: number): string {
  const props = readFileSync(join(REPO, 'scripts', 'kafka', 'server.properties'), 'utf8')
    .replaceAll('@DATA_DIR@', join(dir, 'data'))
    .replaceAll('127.0.0.1:9092', `127.0.0.1:${port}`)
    .replaceAll('127.0.0.1:9093', `127.0.0.1:${controllerPort}`);
  const propsFile = join(dir, 'server.properties');
  writeFileSync(propsFile, props);
  return propsFile;
}

async function startBrokerIn(dir: string): Promise<PrivateBroker> {
  const [port, controllerPort] = [await freePort(), await freePort()];
  const propsFile = writeBrokerProps(dir, port, controllerPort);
  const java = javaArgs(dir);
  formatStorage(java, newClusterId(), propsFile);
  const brokers = [`127.0.0.1:${port}`];
  let pid: number | null = null;
  // The broker's own output, shown in the error (its folder is removed once the test gives up on it).
  const logTail = (): string => {
    try {
      return readFileSync(join(dir, 'stdout.log'), 'utf8').split('\n').slice(-40).join('\n');
    } catch {
      return '(no broker output)';
    }
  };

  const start = async (): Promise<void> => {
    const log = openSync(join(dir, 'stdout.log'), 'a');
    const child = spawn('java', [...java, 'kafka.Kafka', propsFile], { detached: true, stdio: ['ignore', log, log] });
    closeSync(log);
    child.unref();
    pid = child.pid ?? null;
    const deadline = Date.now() + 90_000;
    for (;;) {
      if (pid === null || !alive(pid)) throw new Error(`private Kafka broker exited:\n${logTail()}`);
      const admin = quietKafka(brokers).admin();
      try {
        await admin.connect();
        await admin.listTopics();
        // The group coordinator may still be loading __consumer_offsets; ask for a group until it answers.
        await admin.describeGroups(['estate-test-ready']);
        return;
      } catch {
        // not yet
      } finally {
        await admin.disconnect().catch(() => undefined);
      }
      if (Date.now() > deadline) throw new Error(`private Kafka broker did not answer within 90 s:\n${logTail()}`);
      await new Promise((r) => setTimeout(r, 500));
    }
  };

  const stop = async (): Promise<void> => {
    if (pid === null) return;
    const p = pid;
    pid = null;
    process.kill(p, 'SIGTERM');
    const deadline = Date.now() + 30_000;
    while (alive(p)) {
      if (Date.now() > deadline) process.kill(p, 'SIGKILL');
      await new Promise((r) => setTimeout(r, 200));
    }
  };

  try {
    await start();
  } catch (e) {
    // A broker that started but never answered must not outlive the test (its folder is removed by the caller).
    await stop().catch(() => undefined);
    throw e;
  }
  return {
    brokers,
    stop,
    start,
    destroy: async () => {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
