/**
 * The Kafka change bus, end to end, on the real broker and the real PostgreSQL (loopback only, bounded):
 * - publish → `notifications/tools/list_changed` at a 2026-07-28 `subscriptions/listen` client of ANOTHER replica
 *   (two `estate serve --http --bus kafka://...` processes; the publish is a command on the store from this process),
 *   p50 and p99 over 500 publishes, beside the floor: a raw kafkajs produce → consume on the same broker with the
 *   same consumer settings; and beside the least any durable path needs: a raw INSERT of a row of the event's size,
 *   committed, then that produce → consume. The three are sampled in turns;
 * - publish throughput on PostgreSQL (the guard, the optimistic append) beside a raw INSERT of the same rows: from a
 *   handler with no catalogue (reads the stream first) and on a serving process's path (no read: see useReadModel).
 * Needs `npm run services:up`; throws when PostgreSQL or Kafka is unreachable.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Kafka, logLevel } from 'kafkajs';
import pg from 'pg';
import { CatalogueReader } from '#app/catalogue-reader';
import { CommandHandler, type PublishOutcome } from '#app/command-handler';
import { createPostgresEventStore } from '#store/postgres-event-store';
import type { ToolDefinition } from '#domain/types';
import { percentile, type BenchRow } from './lib.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const PG = process.env.ESTATE_TEST_PG ?? 'postgres://postgres@127.0.0.1:5432/estate_test';
const BROKERS = (process.env.ESTATE_TEST_KAFKA ?? '127.0.0.1:9092').split(',');
const LATENCY_N = Number(process.env.BENCH_BUS_PUBLISHES ?? 500);
const THROUGHPUT_N = Number(process.env.BENCH_BUS_THROUGHPUT ?? 500);
const META = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };

/** In the `test` namespace: the replicas serve only versions whose handler (`test.echo`) is in the tool's namespace. */
const definition = (name: string): ToolDefinition => ({
  name,
  version: '1.0.0',
  title: 'Bench tool',
  description: 'A tool published by the bus benchmark.',
  inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'], additionalProperties: false },
  access: { requiredScopes: [], tenants: [], classification: 'public' },
  sideEffect: 'none',
  handler: 'test.echo',
  timeoutMs: 30_000,
});

const kafka = () => new Kafka({ clientId: 'estate-bench', brokers: BROKERS, logLevel: logLevel.NOTHING, connectionTimeout: 2000, retry: { retries: 2 } });

const reachable = async (): Promise<void> => {
  const client = new pg.Client({ connectionString: PG, connectionTimeoutMillis: 3000 });
  try {
    await client.connect();
  } catch (e) {
    throw new Error(`bus bench needs PostgreSQL at ${PG} (${e instanceof Error ? e.message : String(e)}); run npm run services:up`);
  } finally {
    await client.end().catch(() => undefined);
  }
  const admin = kafka().admin();
  try {
    await admin.connect();
    await admin.listTopics();
  } catch (e) {
    throw new Error(`bus bench needs Kafka at ${BROKERS.join(',')} (${e instanceof Error ? e.message : String(e)}); run npm run services:up`);
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
};

const sql = async (url: string, text: string): Promise<void> => {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    await c.query(text);
  } finally {
    await c.end();
  }
};

/** BENCH_CPU_PROF=<dir>: each replica writes a V8 CPU profile there when it stops (read with bench/cpuprofile-summary.ts). */
const PROFILE_DIR = process.env.BENCH_CPU_PROF;
const profileFlags = PROFILE_DIR ? ['--cpu-prof', `--cpu-prof-dir=${PROFILE_DIR}`] : [];

const serve = (args: string[], env: NodeJS.ProcessEnv): Promise<{ child: ChildProcess; url: string }> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...profileFlags, join(ROOT, 'bin', 'estate.js'), 'serve', '--http', '--port', '0', ...args], {
      cwd: ROOT,
      env: { ...process.env, ESTATE_LOG_LEVEL: 'info', ...env },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let buf = '';
    const timer = setTimeout(() => reject(new Error('estate serve did not become ready in 60 s')), 60_000);
    child.stderr?.on('data', (c: Buffer) => {
      buf += c.toString();
      let nl: number;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        try {
          const l = JSON.parse(line) as { msg?: string; url?: string };
          if (l.msg === 'estate serve ready' && l.url) {
            clearTimeout(timer);
            resolve({ child, url: l.url });
          }
        } catch {
          // not a log line
        }
      }
    });
    child.once('exit', (code) => reject(new Error(`estate serve exited (${String(code)}) before ready`)));
  });

/** Opens a listen stream; `next()` resolves at the next list_changed. */
const listen = async (url: string): Promise<{ next(): Promise<void>; close(): void }> => {
  const abort = new AbortController();
  const res = await fetch(url, {
    method: 'POST',
    signal: abort.signal,
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'subscriptions/listen' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 'bench', method: 'subscriptions/listen', params: { notifications: { toolsListChanged: true }, _meta: META } }),
  });
  if (!res.body) throw new Error(`listen: HTTP ${res.status}`);
  let pending = 0;
  const slot: { waiter: (() => void) | null } = { waiter: null };
  let acknowledged!: () => void;
  const ack = new Promise<void>((r) => (acknowledged = r));
  void (async () => {
    const decoder = new TextDecoder();
    let buf = '';
    try {
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        buf += decoder.decode(chunk, { stream: true });
        let end: number;
        while ((end = buf.indexOf('\n\n')) >= 0) {
          const event = buf.slice(0, end);
          buf = buf.slice(end + 2);
          if (event.includes('notifications/subscriptions/acknowledged')) acknowledged();
          if (!event.includes('notifications/tools/list_changed')) continue;
          const w = slot.waiter;
          slot.waiter = null;
          if (w) w();
          else pending++;
        }
      }
    } catch {
      // aborted
    }
  })();
  await ack;
  return {
    next: () =>
      pending > 0
        ? Promise.resolve(void pending--)
        : new Promise<void>((resolve, reject) => {
            const t = setTimeout(() => reject(new Error('no list_changed within 20 s')), 20_000);
            slot.waiter = () => {
              clearTimeout(t);
              resolve();
            };
          }),
    close: () => abort.abort(),
  };
};

/** One path of the latency rows, set up once: `sample(i)` is one publish (or produce) and the wait for its arrival, in ms. */
interface LatencyPath {
  sample(i: number): Promise<number>;
  close(): Promise<void>;
}

/** Estate's path: a publish on the store, two `estate serve` replicas on Kafka, a listen client on the second. */
const openReplicas = async (): Promise<LatencyPath> => {
  const database = `estate_bench_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
  const u = new URL(PG);
  u.pathname = `/${database}`;
  const storeUrl = u.toString();
  await sql(PG, `CREATE DATABASE ${database}`);
  const env = { ESTATE_TOPIC: `estate.bench.${randomUUID().slice(0, 8)}` };
  const args = ['--store', storeUrl, '--bus', `kafka://${BROKERS.join(',')}`, '--handlers', 'test/fixtures/handlers/test-handlers.ts'];
  const replicas: ChildProcess[] = [];
  const store = await createPostgresEventStore({ connectionString: storeUrl });
  let client: Awaited<ReturnType<typeof listen>> | undefined;
  const close = async (): Promise<void> => {
    client?.close();
    for (const r of replicas) r.kill('SIGTERM');
    await Promise.all(replicas.map((r) => new Promise((res) => (r.exitCode !== null ? res(null) : r.once('exit', res)))));
    await store.close();
    await sql(PG, `DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
  };
  try {
    replicas.push((await serve(args, env)).child);
    const b = await serve(args, env);
    replicas.push(b.child);
    const listening = await listen(b.url);
    client = listening;
    const commands = new CommandHandler({ store });
    return {
      async sample(i) {
        const t0 = performance.now();
        await commands.publish(definition(`test.latency.t${i}`), 'bench');
        await listening.next();
        return performance.now() - t0;
      },
      close,
    };
  } catch (e) {
    await close();
    throw e;
  }
};

/** The floor: a raw kafkajs produce (acks all, idempotent) and its consumption, one process, the consumer's settings. */
const openRawKafka = async (): Promise<LatencyPath> => {
  const k = kafka();
  const topic = `estate.bench.floor.${randomUUID().slice(0, 8)}`;
  const admin = k.admin();
  await admin.connect();
  await admin.createTopics({ waitForLeaders: true, topics: [{ topic, numPartitions: 3 }] });
  const groupId = `estate-bench-${randomUUID()}`;
  const consumer = k.consumer({ groupId, maxWaitTimeInMs: 50, minBytes: 1 });
  const producer = k.producer({ idempotent: true, maxInFlightRequests: 1 });
  const close = async (): Promise<void> => {
    await producer.disconnect();
    await consumer.disconnect();
    await admin.deleteGroups([groupId]).catch(() => undefined);
    await admin.deleteTopics({ topics: [topic] }).catch(() => undefined);
    await admin.disconnect();
  };
  try {
    await Promise.all([consumer.connect(), producer.connect()]);
    let waiter: (() => void) | null = null;
    const joined = new Promise<void>((r) => consumer.on(consumer.events.GROUP_JOIN, () => r()));
    await consumer.subscribe({ topic, fromBeginning: true });
    await consumer.run({
      eachMessage: () => {
        const w = waiter;
        waiter = null;
        w?.();
        return Promise.resolve();
      },
    });
    await joined;
    return {
      async sample(i) {
        const got = new Promise<void>((r) => (waiter = r));
        const t0 = performance.now();
        await producer.send({ topic, acks: -1, messages: [{ key: `bench.t${i}`, value: JSON.stringify({ i }) }] });
        await got;
        return performance.now() - t0;
      },
      close,
    };
  } catch (e) {
    await close();
    throw e;
  }
};

/**
 * The least a durable change needs before anyone can be told: a raw INSERT of one row into a table shaped like the
 * store's (the published definition as its jsonb, the bulk of the real event's data), committed (PostgreSQL syncs its
 * WAL), then the produce → consume of `kafkaPath`. No read, no guard, no relay, no replica: the floor under Estate's
 * path that the raw produce → consume alone leaves out (Kafka acknowledges from memory; a publish must not).
 */
const openRawCommitThenKafka = async (kafkaPath: LatencyPath): Promise<LatencyPath> => {
  const schema = `bench_commit_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
  const client = new pg.Client({ connectionString: PG });
  await client.connect();
  const close = async (): Promise<void> => {
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => undefined);
    await client.end();
  };
  try {
    await client.query(`CREATE SCHEMA "${schema}"`);
    await client.query(`CREATE TABLE "${schema}".events (seq bigserial PRIMARY KEY, stream_id text NOT NULL, revision bigint NOT NULL, type text NOT NULL, data jsonb NOT NULL, UNIQUE (stream_id, revision))`);
    return {
      async sample(i) {
        const d = definition(`test.floor.t${i}`);
        const t0 = performance.now();
        await client.query(`INSERT INTO "${schema}".events (stream_id, revision, type, data) VALUES ($1, 0, 'ToolVersionPublished', $2)`, [`tool-${d.name}`, JSON.stringify({ definition: d })]);
        return performance.now() - t0 + (await kafkaPath.sample(i));
      },
      close,
    };
  } catch (e) {
    await close();
    throw e;
  }
};

/** Samples of each path left out at the start: they warm the JIT and the relay's producer. */
const WARMUP = 10;

/**
 * The paths set up side by side, then sampled in turns (which one goes first rotates), so a slow spell of the machine
 * falls on all alike: a run of Estate's samples and then a run of the floor's put minutes between them, and the raw
 * p50 alone moved 6.0 -> 1.6 ms between runs two minutes apart.
 */
const latencies = async (): Promise<{ estate: number[]; floor: number[]; durable: number[] }> => {
  const floorPath = await openRawKafka();
  let estatePath: LatencyPath | undefined;
  let durablePath: LatencyPath | undefined;
  try {
    durablePath = await openRawCommitThenKafka(floorPath);
    estatePath = await openReplicas();
    const paths = [floorPath, estatePath, durablePath];
    const samples: number[][] = [[], [], []];
    for (let i = 0; i < LATENCY_N + WARMUP; i++) {
      for (let k = 0; k < paths.length; k++) {
        const which = (i + k) % paths.length;
        const ms = await (paths[which] as LatencyPath).sample(i);
        if (i >= WARMUP) (samples[which] as number[]).push(ms);
      }
    }
    const [floor, estate, durable] = samples as [number[], number[], number[]];
    return { estate, floor, durable };
  } finally {
    await estatePath?.close();
    await durablePath?.close();
    await floorPath.close();
  }
};

interface Throughput {
  /** A handler with no catalogue (a CLI publish): read the stream, guard, append. */
  estate: number;
  /** The serving process's path, a new tool: its catalogue does not know the tool, so no read. */
  serving: number;
  /** The serving process's path, the next version of a tool it published: its state is cached, so no read. */
  next: number;
  /** A raw INSERT of the same rows, interleaved with the three above. */
  raw: number;
  append: { one: number; tx: number; raw: number };
}

const publishThroughput = async (): Promise<Throughput> => {
  const schema = `bench_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
  const store = await createPostgresEventStore({ connectionString: PG, schema });
  const client = new pg.Client({ connectionString: PG });
  await client.connect();
  // The serving process: its catalogue caught up and tailing the store, as `estate serve` wires it.
  const reader = new CatalogueReader(store, { keepDetails: false });
  let following: { close(): Promise<void> } | undefined;
  try {
    const commands = new CommandHandler({ store });
    await commands.publish(definition('bench.warmup'), 'bench');
    await reader.catchUp();
    following = reader.follow();
    const serving = new CommandHandler({ store });
    serving.useReadModel((name) => reader.catalogue.tool(name) !== undefined);
    await client.query(`CREATE TABLE "${schema}".raw_publishes (stream_id text NOT NULL, revision bigint NOT NULL, type text NOT NULL, data jsonb NOT NULL, PRIMARY KEY (stream_id, revision))`);
    const rawInsert = async (streamId: string, revision: number, e: { type: string; data: unknown }): Promise<number> => {
      const t = performance.now();
      await client.query(`INSERT INTO "${schema}".raw_publishes (stream_id, revision, type, data) VALUES ($1, $2, $3, $4)`, [streamId, revision, e.type, JSON.stringify(e.data)]);
      return performance.now() - t;
    };
    // Row by row, each kind of publish followed by a raw INSERT of the event it appended: the machine's noise (this
    // disk's commit time swings 2x within minutes) falls on all alike.
    const ms = { estate: 0, serving: 0, next: 0, raw: 0 };
    // The catalogue's tail applies each publish after it commits; nothing is timed until it has, so that work (a
    // serving process's, not a publish's) is charged neither to the next publish nor to the raw INSERT.
    const applied = (name: string, version: string): Promise<void> =>
      new Promise((resolve, reject) => {
        const has = (): boolean => reader.catalogue.tool(name)?.versions.some((v) => v.version === version) ?? false;
        if (has()) return resolve();
        const timer = setTimeout(() => {
          off();
          reject(new Error(`bus bench: the catalogue's tail did not apply ${name}@${version} within 20 s`));
        }, 20_000);
        const off = reader.onUpdate(() => {
          if (!has()) return;
          clearTimeout(timer);
          off();
          resolve();
        });
      });
    const timed = async (key: 'estate' | 'serving' | 'next', d: ToolDefinition, publish: (d: ToolDefinition) => Promise<PublishOutcome>, revision: number): Promise<void> => {
      const t = performance.now();
      const out = await publish(d);
      ms[key] += performance.now() - t;
      if (out.result !== 'published') throw new Error(`bench publish ${d.name}@${d.version}: ${out.result}`);
      await applied(d.name, d.version);
      ms.raw += await rawInsert(`raw-${key}-${d.name}`, revision, out.events[0] as { type: string; data: unknown });
      await applied(d.name, d.version);
    };
    for (let i = 0; i < THROUGHPUT_N; i++) {
      await timed('estate', definition(`bench.tput.t${i}`), (d) => commands.publish(d, 'bench'), 0);
      await timed('serving', definition(`bench.tput.s${i}`), (d) => serving.publish(d, 'bench'), 0);
      await timed('next', { ...definition(`bench.tput.s${i}`), version: '1.0.1', description: 'The next version.' }, (d) => serving.publish(d, 'bench'), 1);
    }
    const rate = (total: number, n: number): number => n / (total / 1000);
    const rows = await store.readAll({ streamPrefix: 'tool-bench.tput.t', limit: THROUGHPUT_N });
    // The store's append alone, same rows, each checking its expected revision: the one-statement path and the
    // transactional one (BEGIN, head upsert, insert, COMMIT: what every append did before; forced by the test seam),
    // interleaved row by row with a raw INSERT into a second table, so the machine's noise falls on all three alike.
    await client.query(`CREATE TABLE "${schema}".raw_events2 (LIKE "${schema}".raw_publishes INCLUDING ALL)`);
    const txStore = await createPostgresEventStore({ connectionString: PG, schema, beforeCommit: () => Promise.resolve() });
    let appendMs = 0;
    let appendTxMs = 0;
    let rawMs = 0;
    try {
      for (const r of rows) {
        let t = performance.now();
        await store.append(`one-${r.streamId}`, [{ type: r.type, data: r.data }], { expectedRevision: 'no_stream' });
        appendMs += performance.now() - t;
        t = performance.now();
        await txStore.append(`tx-${r.streamId}`, [{ type: r.type, data: r.data }], { expectedRevision: 'no_stream' });
        appendTxMs += performance.now() - t;
        t = performance.now();
        await client.query(`INSERT INTO "${schema}".raw_events2 (stream_id, revision, type, data) VALUES ($1, $2, $3, $4)`, [r.streamId, r.revision, r.type, JSON.stringify(r.data)]);
        rawMs += performance.now() - t;
      }
    } finally {
      await txStore.close();
    }
    const append = { one: rate(appendMs, rows.length), tx: rate(appendTxMs, rows.length), raw: rate(rawMs, rows.length) };
    return { estate: rate(ms.estate, THROUGHPUT_N), serving: rate(ms.serving, THROUGHPUT_N), next: rate(ms.next, THROUGHPUT_N), raw: rate(ms.raw, 3 * THROUGHPUT_N), append };
  } finally {
    await following?.close();
    await store.close();
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await client.end();
  }
};

const round = (n: number, digits = 1): number => Math.round(n * 10 ** digits) / 10 ** digits;

export async function run(): Promise<BenchRow[]> {
  await reachable();
  const { estate, floor, durable } = await latencies();
  const tput = await publishThroughput();
  const shape = (xs: number[]): string => `${(percentile(xs, 99) / percentile(xs, 50)).toFixed(1)}x`;
  const notes = `${LATENCY_N} publishes, one at a time, taking turns with ${LATENCY_N} raw produce → consume and ${LATENCY_N} raw commits then produce → consume; two estate serve --http replicas, client on the one that did not publish`;
  const durableName = 'raw INSERT committed, then raw produce → consume';
  return [
    { bench: 'bus', case: 'publish → list_changed at a client of another replica, p50', unit: 'ms', estate: round(percentile(estate, 50)), peerName: 'raw kafkajs produce → consume', peer: round(percentile(floor, 50)), notes },
    // How heavy each tail is against its own median: a path far from the floor at p99 may be so at p50 already.
    { bench: 'bus', case: 'publish → list_changed at a client of another replica, p99', unit: 'ms', estate: round(percentile(estate, 99)), peerName: 'raw kafkajs produce → consume', peer: round(percentile(floor, 99)), notes: `${notes}; p99/p50: Estate ${shape(estate)}, raw ${shape(floor)}, durable floor ${shape(durable)}` },
    { bench: 'bus', case: 'publish → list_changed at a client of another replica, p50, vs a durable floor', unit: 'ms', estate: round(percentile(estate, 50)), peerName: durableName, peer: round(percentile(durable, 50)), notes: 'the same samples; the floor adds what any durable change pays before it is announced: one PostgreSQL commit' },
    { bench: 'bus', case: 'publish → list_changed at a client of another replica, p99, vs a durable floor', unit: 'ms', estate: round(percentile(estate, 99)), peerName: durableName, peer: round(percentile(durable, 99)), notes: 'the same samples; the floor adds what any durable change pays before it is announced: one PostgreSQL commit' },
    { bench: 'bus', case: 'publish throughput on PostgreSQL', unit: 'publishes/s', estate: round(tput.estate, 0), peerName: 'raw INSERT of the same rows, interleaved', peer: round(tput.raw, 0), notes: `${THROUGHPUT_N} publishes of new tools, sequential; Estate = read stream + guard + optimistic append (a handler with no catalogue: the CLI)` },
    { bench: 'bus', case: 'publish throughput on PostgreSQL, serving process, new tool', unit: 'publishes/s', estate: round(tput.serving, 0), peerName: 'raw INSERT of the same rows, interleaved', peer: round(tput.raw, 0), notes: `${THROUGHPUT_N} publishes; its catalogue (caught up, tailing the store) does not know the tool: guard on the empty state + append expecting no stream, no read` },
    { bench: 'bus', case: 'publish throughput on PostgreSQL, serving process, next version', unit: 'publishes/s', estate: round(tput.next, 0), peerName: 'raw INSERT of the same rows, interleaved', peer: round(tput.raw, 0), notes: `${THROUGHPUT_N} patch versions of tools it just published: classified against its cached state + append at that revision, no read` },
    { bench: 'bus', case: 'append throughput on PostgreSQL (one statement: check + append)', unit: 'appends/s', estate: round(tput.append.one, 0), peerName: 'raw INSERT of the same rows, interleaved', peer: round(tput.append.raw, 0), notes: `${THROUGHPUT_N} appends of the published events, sequential, expected revision no_stream; each row appended, then appended on the transactional path, then INSERTed raw` },
    { bench: 'bus', case: 'append throughput on PostgreSQL, transactional path (BEGIN/upsert/insert/COMMIT)', unit: 'appends/s', estate: round(tput.append.tx, 0), peerName: 'raw INSERT of the same rows, interleaved', peer: round(tput.append.raw, 0), notes: 'the append before the one-statement path; still taken on a conflict, a repeated stream or an empty request' },
  ];
}
