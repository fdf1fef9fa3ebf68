/**
 * `estate/client`'s tools cache around the official SDK v2 Client, against a real `estate serve --http`, on both
 * revision families. Requests are counted AT THE SERVER's door (a counting reverse proxy in front of it), so a cache hit
 * is proven to make no round trip. Invalidation: list_changed (2025), subscriptions/listen (2026), ttlMs expiry
 * (2026; a test clock past the server's ttlMs), and a change message relayed by `estate serve --bus kafka://` through the
 * real broker to `estate/changes`' consumer.
 */
import { Client, StreamableHTTPClientTransport, type CallToolResult } from '@modelcontextprotocol/client';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Kafka, logLevel } from 'kafkajs';
import { consumeChanges, type CatalogueChange, type ChangeConsumer } from '#lib/changes';
import { createToolsCache, type ToolsCache } from '#lib/client';
import { makeTempStore, runCli, startHttpServer, type HttpServer, type TempStore } from './helpers.ts';
import { lookupV1, lookupV11, PRINCIPAL_FLAGS, statusTool } from './sdk-fixtures.ts';
import { probeKafka, produceRaw, testKafkaBrokers, uniqueTopic } from '../int/kafka-helpers.ts';

const FIXTURES = fileURLToPath(new URL('./sdk-fixtures.ts', import.meta.url));
const WAIT_MS = 15_000;

const within = <T>(p: Promise<T>, ms: number, what: string): Promise<T> =>
  Promise.race([p, new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`${what}: nothing within ${ms} ms`)), ms))]);

const publish = async (store: TempStore, def: Record<string, unknown>): Promise<void> => {
  const file = store.file(`${String(def.name)}@${String(def.version)}.json`, def);
  const r = await runCli(['publish', file, '--store', store.store, '--by', 'cache-e2e']);
  if (r.code !== 0) throw new Error(`publish ${file} failed (${String(r.code)}): ${r.stderr}`);
};

/** A reverse proxy that counts JSON-RPC requests by method before passing them (and streaming answers) through. */
const countingProxy = async (target: string): Promise<{ url: string; count: (method: string) => number; close: () => Promise<void> }> => {
  const counts = new Map<string, number>();
  const t = new URL(target);
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      try {
        const msg = JSON.parse(body.toString('utf8')) as { method?: string } | { method?: string }[];
        for (const m of Array.isArray(msg) ? msg : [msg]) if (typeof m.method === 'string') counts.set(m.method, (counts.get(m.method) ?? 0) + 1);
      } catch {
        // not JSON (a GET or DELETE): not counted
      }
      const up = request({ host: t.hostname, port: t.port, path: t.pathname + t.search, method: req.method, headers: { ...req.headers, host: t.host } }, (upRes) => {
        res.writeHead(upRes.statusCode ?? 502, upRes.headers);
        upRes.pipe(res);
      });
      up.on('error', () => res.destroy());
      res.on('close', () => up.destroy());
      up.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}${t.pathname}`,
    count: (method) => counts.get(method) ?? 0,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
};

const versionOf = (r: CallToolResult): unknown => r._meta?.['io.estate/version'];

for (const revision of ['2026-07-28', '2025-11-25'] as const) {
  describe(`tools cache at ${revision} against estate serve --http`, () => {
    let store: TempStore;
    let http: HttpServer;
    let proxy: Awaited<ReturnType<typeof countingProxy>>;
    let client: Client;
    let cache: ToolsCache;
    let clock = Date.now();
    let changed: () => Promise<void>;

    beforeAll(async () => {
      store = makeTempStore('estate-cache-');
      await publish(store, lookupV1);
      http = await startHttpServer(['--store', store.store, '--handlers', FIXTURES, ...PRINCIPAL_FLAGS], { env: { ESTATE_LOG_LEVEL: 'info' } });
      proxy = await countingProxy(http.url);
      client = new Client({ name: 'estate-cache-e2e', version: '1.0.0' }, revision === '2026-07-28' ? { versionNegotiation: { mode: { pin: '2026-07-28' } } } : {});
      await client.connect(new StreamableHTTPClientTransport(new URL(proxy.url)));
      let waiters: (() => void)[] = [];
      cache = createToolsCache(client, { now: () => clock, onListChanged: () => { for (const w of waiters) w(); waiters = []; } });
      changed = () => within(new Promise<void>((resolve) => waiters.push(resolve)), WAIT_MS, 'list change');
    }, 90_000);

    afterAll(async () => {
      await cache?.close();
      await client?.close().catch(() => undefined);
      await proxy?.close();
      await http?.stop();
      store?.cleanup();
    });

    it('a second list() is a hit: no tools/list reaches the server', async () => {
      expect(client.getNegotiatedProtocolVersion()).toBe(revision);
      const first = await cache.list();
      expect(first.map((t) => `${t.name}@${String(t._meta?.['io.estate/version'])}`)).toEqual(['payments.lookup@1.0.0']);
      const before = proxy.count('tools/list');
      expect(before).toBe(1);
      for (let i = 0; i < 5; i += 1) expect(await cache.list()).toBe(first);
      expect(proxy.count('tools/list')).toBe(before);
      expect(cache.stats()).toMatchObject({ hits: 5, misses: 1, invalidations: 0 });
    });

    it('a pinned call keeps calling the listed version after a newer one is published, until list() refreshes', async () => {
      const wait = changed();
      await publish(store, lookupV11);
      await wait; // the server said the list changed: the held list is now invalid ...
      const source = revision === '2026-07-28' ? 'listen' : 'list_changed';
      expect(cache.stats().invalidationsBySource[source]).toBe(1);
      // ... but a call still runs exactly what the run was shown.
      const pinned = await cache.call('payments.lookup', { reference: 'PMT-101' });
      expect(pinned.isError ?? false).toBe(false);
      expect(versionOf(pinned)).toBe('1.0.0');
      const lists = proxy.count('tools/list');
      const fresh = await cache.list();
      expect(proxy.count('tools/list')).toBe(lists + 1);
      expect(fresh.find((t) => t.name === 'payments.lookup')?._meta?.['io.estate/version']).toBe('1.1.0');
      expect(versionOf(await cache.call('payments.lookup', { reference: 'PMT-102' }))).toBe('1.1.0');
    }, 40_000);

    it(`invalidates on ${revision === '2026-07-28' ? 'a subscriptions/listen event' : 'notifications/tools/list_changed'} and lists the new tool`, async () => {
      await cache.list();
      const wait = changed();
      await publish(store, statusTool);
      await wait;
      const names = (await cache.list()).map((t) => t.name);
      expect(names).toEqual(['payments.lookup', 'payments.status']);
    }, 40_000);

    it('options.ttlMs bounds a held list on this revision too', async () => {
      let own = 0;
      // A proxy of its own: only this client's requests are counted, whatever the suite's other client does meanwhile.
      const door = await countingProxy(http.url);
      const second = new Client({ name: 'estate-cache-ttl', version: '1.0.0' }, revision === '2026-07-28' ? { versionNegotiation: { mode: { pin: '2026-07-28' } } } : {});
      await second.connect(new StreamableHTTPClientTransport(new URL(door.url)));
      const bounded = createToolsCache(second, { ttlMs: 1000, listen: false, now: () => own });
      try {
        await bounded.list();
        expect(door.count('tools/list')).toBe(1);
        own += 999;
        await bounded.list();
        expect(door.count('tools/list')).toBe(1);
        own += 2;
        await bounded.list();
        expect(door.count('tools/list')).toBe(2);
        expect(bounded.stats()).toMatchObject({ hits: 1, misses: 2, invalidationsBySource: { ttl: 1 } });
      } finally {
        await bounded.close();
        await second.close().catch(() => undefined);
        await door.close();
      }
    });

    if (revision === '2026-07-28') {
      it("expires after the server's ttlMs", async () => {
        await cache.list();
        const lists = proxy.count('tools/list');
        clock += 59_000; // within ESTATE_LIST_TTL_MS (60 s): still a hit
        await cache.list();
        expect(proxy.count('tools/list')).toBe(lists);
        clock += 2_000; // past it: a miss
        await cache.list();
        expect(proxy.count('tools/list')).toBe(lists + 1);
        expect(cache.stats().invalidationsBySource.ttl).toBe(1);
      });
    }
  });
}

describe('tools cache invalidated by a change message on the real Kafka broker', async () => {
  const brokers = testKafkaBrokers();
  const down = await probeKafka(brokers);
  if (down !== null && process.env.CI !== 'true') {
    it.skip(`needs Kafka at ${brokers.join(',')} (${down})`, () => undefined);
    return;
  }
  let store: TempStore;
  let http: HttpServer;
  let client: Client;
  let feed: ChangeConsumer;
  let cache: ToolsCache;
  const topic = uniqueTopic('cache');
  const malformed: string[] = [];

  beforeAll(async () => {
    store = makeTempStore('estate-cache-kafka-');
    await publish(store, lookupV1);
    // The server relays catalogue changes to the topic (--bus kafka://): the change message comes from Estate itself.
    http = await startHttpServer(['--store', store.store, '--bus', `kafka://${brokers.join(',')}`, '--handlers', FIXTURES, ...PRINCIPAL_FLAGS], {
      env: { ESTATE_LOG_LEVEL: 'info', ESTATE_TOPIC: topic },
    });
    client = new Client({ name: 'estate-cache-kafka', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
    await client.connect(new StreamableHTTPClientTransport(new URL(http.url)));
    // A malformed message first (it also creates the topic): the consumer must report it and keep going.
    await produceRaw(brokers, topic, [{ key: 'payments.lookup', value: '{"type":"catalogue.changed","tool":"payments.lookup"}' }]);
    feed = consumeChanges({ brokers, topic, fromBeginning: true, onMalformed: (e) => malformed.push(e.message) });
    // The relay also sends 1.0.0's publication; let it arrive before the cache lists, so it cannot count below.
    const v1 = new Promise<void>((resolve) => {
      const off = feed.subscribe((c) => {
        if (c.tool === 'payments.lookup' && c.version === '1.0.0') {
          off();
          resolve();
        }
      });
    });
    await within(feed.ready, 30_000, 'consumer ready');
    await within(v1, 30_000, "the relayed 1.0.0 change");
    // listen: false, so only the change feed can invalidate here.
    cache = createToolsCache(client, { listen: false, changes: feed });
  }, 90_000);

  afterAll(async () => {
    await cache?.close();
    await feed?.stop();
    await client?.close().catch(() => undefined);
    await http?.stop();
    store?.cleanup();
  });

  it('a change for a listed tool invalidates; a malformed message is skipped with a clear reason; a redelivery is deduplicated', async () => {
    await cache.list();
    await cache.list();
    expect(cache.stats()).toMatchObject({ hits: 1, misses: 1, invalidations: 0 });
    const relayed = new Promise<CatalogueChange>((resolve) => {
      const off = feed.subscribe((c) => {
        if (c.tool !== 'payments.lookup' || c.version !== '1.1.0') return;
        off();
        resolve(c);
      });
    });
    await publish(store, lookupV11);
    const change = await within(relayed, 30_000, 'the relayed change message');
    expect(change).toMatchObject({ type: 'catalogue.changed', tool: 'payments.lookup', version: '1.1.0', event: 'ToolVersionPublished' });
    expect(cache.stats().invalidationsBySource.change_feed).toBe(1);
    expect(malformed).toEqual(['malformed change message: position: Invalid input: expected string, received undefined']);
    const fresh = await cache.list();
    expect(cache.stats()).toMatchObject({ misses: 2 });
    expect(fresh.find((t) => t.name === 'payments.lookup')?._meta?.['io.estate/version']).toBe('1.1.0');
    // A redelivery of the same position (at least once): not delivered again, and nothing more is invalidated.
    const delivered = feed.stats().delivered;
    await produceRaw(brokers, topic, [{ key: change.tool, value: JSON.stringify(change) }]);
    await within((async () => { while (feed.stats().duplicates < 1) await new Promise((r) => setTimeout(r, 20)); })(), 30_000, 'redelivery');
    expect(feed.stats()).toMatchObject({ delivered, duplicates: 1, malformed: 1 });
    expect(cache.stats().invalidationsBySource.change_feed).toBe(1);
  }, 90_000);

  it('stop() leaves no consumer group behind of the one it made up', async () => {
    const admin = new Kafka({ clientId: 'estate-test-groups', brokers, logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
    try {
      const ours = async () => (await admin.listGroups()).groups.map((g) => g.groupId).filter((id) => id.startsWith(`estate-changes-${process.pid}-`));
      expect(await ours()).toHaveLength(1);
      await feed.stop();
      expect(await ours()).toEqual([]);
    } finally {
      await admin.disconnect();
    }
  }, 60_000);
});
