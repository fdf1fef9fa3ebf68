/**
 * The bound on upstream answers held at once (src/upstream/answer-budget.ts), through the upstream fetch against a
 * real node:http server: what an answer holds is charged to the account it was fetched in and stays charged until
 * that account ends; a charge past one upstream's share or the process's total drops that answer at once (nothing
 * more read), gives its bytes back, ends its call (the account's signal) and is counted; another upstream still has
 * room; an event stream costs its largest event, not the sum of its events.
 */
import type { ServerResponse } from 'node:http';
import { describe, expect, it } from 'vitest';
import { AnswerBudget, AnswerRefused, MAX_UPSTREAM_BODY_BYTES } from '#upstream/answer-budget';
import { useRouteServer } from '../fixtures/upstream/route-server.ts';

const MiB = 1024 * 1024;

/** Writes `chunks` with backpressure, then ends. */
const pump = (res: ServerResponse, chunks: Iterable<Buffer>, end?: string): void => {
  const it = chunks[Symbol.iterator]();
  const more = (): void => {
    for (let n = it.next(); !n.done; n = it.next()) if (!res.write(n.value)) return void res.once('drain', more);
    res.end(end);
  };
  more();
};
function* repeat(chunk: Buffer, times: number): Generator<Buffer> {
  for (let i = 0; i < times; i++) yield chunk;
}

/** How many bytes each route sent before the end or a reset. */
const sent = new Map<string, number>();
const { post } = useRouteServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const mib = Number(url.searchParams.get('mib') ?? 1);
    const key = url.searchParams.get('key') ?? url.pathname;
    const counted = function* (chunks: Iterable<Buffer>): Generator<Buffer> {
      for (const c of chunks) {
        sent.set(key, (sent.get(key) ?? 0) + c.length);
        yield c;
      }
    };
    req.resume();
    if (url.pathname === '/json') {
      // A JSON answer of `mib` MiB (a text result of spaces): read whole.
      res.writeHead(200, { 'content-type': 'application/json' });
      return pump(res, counted([Buffer.from('{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"'), ...repeat(Buffer.alloc(MiB, 32), mib)]), '"}]}}');
    }
    if (url.pathname === '/events') {
      // A log line, then `mib` MiB of 64 KiB log events, then a small response: handed over as a stream.
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const note = Buffer.from(`data: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'x'.repeat(64 * 1024 - 100) } })}\n\n`);
      return pump(res, counted(repeat(note, mib * 16)), `data: {"jsonrpc":"2.0","id":7,"result":{"content":[]}}\n\n`);
    }
    if (url.pathname === '/big-event') {
      // A log line, then one event of `mib` MiB: handed over as a stream, charged as that event grows.
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      return pump(res, counted([Buffer.from(`data: {"jsonrpc":"2.0","method":"notifications/message","params":{"data":"hi"}}\n\ndata: `), ...repeat(Buffer.alloc(MiB, 97), mib)]), '\n\n');
    }
    res.writeHead(404).end();
});

/** Settles when `p` does, without letting it reject unobserved. */
const settled = <T>(p: Promise<T>): Promise<{ ok: true; value: T } | { ok: false; error: unknown }> =>
  p.then(
    (value) => ({ ok: true as const, value }),
    (error: unknown) => ({ ok: false as const, error }),
  );

/** Holds an account open until `release()`: what it fetched stays charged meanwhile. */
const holdOpen = (budget: AnswerBudget, ns: string, path: string) => {
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  let signal!: AbortSignal;
  const fetched = new Promise<Awaited<ReturnType<typeof settled<Response>>>>((resolveFetched) => {
    void budget.within(ns, async (account) => {
      signal = account.signal;
      const r = await settled(post(path));
      if (r.ok) await r.value.arrayBuffer();
      resolveFetched(r);
      await released;
    });
  });
  return { fetched, release, signal: () => signal };
};

describe('AnswerBudget', () => {
  it('gives one upstream half the total, at least one whole answer, never more than the total', () => {
    expect(new AnswerBudget().total).toBe(4 * MAX_UPSTREAM_BODY_BYTES);
    expect(new AnswerBudget().share).toBe(2 * MAX_UPSTREAM_BODY_BYTES);
    expect(new AnswerBudget(MAX_UPSTREAM_BODY_BYTES).share).toBe(MAX_UPSTREAM_BODY_BYTES);
    expect(new AnswerBudget(1.5 * MAX_UPSTREAM_BODY_BYTES).share).toBe(MAX_UPSTREAM_BODY_BYTES);
    expect(() => new AnswerBudget(MiB)).toThrow(/at least 67108864 bytes/);
  });

  it('gives everything an account charged back when its call ends, and when it throws', async () => {
    const budget = new AnswerBudget();
    await budget.within('a', async (account) => {
      expect(account.charge(10 * MiB)).toBe(true);
      expect(budget.counts().held).toBe(10 * MiB);
    });
    expect(budget.counts().held).toBe(0);
    await expect(
      budget.within('a', async (account) => {
        account.charge(MiB);
        throw new Error('the call failed');
      }),
    ).rejects.toThrow('the call failed');
    expect(budget.counts().held).toBe(0);
  });

  it('a call that fails after an answer of it was refused fails with the refusal, not with what the SDK made of it', async () => {
    const budget = new AnswerBudget();
    await expect(
      budget.within('a', async (account) => {
        account.charge(budget.share + 1);
        throw new Error('This operation was aborted');
      }),
    ).rejects.toBeInstanceOf(AnswerRefused);
  });

  it('refuses a charge past the share or the total, naming the bound, and charges nothing after the call ended', async () => {
    const budget = new AnswerBudget(3 * MAX_UPSTREAM_BODY_BYTES); // share: 1.5 answers
    let late: ((n: number) => boolean) | undefined;
    await budget.within('a', async (a) => {
      await budget.within('b', async (b) => {
        expect(a.charge(MAX_UPSTREAM_BODY_BYTES)).toBe(true);
        expect(a.charge(MAX_UPSTREAM_BODY_BYTES)).toBe(false); // past a's share
        expect(a.refusal).toBeInstanceOf(AnswerRefused);
        expect(a.refusal?.message).toMatch(/upstream a's answers held at once would pass \d+ bytes \(its share of ESTATE_MAX_UPSTREAM_BUFFER_BYTES\)/);
        expect(b.charge(MAX_UPSTREAM_BODY_BYTES)).toBe(true);
        await budget.within('c', async (c) => {
          expect(c.charge(MAX_UPSTREAM_BODY_BYTES)).toBe(true);
          expect(c.charge(1)).toBe(false); // past the total
          expect(c.refusal?.message).toMatch(/the upstream answers held at once would pass 201326592 bytes \(ESTATE_MAX_UPSTREAM_BUFFER_BYTES\)/);
        });
      });
      late = (n) => a.charge(n);
    });
    expect(budget.counts()).toEqual({ held: 0, refused: new Map([['a', 1], ['c', 1]]) });
    expect(late?.(MAX_UPSTREAM_BODY_BYTES)).toBe(true);
    expect(budget.counts().held).toBe(0);
  });
});

describe('the upstream fetch, charged to its call', () => {
  it('charges every byte of an answer read whole, and keeps it charged until the call ends', async () => {
    const budget = new AnswerBudget();
    await budget.within('a', async () => {
      const body = await (await post('/json?mib=8')).text();
      expect(body.length).toBeGreaterThan(8 * MiB);
      expect(budget.counts().held).toBe(Buffer.byteLength(body));
    });
    expect(budget.counts().held).toBe(0);
  });

  it('drops an answer past its upstream\'s share at once, gives its bytes back and ends its call; another upstream still has room', async () => {
    const budget = new AnswerBudget(2 * MAX_UPSTREAM_BODY_BYTES); // share: one whole answer
    const first = holdOpen(budget, 'hostile', '/json?mib=40&key=first');
    expect((await first.fetched).ok).toBe(true);
    const heldByFirst = budget.counts().held;
    expect(heldByFirst).toBeGreaterThan(40 * MiB);

    // The same upstream again: past its share, this answer is dropped; the account's signal ends the call.
    const second = holdOpen(budget, 'hostile', '/json?mib=40&key=second');
    const r = await second.fetched;
    expect(r.ok).toBe(false);
    expect(!r.ok && r.error).toBeInstanceOf(AnswerRefused);
    expect(second.signal().aborted).toBe(true);
    expect(second.signal().reason).toBeInstanceOf(AnswerRefused);
    expect(budget.counts().held).toBe(heldByFirst); // what the dropped answer held is given back
    expect(sent.get('second') ?? 0).toBeLessThan(40 * MiB); // and the rest of it was never read
    expect(budget.counts().refused.get('hostile')).toBe(1);

    // Another upstream is not starved by the first.
    const other = holdOpen(budget, 'other', '/json?mib=30');
    expect((await other.fetched).ok).toBe(true);

    first.release();
    second.release();
    other.release();
    await expect.poll(() => budget.counts().held, { timeout: 10_000 }).toBe(0); // a deadline, not a wait
  });

  it('under contention the answers refused give their bytes back, so the others finish', async () => {
    const budget = new AnswerBudget(2 * MAX_UPSTREAM_BODY_BYTES);
    const calls = Array.from({ length: 4 }, (_, i) => holdOpen(budget, 'busy', `/json?mib=40&key=contended-${i}`));
    const results = await Promise.all(calls.map((c) => c.fetched));
    const ok = results.filter((r) => r.ok).length;
    expect(ok).toBeGreaterThanOrEqual(1); // 40 MiB each, a share of 64 MiB: one fits at a time
    expect(results.filter((r) => !r.ok && r.error instanceof AnswerRefused)).toHaveLength(4 - ok);
    expect(budget.counts().held).toBeLessThanOrEqual(budget.share);
    for (const c of calls) c.release();
    await expect.poll(() => budget.counts().held, { timeout: 10_000 }).toBe(0); // a deadline, not a wait
  });

  it('charges an event stream its largest event, not the sum: a long stream of small events goes through a small share', async () => {
    const budget = new AnswerBudget(MAX_UPSTREAM_BODY_BYTES);
    await budget.within('a', async (account) => {
      const body = await (await post('/events?mib=96')).arrayBuffer(); // 1.5 x the whole budget in all
      expect(body.byteLength).toBeGreaterThan(95 * MiB);
      expect(account.signal.aborted).toBe(false);
      expect(budget.counts().held).toBeLessThan(2 * MiB); // what was read before handing over, then one event
    });
  });

  it('fails a stream whose one event grows past the share, and ends its call', async () => {
    const budget = new AnswerBudget(MAX_UPSTREAM_BODY_BYTES);
    await budget.within('a', async (a) => {
      expect(a.charge(50 * MiB)).toBe(true); // an answer this call already holds
      const r = await settled((await post('/big-event?mib=30&key=big-event')).arrayBuffer());
      expect(r.ok).toBe(false);
      expect(a.signal.reason).toBeInstanceOf(AnswerRefused);
      expect(budget.counts().held).toBe(50 * MiB);
    });
    expect(sent.get('big-event') ?? 0).toBeLessThan(30 * MiB);
  });

  it('charges nothing outside any call', async () => {
    const budget = new AnswerBudget();
    await (await post('/json?mib=2')).text();
    expect(budget.counts().held).toBe(0);
  });
});
