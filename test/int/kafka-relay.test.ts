/**
 * The relay against the real PostgreSQL and the real Kafka broker: the message of SPEC §4 (one per catalogue event,
 * key = tool name), order per tool, the checkpoint in the event store written only after Kafka acknowledged, the
 * lease (one active candidate; a survivor takes over from a SIGKILLed one) and a relay killed mid-batch (no change
 * lost; duplicates only for the batch that was acknowledged but not checkpointed).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CommandHandler } from '#app/command-handler';
import type { EventStore } from '#app/ports';
import { relayStream, startRelay } from '#app/relay';
import { KafkaChangePublisher } from '#bus/kafka-change-bus';
import { createPostgresEventStore } from '#store/postgres-event-store';
import { aDefinition } from '../fixtures/builders.ts';
import { readTopic, readTopicUntil, requireServices, uniqueTopic, type TopicMessage } from './kafka-helpers.ts';
import { dropSchema, uniqueSchema } from './pg-helpers.ts';

const services = await requireServices('relay on PostgreSQL + Kafka');
const WORKER = fileURLToPath(new URL('./kafka-relay-worker.ts', import.meta.url));

const waitFor = async (what: string, check: () => boolean | Promise<boolean>, timeoutMs = 30_000): Promise<void> => {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
};

const toolPositions = async (store: EventStore): Promise<string[]> =>
  (await store.readAll({ streamPrefix: 'tool-', limit: 100_000 })).map((e) => e.position);

const positionsOf = (msgs: TopicMessage[]): string[] => msgs.map((m) => (JSON.parse(m.value) as { position: string }).position);

interface Worker {
  child: ChildProcess;
  lines: Record<string, unknown>[];
  exited: Promise<void>;
}

const startWorker = (args: string[]): Worker => {
  const child = spawn(process.execPath, ['--import', 'tsx', WORKER, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
  const lines: Record<string, unknown>[] = [];
  let buf = '';
  child.stdout?.on('data', (c: Buffer) => {
    buf += c.toString();
    let nl: number;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      try {
        lines.push(JSON.parse(line) as Record<string, unknown>);
      } catch {
        // not ours
      }
    }
  });
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  return { child, lines, exited };
};

/**
 * Each time the worker may believe it holds the lease, on CLOCK_MONOTONIC: from just before each successful append of
 * its lease state for the TTL, cut short where it released the lease (see kafka-relay-worker.ts).
 */
const heldIntervals = (w: Worker): [number, number][] => {
  const out: [number, number][] = [];
  for (const l of w.lines) {
    if (Array.isArray(l.held)) out.push([Number(l.held[0]), Number(l.held[1])]);
    else if (typeof l.released === 'number') for (const i of out) i[1] = Math.min(i[1], l.released);
  }
  return out;
};
const latestHold = (w: Worker): number => Math.max(-Infinity, ...heldIntervals(w).map(([from]) => from));
/** Every pair of intervals, one from each list, that share a moment. */
const overlaps = (xs: [number, number][], ys: [number, number][]): string[] =>
  xs.flatMap(([a0, a1]) => ys.filter(([b0, b1]) => a0 < b1 && b0 < a1).map(([b0, b1]) => `[${a0}, ${a1}) and [${b0}, ${b1})`));

if (services) {
  describe('relay on PostgreSQL + Kafka', () => {
    const { pgUrl, brokers } = services;
    const schema = uniqueSchema('relay');
    let store: EventStore;
    let commands: CommandHandler;
    const workers: Worker[] = [];

    beforeAll(async () => {
      store = await createPostgresEventStore({ connectionString: pgUrl, schema, pollIntervalMs: 20 });
      commands = new CommandHandler({ store });
    });
    afterAll(async () => {
      for (const w of workers) w.child.kill('SIGKILL');
      await store?.close();
      await dropSchema(pgUrl, schema);
    });

    it('one SPEC §4 message per catalogue event, keyed by tool, in order per tool; the checkpoint follows the ack', async () => {
      const topic = uniqueTopic('relay-shape');
      await commands.publish(aDefinition({ name: 'shape.alpha', version: '1.0.0' }), 'test');
      await commands.publish(aDefinition({ name: 'shape.beta', version: '1.0.0' }), 'test');
      await commands.publish(aDefinition({ name: 'shape.alpha', version: '1.0.1', description: 'Clarified.' }), 'test');
      await commands.deprecate('shape.alpha', '1.0.0', 'superseded', 'test');
      await commands.retire('shape.beta', '1.0.0', 'gone', 'test');
      const all = await store.readAll({ streamPrefix: 'tool-shape.', limit: 1000 });
      expect(all).toHaveLength(5);

      const acked: string[] = [];
      const relay = startRelay({
        store,
        publisher: new KafkaChangePublisher({ brokers, topic }),
        topic,
        holder: 'shape-1',
        ttlMs: 5000,
        onPublished: (cs) => acked.push(...cs.map((c) => c.position)),
      });
      const everything = await toolPositions(store);
      await waitFor('the relay to publish everything', () => acked.length >= everything.length);
      await relay.close();

      const msgs = await readTopic(brokers, topic);
      expect(msgs).toHaveLength(everything.length);
      const ours = msgs.filter((m) => m.key?.startsWith('shape.'));
      for (const m of ours) {
        const body = JSON.parse(m.value) as Record<string, unknown>;
        expect(Object.keys(body)).toEqual(['type', 'position', 'tool', 'version', 'event', 'at']);
        expect(body.type).toBe('catalogue.changed');
        expect(body.tool).toBe(m.key);
        expect(new Date(String(body.at)).toISOString()).toBe(body.at);
      }
      const expected = all.map((e) => {
        const d = e.data as { definition?: { name: string; version: string }; name?: string; version?: string };
        return { position: e.position, tool: d.definition?.name ?? d.name, version: d.definition?.version ?? d.version, event: e.type };
      });
      const got = ours.map((m) => {
        const b = JSON.parse(m.value) as Record<string, unknown>;
        return { position: b.position, tool: b.tool, version: b.version, event: b.event };
      });
      expect([...got].sort((a, b) => String(a.position).localeCompare(String(b.position)))).toEqual(
        [...expected].sort((a, b) => a.position.localeCompare(b.position)),
      );
      // Order per tool: within a key's partition, offsets follow the store's order of that tool's stream.
      for (const tool of ['shape.alpha', 'shape.beta']) {
        const onTopic = ours.filter((m) => m.key === tool).sort((a, b) => Number(a.offset) - Number(b.offset));
        expect(new Set(onTopic.map((m) => m.partition)).size).toBe(1);
        expect(positionsOf(onTopic)).toEqual(expected.filter((e) => e.tool === tool).map((e) => e.position));
      }
      const checkpoint = (await store.readStream(relayStream(topic))).at(-1)?.data as { position: string };
      expect(checkpoint.position).toBe(everything.at(-1));

      // A new relay resumes from the stored checkpoint: only what is new goes out.
      await commands.publish(aDefinition({ name: 'shape.gamma', version: '1.0.0' }), 'test');
      const again: string[] = [];
      const relay2 = startRelay({ store, publisher: new KafkaChangePublisher({ brokers, topic }), topic, holder: 'shape-2', ttlMs: 5000, onPublished: (cs) => again.push(...cs.map((c) => c.tool)) });
      await waitFor('the second relay to publish', () => again.length >= 1);
      await relay2.close();
      expect(again).toEqual(['shape.gamma']);
      expect(await readTopic(brokers, topic)).toHaveLength(everything.length + 1);
    });

    it('two candidates: never both holding the lease at once; when the holder is SIGKILLed the other takes over and nothing is lost', async () => {
      const topic = uniqueTopic('relay-lease');
      const ttl = '1500';
      const a = startWorker([pgUrl, schema, brokers.join(','), topic, 'cand-a', ttl, '100']);
      const b = startWorker([pgUrl, schema, brokers.join(','), topic, 'cand-b', ttl, '100']);
      workers.push(a, b);
      // Several renewals with both running (a takeover is legitimate if the machine stalls the holder past its TTL).
      await waitFor('ten lease appends', () => heldIntervals(a).length + heldIntervals(b).length >= 10);
      const [leader, other] = latestHold(a) > latestHold(b) ? [a, b] : [b, a];

      leader.child.kill('SIGKILL');
      await leader.exited;
      const leaderHolds = heldIntervals(leader).length;
      await commands.publish(aDefinition({ name: 'lease.after-kill', version: '1.0.0' }), 'test');
      await waitFor('the survivor to take over', () => latestHold(other) > latestHold(leader));
      const everything = await toolPositions(store);
      const msgs = await readTopicUntil(brokers, topic, (m) => new Set(positionsOf(m)).size >= everything.length);
      expect(new Set(positionsOf(msgs))).toEqual(new Set(everything));
      other.child.kill('SIGTERM');
      await other.exited;

      // The lease's property, on the machine's monotonic clock: no moment at which both believed they held it.
      expect(heldIntervals(leader)).toHaveLength(leaderHolds);
      expect(overlaps(heldIntervals(a), heldIntervals(b))).toEqual([]);
      expect(other.lines.some((l) => 'released' in l)).toBe(true);
    });

    it('with the default lease (3 s), a SIGKILLed holder is replaced and its changes reach Kafka; the takeover time is printed', async () => {
      const topic = uniqueTopic('relay-failover');
      const ttl = '3000';
      const a = startWorker([pgUrl, schema, brokers.join(','), topic, 'fail-a', ttl, '100']);
      const b = startWorker([pgUrl, schema, brokers.join(','), topic, 'fail-b', ttl, '100']);
      workers.push(a, b);
      await waitFor('a first lease append', () => heldIntervals(a).length + heldIntervals(b).length >= 2);
      const [leader, other] = latestHold(a) > latestHold(b) ? [a, b] : [b, a];
      // hrtime is CLOCK_MONOTONIC, the clock the workers print their holds on.
      const killedAt = Number(process.hrtime.bigint()) / 1e6;
      leader.child.kill('SIGKILL');
      await leader.exited;
      await commands.publish(aDefinition({ name: 'failover.after-kill', version: '1.0.0' }), 'test');
      await waitFor('the survivor to take over', () => heldIntervals(other).some(([from]) => from > killedAt));
      const takeover = Math.min(...heldIntervals(other).map(([from]) => from).filter((from) => from > killedAt)) - killedAt;
      const positions = await toolPositions(store);
      const msgs = await readTopicUntil(brokers, topic, (m) => new Set(positionsOf(m)).size >= positions.length);
      const deliveredAt = Number(process.hrtime.bigint()) / 1e6 - killedAt;
      // Measured, not asserted (timings on a shared machine are not a test): SPEC target under 5 s.
      console.log(`relay failover: lease taken ${Math.round(takeover)} ms after SIGKILL; all changes read back from Kafka ${Math.round(deliveredAt)} ms after it`);
      expect(new Set(positionsOf(msgs))).toEqual(new Set(positions));
      expect(overlaps(heldIntervals(a), heldIntervals(b))).toEqual([]);
      other.child.kill('SIGTERM');
      await other.exited;
    });

    it('a relay SIGKILLed after Kafka acknowledged a batch but before its checkpoint loses nothing', async () => {
      const topic = uniqueTopic('relay-midbatch');
      for (let i = 0; i < 25; i++) await commands.publish(aDefinition({ name: `midbatch.t${String(i).padStart(2, '0')}`, version: '1.0.0' }), 'test');
      const everything = await toolPositions(store);
      const batch = 10;
      // Dies right after the ack of its 2nd batch: batch 1 is checkpointed, batch 2 is on the topic but not recorded.
      const dying = startWorker([pgUrl, schema, brokers.join(','), topic, 'dying', '1000', String(batch), '2']);
      workers.push(dying);
      await dying.exited;
      expect(dying.child.signalCode).toBe('SIGKILL');
      const checkpoint = (await store.readStream(relayStream(topic))).at(-1)?.data as { position: string };
      expect(checkpoint.position).toBe(everything[batch - 1]);

      const next = startWorker([pgUrl, schema, brokers.join(','), topic, 'next', '1000', String(batch)]);
      workers.push(next);
      await waitFor('the next relay to reach the end', async () => {
        const last = (await store.readStream(relayStream(topic))).at(-1)?.data as { position: string } | undefined;
        return last?.position === everything.at(-1);
      });
      next.child.kill('SIGTERM');
      await next.exited;

      const msgs = positionsOf(await readTopic(brokers, topic));
      expect(new Set(msgs)).toEqual(new Set(everything));
      const counts = new Map<string, number>();
      for (const p of msgs) counts.set(p, (counts.get(p) ?? 0) + 1);
      const duplicated = [...counts].filter(([, n]) => n > 1).map(([p]) => p);
      // At least once: only the acknowledged-but-unrecorded batch may appear twice.
      expect(duplicated.every((p) => everything.slice(batch, 2 * batch).includes(p))).toBe(true);
      expect(msgs.length).toBe(everything.length + duplicated.length);
    });
  });
}
