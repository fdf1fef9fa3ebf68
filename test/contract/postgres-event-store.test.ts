/**
 * The EventStore contract on the real PostgreSQL (ESTATE_TEST_PG), plus what only PostgreSQL can get wrong: a
 * transaction that commits after a later one must still reach a tailing reader, in cursor order.
 * Everything runs in a schema of its own, dropped at the end.
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import type { AppendRequest, EventStore, ScanOptions, StoredEvent, Subscription } from '#app/ports';
import { pageThrough } from '#app/read-pages';
import { createPostgresEventStore, type PostgresEventStoreOptions } from '#store/postgres-event-store';
import { createSchemaMigration } from '#store/postgres-schema';
import { scan, scanSql, scanToEndSql, streamIdsSql } from '#store/postgres-read';
import { STREAM_IDS_INDEX, parsePosition, quoteSchema } from '#store/postgres-rows';
import { dropSchema, requirePostgres, uniqueSchema } from '../int/pg-helpers.ts';
import { eventStoreContract } from './event-store-contract.ts';

const WAIT = { timeout: 10_000, interval: 10 };
/** A window in which a wrong delivery would show up; nothing is asserted about how long anything takes. */
const QUIET_MS = 250;
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

const url = await requirePostgres('PostgresEventStore');

if (url !== null) {
  const schema = uniqueSchema('contract');
  const open = (extra: Partial<PostgresEventStoreOptions> = {}): Promise<EventStore> =>
    createPostgresEventStore({ connectionString: url, schema, ...extra });

  afterAll(async () => {
    await dropSchema(url, schema);
  });

  eventStoreContract('postgres', async () => {
    const store = await open();
    return { store, cleanup: () => store.close(), connectAgain: () => open() };
  });

  describe('PostgresEventStore specifics', () => {
    const stores: EventStore[] = [];
    const subscriptions: Subscription[] = [];
    const prefix = (): string => `pg${randomUUID().replaceAll('-', '').slice(0, 12)}-`;
    const track = async (store: Promise<EventStore>): Promise<EventStore> => {
      const opened = await store;
      stores.push(opened);
      return opened;
    };

    /** Every event the store's scan yields, checking the pages: full, as readAll's, but for the last. */
    const scanned = async (store: EventStore, options: ScanOptions): Promise<StoredEvent[]> => {
      const sizes: number[] = [];
      const out: StoredEvent[] = [];
      for await (const page of store.scan!(options)) {
        sizes.push(page.length);
        out.push(...page);
      }
      const limit = options.limit ?? 1000;
      expect(sizes.slice(0, -1).every((n) => n === limit)).toBe(true);
      expect(sizes.every((n) => n > 0 && n <= limit)).toBe(true);
      return out;
    };
    /** readAll page after page (read-pages' pageThrough): what the scan must equal. */
    const paged = async (store: EventStore, options: ScanOptions): Promise<StoredEvent[]> => {
      const out: StoredEvent[] = [];
      for await (const page of pageThrough(store, options)) out.push(...page);
      return out;
    };

    afterEach(async () => {
      for (const s of subscriptions.splice(0)) await s.close();
      for (const s of stores.splice(0)) await s.close();
    });

    it('delivers an event whose transaction commits after a later one, before it, never skipping it', async () => {
      const p = prefix();
      const late = `${p}late`;
      const early = `${p}early`;
      let holding: (() => void) | undefined;
      let held!: () => void;
      const heldOpen = new Promise<void>((resolve) => (held = resolve));
      const slow = await track(
        open({
          beforeCommit: (requests: AppendRequest[]) =>
            requests.some((r) => r.streamId === late)
              ? new Promise<void>((resolve) => {
                  holding = resolve;
                  held();
                })
              : Promise.resolve(),
        }),
      );
      const fast = await track(open());
      const reader = await track(open());

      const seen: StoredEvent[] = [];
      subscriptions.push(reader.subscribe({ after: null, streamPrefix: p, onEvents: (batch) => void seen.push(...batch) }));

      // The late writer takes its transaction id first, then stalls before COMMIT.
      const lateAppend = slow.append(late, [{ type: 'Late', data: {} }], { expectedRevision: 'no_stream' });
      try {
        await heldOpen;
        const other = await fast.append(early, [{ type: 'CommittedFirst', data: {} }], { expectedRevision: 'no_stream' });
        expect(await fast.readStream(early)).toHaveLength(1);

        // A reader that moved past the committed event now would never come back for the late one.
        await sleep(QUIET_MS);
        expect(seen).toEqual([]);
        expect(await reader.readAll({ streamPrefix: p })).toEqual([]);
        expect(await scanned(reader, { streamPrefix: p })).toEqual([]);

        holding!();
        const lateResult = await lateAppend;
        await vi.waitFor(() => expect(seen).toHaveLength(2), WAIT);
        expect(seen.map((e) => e.type)).toEqual(['Late', 'CommittedFirst']);
        expect(seen.map((e) => e.position)).toEqual([...lateResult.positions, ...other.positions]);
        expect((await reader.readAll({ streamPrefix: p })).map((e) => e.position)).toEqual(seen.map((e) => e.position));
        expect((await scanned(reader, { streamPrefix: p })).map((e) => e.position)).toEqual(seen.map((e) => e.position));
        const afterLate = await reader.readAll({ streamPrefix: p, after: lateResult.positions[0]! });
        expect(afterLate.map((e) => e.type)).toEqual(['CommittedFirst']);
      } finally {
        // However this test ends, the held transaction must end too: it holds back every reader on the cluster.
        holding?.();
        await lateAppend.catch(() => undefined);
      }
    });

    it('refuses a NUL in a stream id or an event type by name, and appends nothing of that request', async () => {
      // PostgreSQL's text takes no NUL: its own error named neither the stream nor the event (a library writer's append).
      const store = await track(open());
      const p = prefix();
      await expect(store.append(`${p}a\u0000b`, [{ type: 'Happened', data: {} }], { expectedRevision: 'any' })).rejects.toThrow(
        `stream ${JSON.stringify(`${p}a\u0000b`)}: a stream id may not contain a NUL character`,
      );
      await expect(store.append(`${p}ok`, [{ type: 'Happened', data: {} }, { type: 'Bad\u0000', data: {} }], { expectedRevision: 'any' })).rejects.toThrow(
        'event type "Bad\\u0000" may not contain a NUL character',
      );
      expect(await store.readStream(`${p}ok`)).toEqual([]);
    });

    it('two stores (two pools) racing on one stream: exactly one wins, the other gets a ConcurrencyError', async () => {
      const id = `${prefix()}race`;
      const [a, b] = [await track(open()), await track(open())];
      await a.append(id, [{ type: 'Base', data: {} }], { expectedRevision: 'no_stream' });
      const outcomes = await Promise.allSettled([
        a.append(id, [{ type: 'A', data: {} }], { expectedRevision: 0 }),
        b.append(id, [{ type: 'B', data: {} }], { expectedRevision: 0 }),
      ]);
      expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(1);
      const lost = outcomes.find((o): o is PromiseRejectedResult => o.status === 'rejected');
      expect((lost?.reason as Error).name).toBe('ConcurrencyError');
      expect((await a.readStream(id)).map((e) => e.revision)).toEqual([0, 1]);
    });

    it('creates its schema once even when many first users arrive together', async () => {
      const fresh = uniqueSchema('race');
      try {
        const racers = await Promise.all(
          Array.from({ length: 5 }, () => track(createPostgresEventStore({ connectionString: url, schema: fresh }))),
        );
        const results = await Promise.all(
          racers.map((store, i) => store.append(`s-${i}`, [{ type: 'First', data: { i } }], { expectedRevision: 'no_stream' })),
        );
        expect(results.map((r) => r.revision)).toEqual([0, 0, 0, 0, 0]);
        expect(await racers[0]!.readAll()).toHaveLength(5);
      } finally {
        for (const s of stores.splice(0)) await s.close();
        await dropSchema(url, fresh);
      }
    });

    it('a first user that waited for another\'s migration finds it done and runs no DDL of its own', async () => {
      // The race the test above runs, held in place: both users look (no schema), both wait for the migration lock, the
      // first creates the schema. The second's connection had cached "no such schema" when it looked, and read it again
      // after the wait (to_regclass): it ran the DDL again, whose index builds lock tables that appends are writing,
      // which deadlocked an append once in CI. A user that runs DDL on existing objects gets "already exists" notices.
      const fresh = uniqueSchema('migrate_wait');
      const holder = new pg.Client({ connectionString: url });
      await holder.connect();
      // One connection each, so the look before the wait and the look after it are on the same connection.
      const pools = [0, 1].map(() => new pg.Pool({ connectionString: url, max: 1 }));
      const notices: string[][] = [[], []];
      pools.forEach((p, i) => p.on('connect', (c) => c.on('notice', (n) => notices[i]!.push(n.message ?? ''))));
      try {
        const pids = await Promise.all(pools.map(async (p) => (await p.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid));
        await holder.query('BEGIN');
        await holder.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`estate-event-store:${fresh}`]);
        const waiting = async (n: number) =>
          vi.waitFor(async () => {
            const { rows } = await holder.query<{ n: number }>("SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND pid = ANY($1)", [pids]);
            expect(rows[0]!.n).toBe(n);
          }, WAIT);
        const first = createSchemaMigration(pools[0]!, quoteSchema(fresh), fresh, () => false)();
        await waiting(1);
        const second = createSchemaMigration(pools[1]!, quoteSchema(fresh), fresh, () => false)();
        await waiting(2);
        await holder.query('ROLLBACK');
        await Promise.all([first, second]);
        expect(notices[1]).toEqual([]);
        const { rows } = await holder.query<{ n: number }>('SELECT count(*)::int AS n FROM pg_tables WHERE schemaname = $1', [fresh]);
        expect(rows[0]!.n).toBe(2);
      } finally {
        await holder.end();
        for (const p of pools) await p.end();
        await dropSchema(url, fresh);
      }
    });

    /** The indexes of schema $1 that a CONCURRENTLY build has finished (valid and ready), with their definitions. */
    const VALID_INDEXES = `SELECT c.relname AS indexname, pg_get_indexdef(c.oid) AS indexdef FROM pg_index i
      JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = $1 AND i.indisvalid AND i.indisready`;

    it('reads the catalogue by an index of its own, which a schema made before it gets at the next start', async () => {
      const fresh = uniqueSchema('catalogue_index');
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      try {
        const first = await track(createPostgresEventStore({ connectionString: url, schema: fresh }));
        await first.append('tool-a', [{ type: 'A', data: 1 }], { expectedRevision: 'no_stream' });
        await first.appendMany(Array.from({ length: 2000 }, (_, i) => ({ streamId: `run-r${i}`, expectedRevision: 'any' as const, events: [{ type: 'ToolCalled', data: {} }] })));
        await first.append('tool-a', [{ type: 'A', data: 2 }], { expectedRevision: 0 });
        // A schema of an Estate before the index: dropped, then a process starts on it.
        await client.query(`DROP INDEX ${quoteSchema(fresh)}.events_catalogue_order, ${quoteSchema(fresh)}.events_upstreams_order`);
        const before = await track(createPostgresEventStore({ connectionString: url, schema: fresh }));
        expect((await before.readAll({ streamPrefix: 'tool-' })).map((e) => e.data)).toEqual([1, 2]);
        // Built in the background (CONCURRENTLY): the store serves meanwhile.
        // Valid, not only listed: a CONCURRENTLY build shows in pg_indexes from its first step, and an ANALYZE while it
        // runs deadlocks with its wait for older transactions (CI, once).
        const indexes = async () =>
          (await client.query<{ indexname: string; indexdef: string }>(`${VALID_INDEXES} AND c.relname LIKE 'events_%_order' ORDER BY c.relname`, [fresh])).rows;
        await vi.waitFor(async () => expect((await indexes()).map((r) => r.indexname)).toEqual(['events_catalogue_order', 'events_global_order', 'events_upstreams_order']), WAIT);
        const rows = await indexes();
        expect(rows[0]?.indexdef).toMatch(/\(transaction_id, seq\) WHERE starts_with\(stream_id, 'tool-'::text\)/);
        expect(rows[2]?.indexdef).toMatch(/\(transaction_id, seq\) WHERE starts_with\(stream_id, 'upstream-'::text\)/);
        // And PostgreSQL reads a catalogue window by it, not by the log's order past every call record.
        await client.query(`ANALYZE ${quoteSchema(fresh)}.events`);
        const [first1] = await before.readAll({ streamPrefix: 'tool-' });
        const cursor = parsePosition(first1!.position);
        const plan = await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${scanSql(quoteSchema(fresh), 'tool-')}`, [cursor.xid.toString(), cursor.seq.toString(), 'tool-', 5000, 1000, false]);
        expect(plan.rows.map((r) => r['QUERY PLAN']).join('\n')).toContain('events_catalogue_order');
        expect((await before.readAll({ streamPrefix: 'tool-', after: first1!.position })).map((e) => e.data)).toEqual([2]);
      } finally {
        await client.end();
        for (const s of stores.splice(0)) await s.close();
        await dropSchema(url, fresh);
      }
    });

    it('finds a run\'s streams by an index of stream ids in byte order, which a schema made before it gets at the next start', async () => {
      const fresh = uniqueSchema('stream_ids_index');
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      try {
        const first = await track(createPostgresEventStore({ connectionString: url, schema: fresh }));
        await first.appendMany(Array.from({ length: 3000 }, (_, i) => ({ streamId: `run-r${i}@t:s`, expectedRevision: 'no_stream' as const, events: [{ type: 'ToolCalled', data: {} }] })));
        await first.append('run-r12@t:other', [{ type: 'ToolCalled', data: {} }], { expectedRevision: 'no_stream' });
        // A schema of an Estate before the index: dropped, then a process starts on it and finds the same, by a scan.
        await client.query(`DROP INDEX ${quoteSchema(fresh)}.${STREAM_IDS_INDEX}`);
        const before = await track(createPostgresEventStore({ connectionString: url, schema: fresh }));
        expect(await before.streamIds!('run-r12@')).toEqual(['run-r12@t:other', 'run-r12@t:s']);
        // Built in the background (CONCURRENTLY): the store serves meanwhile.
        const index = async () => (await client.query<{ indexdef: string }>(`${VALID_INDEXES} AND c.relname = $2`, [fresh, STREAM_IDS_INDEX])).rows[0]?.indexdef;
        await vi.waitFor(async () => expect(await index()).toMatch(/\(stream_id COLLATE "C"\)/), WAIT);
        // And PostgreSQL reads the range of that index, not every stream.
        await client.query(`ANALYZE ${quoteSchema(fresh)}.streams`);
        const plan = await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${streamIdsSql(quoteSchema(fresh))}`, ['run-r12@']);
        expect(plan.rows.map((r) => r['QUERY PLAN']).join('\n')).toMatch(new RegExp(`Index Only Scan using ${STREAM_IDS_INDEX}[^]*Index Cond`));
        expect(await before.streamIds!('run-r12@')).toEqual(['run-r12@t:other', 'run-r12@t:s']);
        expect(await before.streamIds!('run-r1@')).toEqual(['run-r1@t:s']);
      } finally {
        await client.end();
        for (const s of stores.splice(0)) await s.close();
        await dropSchema(url, fresh);
      }
    });

    it('finds a prefix past thousands of other streams’ events, in readAll and in a subscription', async () => {
      const p = prefix();
      const store = await track(open());
      const wanted = `${p}tool-x`;
      await store.append(wanted, [{ type: 'Before', data: {} }], { expectedRevision: 'no_stream' });
      // More than one scan window of events the filter must step over.
      await store.appendMany(
        Array.from({ length: 12 }, (_, i) => ({
          streamId: `${p}run-${i}`,
          events: Array.from({ length: 500 }, (_, j) => ({ type: 'Call', data: { j } })),
          expectedRevision: 'no_stream' as const,
        })),
      );
      await store.append(wanted, [{ type: 'After', data: {} }], { expectedRevision: 0 });

      const first = await store.readAll({ streamPrefix: `${p}tool-`, limit: 1 });
      expect(first.map((e) => e.type)).toEqual(['Before']);
      const next = await store.readAll({ streamPrefix: `${p}tool-`, after: first[0]!.position });
      expect(next.map((e) => e.type)).toEqual(['After']);

      const seen: string[] = [];
      subscriptions.push(
        store.subscribe({ after: first[0]!.position, streamPrefix: `${p}tool-`, onEvents: (b) => void seen.push(...b.map((e) => e.type)) }),
      );
      await vi.waitFor(() => expect(seen).toEqual(['After']), WAIT);
      await store.append(wanted, [{ type: 'Tailed', data: {} }], { expectedRevision: 1 });
      await vi.waitFor(() => expect(seen).toEqual(['After', 'Tailed']), WAIT);
    });

    it('a filtered read that reaches the end of the log says so in one query (the window was not full)', async () => {
      const p = prefix();
      const store = await track(open());
      const [tool] = (await store.append(`${p}tool-x`, [{ type: 'T', data: {} }], { expectedRevision: 'no_stream' })).positions;
      await store.append(`${p}run-0`, [1, 2, 3].map((j) => ({ type: 'Call', data: { j } })), { expectedRevision: 'no_stream' });
      const [last] = (await store.readAll({ after: tool!, limit: 10 })).slice(-1);
      const pool = new pg.Pool({ connectionString: url, max: 1 });
      let queries = 0;
      const counting = { query: (...a: unknown[]) => (queries++, (pool.query as (...b: unknown[]) => unknown)(...a)) } as unknown as pg.Pool;
      try {
        const page = await scan({ pool: counting, s: quoteSchema(schema), ensureReady: () => Promise.resolve() }, parsePosition(tool!), 10, `${p}tool-`);
        expect(page.events).toEqual([]);
        expect(page.scannedTo).toEqual(parsePosition(last!.position));
        expect(queries).toBe(1);
      } finally {
        await pool.end();
      }
    });

    it('scan reads what readAll reads page by page: past thousands of other streams\' rows, from any position', async () => {
      const p = prefix();
      const store = await track(open());
      await store.append(`${p}tool-a`, Array.from({ length: 7 }, (_, j) => ({ type: 'T', data: { j } })), { expectedRevision: 'no_stream' });
      // More than one of readAll's scan windows of rows the prefix must step over, then more of the prefix.
      await store.appendMany(
        Array.from({ length: 12 }, (_, i) => ({
          streamId: `${p}run-${i}`,
          events: Array.from({ length: 500 }, (_, j) => ({ type: 'Call', data: { j } })),
          expectedRevision: 'no_stream' as const,
        })),
      );
      await store.append(`${p}tool-b`, Array.from({ length: 5 }, (_, j) => ({ type: 'T', data: { j } })), { expectedRevision: 'no_stream' });

      const tools = await paged(store, { streamPrefix: `${p}tool-` });
      expect(tools.map((e) => `${e.streamId.slice(p.length)}/${e.revision}`)).toEqual([
        ...Array.from({ length: 7 }, (_, j) => `tool-a/${j}`),
        ...Array.from({ length: 5 }, (_, j) => `tool-b/${j}`),
      ]);
      for (const limit of [1, 3, 5, 12, 1000]) expect(await scanned(store, { streamPrefix: `${p}tool-`, limit })).toEqual(tools);
      expect(await scanned(store, { streamPrefix: `${p}tool-`, after: tools[6]!.position, limit: 2 })).toEqual(tools.slice(7));
      expect(await scanned(store, { streamPrefix: `${p}tool-`, after: tools[11]!.position })).toEqual([]);
      expect(await scanned(store, { streamPrefix: `${p}none-` })).toEqual([]);
      // Every stream, from a position inside the run rows: the same as paging readAll.
      const runs = await paged(store, { streamPrefix: `${p}run-3` });
      const from = runs[250]!.position;
      expect(await scanned(store, { after: from, limit: 700 })).toEqual(await paged(store, { after: from }));
    });

    it('recordedAt is the same millisecond text on every read, as a Date of the row would give it', async () => {
      const p = prefix();
      // A session in another time zone than the server's: the text must still be UTC.
      const elsewhere = new URL(url);
      elsewhere.searchParams.set('options', '-c TimeZone=Asia/Kolkata');
      const store = await track(open({ connectionString: elsewhere.toString() }));
      // now() at the server: microseconds, which every read cuts to the millisecond alike.
      await store.appendMany([{ streamId: `${p}t`, events: Array.from({ length: 20 }, () => ({ type: 'T', data: {} })), expectedRevision: 'no_stream' }]);
      const given = '2026-01-02T03:04:05.678Z';
      await store.append(`${p}t`, [{ type: 'Copied', data: {}, recordedAt: given }], { expectedRevision: 19 });
      const read = await store.readStream(`${p}t`);
      expect(await store.readAll({ streamPrefix: p })).toEqual(read);
      expect(await scanned(store, { streamPrefix: p })).toEqual(read);
      expect(read[20]!.recordedAt).toBe(given);
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      try {
        const { rows } = await client.query<{ recorded_at: Date; micros: string }>(
          `SELECT recorded_at, to_char(recorded_at, 'US') AS micros FROM "${schema}".events WHERE stream_id = $1 ORDER BY revision`,
          [`${p}t`],
        );
        expect(rows.slice(0, 20).some((r) => !r.micros.endsWith('000'))).toBe(true);
        expect(read.map((e) => e.recordedAt)).toEqual(rows.map((r) => r.recorded_at.toISOString()));
      } finally {
        await client.end();
      }
    });

    it('the scan\'s statement reads in the index\'s order, even on a table never analyzed', async () => {
      // Filtered by the prefix in WHERE, PostgreSQL planned a read of every row after the position and a sort on such
      // a table whenever it believed fewer rows would match than the LIMIT asks (a page of 1,000 out of 100,000 events
      // took 140 ms instead of 3). Scaled down: 6,000 rows, a window of 100; the plan must be the index's order.
      const fresh = uniqueSchema('plan');
      const store = await track(createPostgresEventStore({ connectionString: url, schema: fresh }));
      try {
        await store.appendMany(
          Array.from({ length: 20 }, (_, i) => ({
            streamId: `tool-${i}`,
            events: Array.from({ length: 300 }, () => ({ type: 'T', data: {} })),
            expectedRevision: 'no_stream' as const,
          })),
        );
        const client = new pg.Client({ connectionString: url });
        await client.connect();
        try {
          const { rows } = await client.query<{ 'QUERY PLAN': unknown }>(`EXPLAIN (FORMAT JSON) ${scanToEndSql(quoteSchema(fresh))}`, ['0', '0', 'tool-', 100]);
          const plan = JSON.stringify(rows[0]!['QUERY PLAN']);
          expect(plan).toContain('"Index Scan"');
          expect(plan).not.toContain('"Sort"');
        } finally {
          await client.end();
        }
      } finally {
        await store.close();
        await dropSchema(url, fresh);
      }
    });

    it('a store closed under a scan makes it fail, never look finished', async () => {
      const p = prefix();
      const store = await open();
      const [mark] = (await store.append(`${p}m`, [{ type: 'Mark', data: {} }], { expectedRevision: 'no_stream' })).positions;
      // More than one window of the log (a page's size, a statement each), so the scan must ask again after the close.
      await store.append(`${p}s`, Array.from({ length: 2_500 }, () => ({ type: 'T', data: {} })), { expectedRevision: 'no_stream' });
      const pages = store.scan!({ after: mark!, streamPrefix: p, limit: 1000 })[Symbol.asyncIterator]();
      expect((await pages.next()).value).toHaveLength(1000);
      await store.close();
      await expect(
        (async () => {
          for (let r = await pages.next(); !r.done; r = await pages.next());
        })(),
      ).rejects.toThrow(/closed during a scan/);
      expect(() => store.scan!({})).toThrow(/scan after close/);
    });

    it('rejects a position it did not make', async () => {
      const store = await track(open());
      await expect(store.readAll({ after: '42' })).rejects.toThrow(/not a PostgreSQL event store position/);
    });

    it('one-statement append: a failed check in a batch writes no event and leaves no stream head behind', async () => {
      const store = await track(open());
      const p = prefix();
      await store.append(`${p}old`, [{ type: 'T', data: 0 }], { expectedRevision: 'no_stream' });
      // New stream (any: would be created), existing stream with the right revision, new stream expected to exist.
      const batch = [
        { streamId: `${p}new`, events: [{ type: 'T', data: 1 }], expectedRevision: 'any' as const },
        { streamId: `${p}old`, events: [{ type: 'T', data: 2 }], expectedRevision: 0 },
        { streamId: `${p}ghost`, events: [{ type: 'T', data: 3 }], expectedRevision: 'exists' as const },
      ];
      await expect(store.appendMany(batch)).rejects.toMatchObject({ name: 'ConcurrencyError', streamId: `${p}ghost`, actual: -1 });
      expect(await store.readAll({ streamPrefix: p })).toHaveLength(1);
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      try {
        const { rows } = await client.query<{ stream_id: string; revision: string }>(
          `SELECT stream_id, revision::text FROM "${schema}".streams WHERE starts_with(stream_id, $1) ORDER BY stream_id`,
          [p],
        );
        expect(rows).toEqual([{ stream_id: `${p}old`, revision: '0' }]);
      } finally {
        await client.end();
      }
      // The same batch without the bad request commits whole, numbered from the heads.
      const results = await store.appendMany(batch.slice(0, 2));
      expect(results.map((r) => r.revision)).toEqual([0, 1]);
      expect((await store.readStream(`${p}old`)).map((e) => e.data)).toEqual([0, 2]);
    });

    it('refuses a schema name that is not a plain identifier', async () => {
      await expect(createPostgresEventStore({ connectionString: url, schema: 'x"; drop table y; --' })).rejects.toThrow(
        /invalid PostgreSQL schema name/,
      );
    });
  });
}
