/** The held-back watch (src/ops/held-back-watch.ts): said once per holder, after a while, and once when it ends. */
import { describe, expect, it } from 'vitest';
import type { HeldBack } from '#app/ports';
import { heldBackLine, watchHeldBack, type NamedHeldBack } from '#ops/held-back-watch';

const session = { pid: 4242, database: 'billing', user: 'batch', application: 'nightly-load', state: 'idle in transaction', seconds: 41.7 };

const harness = () => {
  let reading: HeldBack | Error = { events: 0, oldestSeconds: 0 };
  const said: string[] = [];
  const watch = watchHeldBack({
    read: () => (reading instanceof Error ? Promise.reject(reading) : Promise.resolve(reading)),
    held: (h) => said.push(`held ${h.holder.pid ?? h.holder.prepared} ${h.events}`),
    released: () => said.push('released'),
    everyMs: 3_600_000,
    afterSeconds: 5,
  });
  return {
    said,
    set: (r: HeldBack | Error) => (reading = r),
    check: () => watch.check(),
    stop: () => watch.stop(),
  };
};

describe('the held-back watch', () => {
  it('says nothing of a short hold, once of a long one per holder, and once when it ends', async () => {
    const h = harness();
    await h.check();
    h.set({ events: 3, oldestSeconds: 0.2, holder: session });
    await h.check();
    expect(h.said).toEqual([]);

    h.set({ events: 3, oldestSeconds: 6, holder: session });
    await h.check();
    h.set({ events: 9, oldestSeconds: 12, holder: session });
    await h.check();
    expect(h.said).toEqual(['held 4242 3']);

    // Another transaction holds after it: said again.
    h.set({ events: 9, oldestSeconds: 7, holder: { ...session, pid: 777 } });
    await h.check();
    // Held, but the holder ended between the store's two reads: nothing said on that reading.
    h.set({ events: 9, oldestSeconds: 8 });
    await h.check();
    // A failing read is skipped, not taken for an end.
    h.set(new Error('connection reset'));
    await h.check();
    expect(h.said).toEqual(['held 4242 3', 'held 777 9']);

    h.set({ events: 0, oldestSeconds: 0 });
    await h.check();
    await h.check();
    expect(h.said).toEqual(['held 4242 3', 'held 777 9', 'released']);
    h.stop();
  });

  it('says released only after it said held', async () => {
    const h = harness();
    h.set({ events: 2, oldestSeconds: 1, holder: session });
    await h.check();
    h.set({ events: 0, oldestSeconds: 0 });
    await h.check();
    expect(h.said).toEqual([]);
    h.stop();
  });

  it('reads once at a time', async () => {
    let reads = 0;
    let release!: () => void;
    const watch = watchHeldBack({
      read: () => {
        reads++;
        return new Promise<HeldBack>((r) => (release = () => r({ events: 0, oldestSeconds: 0 })));
      },
      held: () => undefined,
      released: () => undefined,
      everyMs: 3_600_000,
    });
    const a = watch.check();
    const b = watch.check();
    expect(reads).toBe(1);
    release();
    await Promise.all([a, b]);
    watch.stop();
  });

  it('names the holder in one line, quoting what other clients chose', () => {
    const line = heldBackLine({ events: 12, oldestSeconds: 41.2, holder: { ...session, application: 'x"\nforged line' } });
    expect(line).toBe(
      '12 committed events have waited 41 s behind an open transaction: the session with pid 4242 (user "batch", database "billing", application "x\\"\\nforged line", idle in transaction, its transaction open 42 s); nothing newer is read until it ends',
    );
    expect(line).not.toContain('\n');
    const prepared: NamedHeldBack = { events: 10_000, oldestSeconds: 90, holder: { prepared: 'tx-7', database: 'billing', user: 'batch', application: '' } };
    expect(heldBackLine(prepared)).toBe(
      '10,000 or more committed events have waited 90 s behind an open transaction: prepared transaction "tx-7" (user "batch", database "billing"; COMMIT PREPARED or ROLLBACK PREPARED ends it); nothing newer is read until it ends',
    );
  });
});
