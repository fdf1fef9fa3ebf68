/**
 * Tails woken by OTHER processes' appends, not by a short poll (issue 15): PostgreSQL LISTEN/NOTIFY, SQLite's WAL
 * watch. Each wake-up test sets the fallback poll to ten minutes, so an event that arrives within the test's timeout
 * can only have come through the wake-up; the lost-notification test does the opposite (the listener is killed and
 * does not come back within the test) and shows the fallback poll still delivers.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import type { EventStore, StoredEvent } from '#app/ports';
import { createPostgresEventStore, type PostgresEventStoreOptions } from '#store/postgres-event-store';
import { createAppendListener } from '#store/postgres-listener';
import { createSqliteEventStore } from '#store/sqlite-event-store';
import { dropSchema, requirePostgres, uniqueSchema } from './pg-helpers.ts';

const TEN_MINUTES = 600_000;
const WORKER_SCRIPT = fileURLToPath(new URL('./sqlite-append-worker.ts', import.meta.url));

/** Resolves with the first event delivered to a new subscription on `store` (from the beginning). */
const firstEvent = (store: EventStore): { received: Promise<StoredEvent>; close: () => Promise<void> } => {
  let resolve!: (e: StoredEvent) => void;
  const received = new Promise<StoredEvent>((r) => (resolve = r));
  const sub = store.subscribe({ onEvents: (events) => resolve(events[0]!) });
  return { received, close: () => sub.close() };
};

describe('SQLite: a tail in one process is woken by an append in another (WAL watch)', () => {
  const dirs: string[] = [];
  afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

  it('delivers the other process’s append although the fallback poll is ten minutes', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'estate-wake-'));
    dirs.push(dir);
    const path = join(dir, 'events.db');
    const store = createSqliteEventStore({ path, pollIntervalMs: TEN_MINUTES });
    const tail = firstEvent(store);
    const child = spawn(process.execPath, ['--import', 'tsx', WORKER_SCRIPT, path, 'wake-1', 'other', '1'], {
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    child.stdout.on('data', (chunk: Buffer) => {
      if (chunk.toString().includes('ready')) child.stdin.write('go\n');
    });
    const exited = new Promise<number | null>((r) => child.on('exit', r));
    const event = await tail.received;
    expect(event).toMatchObject({ streamId: 'wake-1', revision: 0, data: { worker: 'other', seq: 0 } });
    expect(await exited).toBe(0);
    await tail.close();
    await store.close();
  }, 20_000);
});

const url = await requirePostgres('PostgreSQL LISTEN/NOTIFY wake-ups');
if (url) {
  describe('PostgreSQL: tails woken by NOTIFY; a lost notification is covered by the fallback poll', () => {
    const schema = uniqueSchema('wake');
    const stores: EventStore[] = [];
    const open = async (extra: Partial<PostgresEventStoreOptions> = {}): Promise<EventStore> => {
      const store = await createPostgresEventStore({ connectionString: url, schema, ...extra });
      stores.push(store);
      return store;
    };
    const admin = async <T extends pg.QueryResultRow>(text: string, values: unknown[] = []): Promise<T[]> => {
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      try {
        return (await client.query<T>(text, values)).rows;
      } finally {
        await client.end();
      }
    };
    /** The listener's backend pid, once its LISTEN has run (awaited: the listener starts with the first tail). */
    const listenerPid = async (): Promise<number> => {
      for (;;) {
        const rows = await admin<{ pid: number }>(
          `SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND query LIKE 'LISTEN%'`,
          [`estate-listen:${schema}`],
        );
        if (rows[0]) return rows[0].pid;
        await new Promise((r) => setTimeout(r, 20));
      }
    };

    /**
     * Resolves `seen` when a tail's scan (the statement asked with its held-back flag set) answers that rows are held
     * back: the pools' queries are watched, not replaced; every query still goes to the server.
     */
    const heldAnswer = (): { seen: Promise<void>; restore: () => void } => {
      let seen!: () => void;
      const promise = new Promise<void>((resolve) => (seen = resolve));
      const original = pg.Pool.prototype.query as (...args: unknown[]) => unknown;
      const spy = vi.spyOn(pg.Pool.prototype, 'query').mockImplementation(function (this: pg.Pool, ...args: unknown[]) {
        const result = original.apply(this, args);
        const config = args[0] as { name?: string; values?: unknown[] } | undefined;
        if (config?.name?.startsWith('estate-scan:') && config.values?.[5] === true && result instanceof Promise) {
          void result.then(
            (r: pg.QueryResult<{ window_end: boolean; held: boolean | null }>) => {
              if (r.rows.some((row) => row.window_end && row.held === true)) seen();
            },
            () => undefined,
          );
        }
        return result as never;
      } as never);
      return { seen: promise, restore: () => spy.mockRestore() };
    };

    afterEach(async () => {
      await Promise.all(stores.splice(0).map((s) => s.close()));
    });
    afterAll(() => dropSchema(url, schema));

    it('delivers another store’s append (another process: no shared memory) with a ten-minute fallback poll', async () => {
      const reader = await open({ pollIntervalMs: TEN_MINUTES });
      const writer = await open();
      const tail = firstEvent(reader);
      await listenerPid();
      await writer.append('notify-1', [{ type: 'T', data: { n: 1 } }], { expectedRevision: 'no_stream' });
      expect(await tail.received).toMatchObject({ streamId: 'notify-1', data: { n: 1 } });
      await tail.close();
    });

    it('wakes a reader of a prefix only for appends to its streams (the NOTIFY names them); an unnamed one wakes all', async () => {
      const channel = `estate_append_${schema}`.slice(0, 63);
      const listener = createAppendListener({ connectionString: url, schemaName: schema, channel, listen: true, relistenDelayMs: 250, isClosed: () => false });
      const wakes = { tools: 0, all: 0 };
      let allWoken: () => void = () => undefined;
      const nextAll = (): Promise<void> => new Promise((r) => (allWoken = r));
      const listening = nextAll();
      const removeTools = listener.addListener(() => wakes.tools++, 'tool-');
      const removeAll = listener.addListener(() => {
        wakes.all++;
        allWoken();
      });
      try {
        await listening; // LISTEN ran: everyone was woken once, to cover the gap before it
        await listenerPid();
        const writer = await open();
        const after = async (write: () => Promise<unknown>): Promise<{ tools: number; all: number }> => {
          const before = { ...wakes };
          const woken = nextAll();
          await write();
          await woken; // both readers are woken from the same notification, so the prefix reader's count is final
          return { tools: wakes.tools - before.tools, all: wakes.all - before.all };
        };
        expect(await after(() => writer.append('call-1', [{ type: 'T', data: {} }], { expectedRevision: 'no_stream' }))).toEqual({ tools: 0, all: 1 });
        expect(await after(() => writer.append('tool-a', [{ type: 'T', data: {} }], { expectedRevision: 'no_stream' }))).toEqual({ tools: 1, all: 1 });
        // The transactional path (a batch touching one stream twice) names its streams too.
        const batch = [{ streamId: 'call-2', events: [{ type: 'T', data: {} }], expectedRevision: 'any' as const }, { streamId: 'tool-b', events: [{ type: 'T', data: {} }], expectedRevision: 'any' as const }];
        expect(await after(() => writer.appendMany([...batch, { ...batch[0]!, expectedRevision: 'any' as const }]))).toEqual({ tools: 1, all: 1 });
        expect(await after(() => writer.appendMany([batch[0]!, batch[0]!]))).toEqual({ tools: 0, all: 1 });
        // A group commit of too many runs to name: their category is named, and still wakes no reader of tools.
        const runs = Array.from({ length: 100 }, (_, i) => ({ streamId: `run-${String(i).padStart(40, '0')}@tenant`, events: [{ type: 'T', data: {} }], expectedRevision: 'any' as const }));
        expect(await after(() => writer.appendMany(runs))).toEqual({ tools: 0, all: 1 });
        // Another program on the channel, or an older Estate: a payload that names no streams wakes every reader.
        expect(await after(() => admin(`SELECT pg_notify($1, 'not json')`, [channel]))).toEqual({ tools: 1, all: 1 });
        expect(await after(() => admin(`SELECT pg_notify($1, '')`, [channel]))).toEqual({ tools: 1, all: 1 });
      } finally {
        removeTools();
        removeAll();
        await listener.stop();
      }
    });

    it('delivers a change held back by another program’s open transaction once that ends, with a ten-minute fallback poll', async () => {
      await admin(`DELETE FROM "${schema}".events`).catch(() => undefined);
      const reader = await open({ pollIntervalMs: TEN_MINUTES });
      const writer = await open();
      const tail = firstEvent(reader);
      await listenerPid();
      // Not an append: its end NOTIFYs nothing, so only the tail's own look again (the held-back recheck) can deliver.
      const holder = new pg.Client({ connectionString: url });
      await holder.connect();
      try {
        await holder.query('BEGIN');
        await holder.query('SELECT pg_current_xact_id()'); // takes an id: every later commit is held back behind it
        const sawHeld = heldAnswer();
        try {
          await writer.append('held-1', [{ type: 'T', data: { n: 4 } }], { expectedRevision: 'no_stream' });
          expect(await reader.readAll()).toEqual([]);
          // The append's NOTIFY wakes the tail, whose read finds the row held back; from then on it must look again by
          // itself. Ended only once a read has said so, however long that takes on a loaded machine.
          await sawHeld.seen;
        } finally {
          sawHeld.restore();
        }
        await holder.query('COMMIT');
      } finally {
        await holder.end();
      }
      expect(await tail.received).toMatchObject({ streamId: 'held-1', data: { n: 4 } });
      await tail.close();
    });

    it('covers a notification lost with the listener (pg_terminate_backend) by the fallback poll', async () => {
      await admin(`DELETE FROM "${schema}".events`).catch(() => undefined);
      // The listener does not come back within this test: only the poll can deliver.
      const reader = await open({ pollIntervalMs: 200, relistenDelayMs: TEN_MINUTES });
      const writer = await open();
      const tail = firstEvent(reader);
      const pid = await listenerPid();
      const [terminated] = await admin<{ ok: boolean }>('SELECT pg_terminate_backend($1) AS ok', [pid]);
      expect(terminated?.ok).toBe(true);
      await writer.append('lost-1', [{ type: 'T', data: { n: 2 } }], { expectedRevision: 'no_stream' });
      expect(await tail.received).toMatchObject({ streamId: 'lost-1', data: { n: 2 } });
      await tail.close();
    });

    it('listens again after its connection was killed, and is woken by NOTIFY again', async () => {
      await admin(`DELETE FROM "${schema}".events`).catch(() => undefined);
      const reader = await open({ pollIntervalMs: TEN_MINUTES, relistenDelayMs: 20 });
      const writer = await open();
      const tail = firstEvent(reader);
      const first = await listenerPid();
      await admin('SELECT pg_terminate_backend($1)', [first]);
      // A new listener (another backend) replaces the killed one.
      let second = await listenerPid();
      while (second === first) second = await listenerPid();
      await writer.append('again-1', [{ type: 'T', data: { n: 3 } }], { expectedRevision: 'no_stream' });
      expect(await tail.received).toMatchObject({ streamId: 'again-1', data: { n: 3 } });
      await tail.close();
    });
  });
}
