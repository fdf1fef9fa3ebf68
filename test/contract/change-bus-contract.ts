/**
 * The one contract every ChangeBus adapter keeps (the port's comment in src/app/ports.ts), with the publisher the
 * relay uses to put changes on it. Each adapter's test file calls `changeBusContract(name, factory)`; every test gets
 * a fresh topic from the factory, so the suite can run against a shared broker.
 *
 * Waiting: delivery is asynchronous, so the suite waits (up to a generous bound, only so a broken adapter fails
 * instead of hanging) until what it expects has arrived, then asserts exactly. To show that something did NOT
 * arrive it never waits out a quiet period: it publishes a marker on the same tool afterwards (one tool's changes
 * are ordered) and asserts once the marker is in.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { CatalogueChange, ChangeBus, ChangePublisher } from '#app/ports';
import type { Log } from '#app/log';

export interface ChangeBusFixture {
  /** A new bus on the fixture's topic: another replica. */
  bus(log: Log): ChangeBus;
  publisher(): ChangePublisher;
  /** Put raw values on the topic, bypassing the encoder (malformed messages; null is a tombstone). */
  produceRaw(messages: { key: string; value: string | null }[]): Promise<void>;
  cleanup(): Promise<void>;
}

const WAIT = { timeout: 60_000, interval: 20 };

let seq = 0;
export const change = (tool: string, event: CatalogueChange['event'] = 'ToolVersionPublished'): CatalogueChange => ({
  type: 'catalogue.changed',
  position: `${Date.now()}-${++seq}`,
  tool,
  version: `1.0.${seq}`,
  event,
  at: new Date(0).toISOString(),
});

/** A started bus that records what it is given; `positions` drops redeliveries (at least once is allowed). */
interface Recorder {
  bus: ChangeBus;
  received: CatalogueChange[];
  warnings: string[];
  /** Malformed messages the bus said it skipped (one warning per batch counts them). */
  skipped(): number;
  positions(): string[];
  /** Waits until every one of `changes` was delivered. */
  waitFor(changes: readonly CatalogueChange[]): Promise<void>;
}

export function changeBusContract(name: string, makeFixture: () => Promise<ChangeBusFixture>): void {
  // Each test starts up to two buses (a Kafka consumer group join takes ~5 s here) and waits up to WAIT.timeout for
  // deliveries: the test's own limit must not be the shorter one on a loaded host.
  describe(`ChangeBus contract: ${name}`, { timeout: 2 * WAIT.timeout }, () => {
    let fx: ChangeBusFixture;
    const started: ChangeBus[] = [];
    const publishers: ChangePublisher[] = [];

    beforeEach(async () => {
      fx = await makeFixture();
    });
    afterEach(async () => {
      for (const b of started.splice(0)) await b.stop();
      for (const p of publishers.splice(0)) await p.close();
      await fx.cleanup();
    });

    const publisher = (): ChangePublisher => {
      const p = fx.publisher();
      publishers.push(p);
      return p;
    };

    const recorder = async (onChange?: (cs: CatalogueChange[]) => Promise<void>): Promise<Recorder> => {
      const received: CatalogueChange[] = [];
      const warnings: string[] = [];
      let skipped = 0;
      const log: Log = {
        debug: () => undefined,
        info: () => undefined,
        warn: (o, msg) => {
          warnings.push(msg ?? '');
          if (msg === 'change topic: malformed messages skipped') skipped += (o as { count: number }).count;
        },
        error: (_o, msg) => warnings.push(msg ?? ''),
      };
      const bus = fx.bus(log);
      await bus.start(async (cs) => {
        received.push(...cs);
        await onChange?.(cs);
      });
      started.push(bus);
      const positions = () => [...new Set(received.map((c) => c.position))];
      return {
        bus,
        received,
        warnings,
        skipped: () => skipped,
        positions,
        waitFor: (changes) =>
          vi.waitFor(() => {
            const have = new Set(positions());
            expect(changes.filter((c) => !have.has(c.position)).map((c) => c.position)).toEqual([]);
          }, WAIT),
      };
    };

    it('delivers a change published after start, every field intact', async () => {
      const r = await recorder();
      const c = change('payments.lookup', 'ToolVersionDeprecated');
      await publisher().publish([c]);
      await r.waitFor([c]);
      expect(r.received.find((x) => x.position === c.position)).toEqual(c);
    });

    it('every bus sees every change (each replica is its own consumer)', async () => {
      const a = await recorder();
      const b = await recorder();
      const changes = [change('a.one'), change('b.two'), change('c.three')];
      await publisher().publish(changes);
      await a.waitFor(changes);
      await b.waitFor(changes);
      expect(a.positions().sort()).toEqual(changes.map((c) => c.position).sort());
      expect(b.positions().sort()).toEqual(changes.map((c) => c.position).sort());
    });

    it("one tool's changes arrive in the order published, across publish calls and other tools", async () => {
      const r = await recorder();
      const p = publisher();
      const mine: CatalogueChange[] = [];
      for (let round = 0; round < 4; round++) {
        const batch = [change('ordered.tool'), change(`other.tool${round}`), change('ordered.tool')];
        mine.push(...batch.filter((c) => c.tool === 'ordered.tool'));
        await p.publish(batch);
      }
      await r.waitFor(mine);
      const order = r.positions().filter((pos) => mine.some((c) => c.position === pos));
      expect(order).toEqual(mine.map((c) => c.position));
    });

    it('nothing published before start is delivered (the store catch-up covers it)', async () => {
      const p = publisher();
      const before = change('early.tool');
      await p.publish([before]);
      const r = await recorder();
      const marker = change('early.tool');
      await p.publish([marker]);
      await r.waitFor([marker]);
      expect(r.positions()).toEqual([marker.position]);
    });

    it('a malformed message is skipped and logged; delivery goes on', async () => {
      const r = await recorder();
      await fx.produceRaw([
        { key: 'bad.tool', value: '{not json' },
        { key: 'bad.tool', value: JSON.stringify({ type: 'catalogue.changed', position: 'p?', tool: 'bad.tool' }) },
        { key: 'bad.tool', value: JSON.stringify({ ...change('bad.tool'), event: 'ToolCalled' }) },
        { key: 'bad.tool', value: null },
      ]);
      const good = change('bad.tool');
      await publisher().publish([good]);
      await r.waitFor([good]);
      // The malformed ones share the good one's key, so they were read before it.
      expect(r.positions()).toEqual([good.position]);
      // Said in one line per batch, counted: not a line per message whoever writes to the topic cares to send.
      expect(r.skipped()).toBe(4);
      expect(r.warnings.filter((w) => w.includes('malformed')).length).toBeLessThanOrEqual(4);
    });

    it('onChange is awaited: never called again before the previous call settled', async () => {
      let running = 0;
      let overlapped = false;
      let release!: () => void;
      const gate = new Promise<void>((resolve) => (release = resolve));
      const r = await recorder(async () => {
        running++;
        if (running > 1) overlapped = true;
        await gate;
        running--;
      });
      const p = publisher();
      const first = change('slow.tool');
      await p.publish([first]);
      await r.waitFor([first]);
      const more = [change('slow.tool'), change('fast.tool'), change('slow.tool')];
      await p.publish(more);
      release();
      await r.waitFor(more);
      expect(overlapped).toBe(false);
    });

    it('after stop() resolves, nothing more reaches onChange', async () => {
      const stopped = await recorder();
      const live = await recorder();
      const p = publisher();
      const first = change('stop.tool');
      await p.publish([first]);
      await stopped.waitFor([first]);
      await stopped.bus.stop();
      const later = change('stop.tool');
      await p.publish([later]);
      await live.waitFor([first, later]);
      expect(stopped.positions()).toEqual([first.position]);
    });
  });
}
