/**
 * No side effect without a trace (SPEC §4), against the real engines: a store that cannot take a non_idempotent call's
 * intent refuses the call before its handler runs; a call whose record cannot be written answers -32050 with
 * `data: {retryable: true, ran}`, never a bare -32603; a started call without an outcome is visible as such.
 * Faults: SQLite on a full disk (a tiny tmpfs, needs root), PostgreSQL made unreachable (its connections cut by a TCP
 * proxy that then stops listening).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { readRunStreams } from '#app/call-recorder';
import type { EventStore } from '#app/ports';
import type { ToolCallStarted, ToolCalled } from '#domain/events';
import type { HandlerMap } from '#handlers/types';
import { createPostgresEventStore } from '#store/postgres-event-store';
import { createSqliteEventStore } from '#store/sqlite-event-store';
import { runCalls } from '#projections/calls';
import { decodeToolCallStarted, decodeToolCalled } from '#app/event-codec';
import { catalogueCaughtUp, opsRoutes } from '#ops/http-routes';
import { createStoreHealth } from '#ops/store-health';
import { aDefinition } from '../fixtures/builders.ts';
import { errorOf, makeHarness, resultOf } from '../fixtures/handlers/harness.ts';
import { untilReadable } from '../fixtures/readable.ts';
import { dropSchema, requirePostgres, uniqueSchema } from './pg-helpers.ts';

const OBJ = { type: 'object' } as never;
const defs = [
  aDefinition({ name: 'payments.send', handler: 'payments.send', sideEffect: 'non_idempotent', inputSchema: OBJ, access: { classification: 'public' } }),
  aDefinition({ name: 'payments.lookup', handler: 'payments.lookup', sideEffect: 'idempotent', inputSchema: OBJ, access: { classification: 'public' } }),
];

const counting = () => {
  const runs = { send: 0, lookup: 0 };
  const handlers: HandlerMap = {
    'payments.send': () => (runs.send++, { content: [{ type: 'text', text: 'sent' }] }),
    'payments.lookup': () => (runs.lookup++, { content: [{ type: 'text', text: 'found' }] }),
  };
  return { runs, handlers };
};

const call = (name: string, runId: string) => ({ name, arguments: {}, _meta: { 'io.estate/runId': runId } });

const runView = async (store: EventStore, runId: string) =>
  (await readRunStreams(store, runId)).flatMap((stored) =>
    runCalls(stored.flatMap((s): (ToolCalled | ToolCallStarted)[] => (s.type === 'ToolCalled' ? [decodeToolCalled(s)] : s.type === 'ToolCallStarted' ? [decodeToolCallStarted(s)] : []))),
  );

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()?.();
});

const isRoot = process.getuid?.() === 0;

describe.skipIf(!isRoot)('SQLite on a full disk (tmpfs)', () => {
  it('refuses a non_idempotent call before its handler runs, and says ran:true when only the record failed', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'estate-full-'));
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', dir]);
    cleanups.push(() => {
      execFileSync('umount', ['-l', dir]);
      rmSync(dir, { recursive: true, force: true });
    });
    const store = createSqliteEventStore({ path: join(dir, 'estate.db') });
    cleanups.push(() => store.close());
    const { runs, handlers } = counting();
    const h = await makeHarness(defs, handlers, { store });
    const s = h.session();
    await s.initialize();
    expect(resultOf(await s.request('tools/call', call('payments.send', 'before')))).toMatchObject({ content: [{ text: 'sent' }] });
    expect(runs.send).toBe(1);

    // Fill what is left of the disk.
    const filler = join(dir, 'filler');
    for (let n = 1; ; n++) {
      try {
        writeFileSync(join(dir, `filler-${n}`), Buffer.alloc(16 * 1024));
      } catch {
        break;
      }
    }
    const refused = errorOf(await s.request('tools/call', call('payments.send', 'full')));
    expect(refused).toMatchObject({ code: -32050, data: { retryable: true, ran: false } });
    expect(refused.message).toMatch(/^Store unavailable: the call was refused before the tool ran/);
    expect(runs.send).toBe(1); // the handler never ran

    const lost = errorOf(await s.request('tools/call', call('payments.lookup', 'full')));
    expect(lost).toMatchObject({ code: -32050, data: { retryable: true, ran: true } });
    expect(runs.lookup).toBe(1);

    // Space back: the same calls succeed and are on record.
    execFileSync('sh', ['-c', `rm -f ${dir}/filler-*`]);
    void filler;
    expect(resultOf(await s.request('tools/call', call('payments.send', 'after')))).toMatchObject({ content: [{ text: 'sent' }] });
    const after = await runView(store, 'after');
    expect(after.map((c) => c.outcome)).toEqual(['ok']);
    expect(await runView(store, 'full')).toEqual([]);
  });
});

/** A TCP proxy in front of PostgreSQL that a test can cut: every connection dropped, then nothing listening. */
const cuttableProxy = async (target: URL): Promise<{ url: string; cut(): Promise<void>; restore(): Promise<void> }> => {
  const sockets = new Set<Socket>();
  let server: Server;
  let port = 0;
  const listen = () =>
    new Promise<void>((resolve) => {
      server = createServer((client) => {
        const upstream = connect(Number(target.port || 5432), target.hostname);
        sockets.add(client).add(upstream);
        client.pipe(upstream).pipe(client);
        const drop = () => (client.destroy(), upstream.destroy(), sockets.delete(client), sockets.delete(upstream));
        client.on('error', drop).on('close', drop);
        upstream.on('error', drop).on('close', drop);
      });
      server.listen(port, '127.0.0.1', () => {
        port = (server.address() as { port: number }).port;
        resolve();
      });
    });
  await listen();
  const proxied = new URL(target);
  proxied.hostname = '127.0.0.1';
  proxied.port = String(port);
  return {
    url: proxied.toString(),
    async cut() {
      await new Promise<void>((r) => {
        server.close(() => r());
        for (const s of sockets) s.destroy();
      });
    },
    restore: listen,
  };
};

const pgUrl = await requirePostgres('call intents on an unreachable PostgreSQL');
if (pgUrl) {
  describe('PostgreSQL made unreachable', () => {
    it('refuses non_idempotent calls before the handler runs, answers -32050 ran:true for the others, recovers after', async () => {
      const schema = uniqueSchema('intent');
      cleanups.push(() => dropSchema(pgUrl, schema));
      const proxy = await cuttableProxy(new URL(pgUrl));
      cleanups.push(() => proxy.cut());
      const store = await createPostgresEventStore({ connectionString: proxy.url, schema });
      cleanups.push(() => store.close());
      const { runs, handlers } = counting();
      const h = await makeHarness(defs, handlers, { store });
      const s = h.session();
      await s.initialize();
      expect(resultOf(await s.request('tools/call', call('payments.send', 'pg-before')))).toMatchObject({ content: [{ text: 'sent' }] });

      await proxy.cut();
      for (let i = 0; i < 5; i++) {
        const e = errorOf(await s.request('tools/call', call('payments.send', 'pg-down')));
        expect(e).toMatchObject({ code: -32050, data: { retryable: true, ran: false } });
        // The driver's words name the proxy's host and port: the caller is not told them.
        expect(e.message).toMatch(/^Store unavailable: the call was refused before the tool ran \(the store did not take the write; the server's log has the reason \(call [0-9a-f-]{36}\)\)$/);
      }
      expect(runs.send).toBe(1);
      const e = errorOf(await s.request('tools/call', call('payments.lookup', 'pg-down')));
      expect(e).toMatchObject({ code: -32050, data: { retryable: true, ran: true } });
      expect(e.code).not.toBe(-32603);

      await proxy.restore();
      expect(resultOf(await s.request('tools/call', call('payments.send', 'pg-after')))).toMatchObject({ content: [{ text: 'sent' }] });
      expect(runs.send).toBe(2);
      expect((await runView(store, 'pg-after')).map((c) => c.outcome)).toEqual(['ok']);
      expect(await runView(store, 'pg-down')).toEqual([]);
    });

    it('/readyz is 503 with a reason while the store is unreachable and 200 after; calls are refused meanwhile', async () => {
      const schema = uniqueSchema('ready');
      cleanups.push(() => dropSchema(pgUrl, schema));
      const proxy = await cuttableProxy(new URL(pgUrl));
      cleanups.push(() => proxy.cut());
      const store = await createPostgresEventStore({ connectionString: proxy.url, schema });
      cleanups.push(() => store.close());
      const health = createStoreHealth(proxy.url);
      cleanups.push(() => health.close());
      const { handlers } = counting();
      const h = await makeHarness(defs, handlers, { store });
      const routes = opsRoutes({ health, readModels: catalogueCaughtUp(store, h.reader) });
      expect(await routes('/readyz')).toEqual({ status: 200, body: { status: 'ready' } });
      expect(routes('/readyz/')).toBeNull();
      expect(routes('/metrics')).toBeNull();

      await proxy.cut();
      const down = await routes('/readyz');
      expect(down?.status).toBe(503);
      expect(down?.body).toMatchObject({ status: 'not ready', reasons: ['the PostgreSQL store is unreachable', expect.stringMatching(/^the catalogue read model cannot be compared/)] });
      expect(await routes('/healthz')).toEqual({ status: 200, body: { status: 'ok' } });

      await proxy.restore();
      expect(await routes('/readyz')).toEqual({ status: 200, body: { status: 'ready' } });
      // Behind the store: a publish the reader has not applied yet.
      const refund = await h.commands.publish(aDefinition({ name: 'payments.refund', handler: 'payments.refund', inputSchema: OBJ, access: { classification: 'public' } }), 'test');
      await untilReadable(store, refund.position!);
      expect((await routes('/readyz'))?.body).toMatchObject({ reasons: [expect.stringMatching(/^the catalogue read model is behind the store/)] });
      await h.reader.catchUp();
      expect((await routes('/readyz'))?.status).toBe(200);
    });

    it('a started call whose record could not be written shows as started, not as missing', async () => {
      const schema = uniqueSchema('intent');
      cleanups.push(() => dropSchema(pgUrl, schema));
      const store = await createPostgresEventStore({ connectionString: pgUrl, schema });
      cleanups.push(() => store.close());
      // The handler makes the record fail: the store loses the ability to write runs while the tool runs.
      let revoke = async () => undefined as unknown;
      const { runs } = counting();
      const handlers: HandlerMap = {
        'payments.send': async () => {
          runs.send++;
          await revoke();
          return { content: [{ type: 'text', text: 'sent' }] };
        },
        'payments.lookup': () => ({ content: [{ type: 'text', text: 'found' }] }),
      };
      const logged: Record<string, unknown>[] = [];
      const log = pino({ level: 'info' }, { write: (line: string) => void logged.push(JSON.parse(line) as Record<string, unknown>) });
      const h = await makeHarness(defs, handlers, { store, log });
      const pg = (await import('pg')).default;
      const admin = new pg.Client({ connectionString: pgUrl });
      await admin.connect();
      cleanups.push(() => admin.end());
      // A trigger that refuses ToolCalled rows (a real failed commit), installed while the handler runs.
      revoke = () =>
        admin.query(`
          CREATE FUNCTION "${schema}".refuse_outcome() RETURNS trigger LANGUAGE plpgsql AS $$
          BEGIN IF NEW.type = 'ToolCalled' THEN RAISE EXCEPTION 'disk full (simulated by trigger)'; END IF; RETURN NEW; END $$;
          CREATE TRIGGER refuse_outcome BEFORE INSERT ON "${schema}".events FOR EACH ROW EXECUTE FUNCTION "${schema}".refuse_outcome();`);
      const s = h.session();
      await s.initialize();
      const e = errorOf(await s.request('tools/call', call('payments.send', 'half')));
      expect(e).toMatchObject({ code: -32050, data: { retryable: true, ran: true } });
      expect(runs.send).toBe(1);
      const view = await runView(store, 'half');
      expect(view).toMatchObject([{ tool: 'payments.send', version: '1.0.0', outcome: 'started' }]);
      // The caller is given the call id to quote, not the store's words (which can name hosts, users, paths); the
      // server's log has those, with whose call it was.
      const callId = (view[0] as { callId: string }).callId;
      expect(e.message).toBe(`Store unavailable: the tool ran but its call record could not be written (the store did not take the write; the server's log has the reason (call ${callId}))`);
      expect(logged.filter((l) => l.callId === callId)).toMatchObject([
        { level: 50, runId: 'half', tenant: 'default', subject: 'anonymous', tool: 'payments.send', version: '1.0.0', ran: true, reason: expect.stringContaining('disk full (simulated by trigger)') },
      ]);
    });
  });
}
