/**
 * The PostgreSQL store reads its log only up to the oldest write transaction open in the cluster (a later commit of
 * it must not be skipped), so one long transaction anywhere, even another application's, holds back every reader and
 * the relay. `heldBack()` and the two `/metrics` gauges fed by it say so: how many committed events wait, and since
 * when. This file holds a transaction open on purpose: it runs with the files that do (vitest.config.ts).
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { EventStore } from '#app/ports';
import { createMetrics } from '#ops/metrics';
import { createPostgresEventStore } from '#store/postgres-event-store';
import { dropSchema, requirePostgres, uniqueSchema } from './pg-helpers.ts';

const url = await requirePostgres('events held back on PostgreSQL');
if (url) {
  describe('events held back behind an open transaction (PostgreSQL)', () => {
    const schema = uniqueSchema('held');
    let store: EventStore;
    const other = new pg.Client({ connectionString: url });
    beforeAll(async () => {
      store = await createPostgresEventStore({ connectionString: url, schema });
    });
    afterAll(async () => {
      await other.end().catch(() => undefined);
      await store?.close();
      await dropSchema(url, schema);
    });

    const scrape = async (): Promise<{ events: number; seconds: number }> => {
      const metrics = createMetrics({ catalogue: () => ({ size: 0, position: null }), heldBack: () => store.heldBack!() });
      const body = (await metrics.render()).body;
      const value = (name: string): number => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(body)?.[1] ?? NaN);
      return { events: value('estate_store_held_events'), seconds: value('estate_store_held_seconds') };
    };

    it('counts the committed events a read does not return while another transaction is open, and 0 once it ends', async () => {
      await store.append('tool-before', [{ type: 'A', data: {} }], { expectedRevision: 'no_stream' });
      await vi.waitFor(async () => expect(await store.heldBack!()).toEqual({ events: 0, oldestSeconds: 0 }), { timeout: 30_000 });
      expect(await scrape()).toEqual({ events: 0, seconds: 0 });

      // Another connection, another database object even: it has written (it holds a transaction id) and not ended.
      await other.connect();
      await other.query('BEGIN');
      await other.query('SELECT pg_current_xact_id()');
      try {
        await store.append('tool-held', [{ type: 'B', data: {} }, { type: 'C', data: {} }], { expectedRevision: 'no_stream' });
        expect((await store.readAll()).map((e) => e.type)).toEqual(['A']);
        const held = await store.heldBack!();
        expect(held.events).toBe(2);
        expect(held.oldestSeconds).toBeGreaterThanOrEqual(0);
        const scraped = await scrape();
        expect(scraped.events).toBe(2);
        expect(scraped.seconds).toBeGreaterThanOrEqual(held.oldestSeconds);
      } finally {
        await other.query('COMMIT');
      }
      await vi.waitFor(async () => expect(await store.heldBack!()).toEqual({ events: 0, oldestSeconds: 0 }), { timeout: 30_000 });
      expect((await store.readAll()).map((e) => e.type)).toEqual(['A', 'B', 'C']);
    });
  });
}
