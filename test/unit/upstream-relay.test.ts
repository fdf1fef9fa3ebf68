/**
 * CallRelay's rule for who gets an upstream's log line or question: the call whose async context it arrives in; with
 * no such context, the only call in flight where the transport cannot tell (stdio), and nobody otherwise.
 */
import { silentLog } from '#app/log';
import { describe, expect, it } from 'vitest';
import type { ElicitParams, HandlerContext } from '#handlers/types';
import { CallRelay } from '#upstream/relay';

interface Seen {
  logs: string[];
  asked: string[];
}

const fakeCtx = (seen: Seen): HandlerContext => {
  const log = (m: string) => void seen.logs.push(m);
  return {
    principal: { subject: 't', tenant: 'acme', scopes: [], clearance: 'public' } as unknown as HandlerContext['principal'],
    runId: 'r',
    tool: { name: 'ns.t', version: '1.0.0', schemaHash: 'h' },
    signal: new AbortController().signal,
    log: { debug: log, info: log, warn: log, error: log },
    elicit: async (p: ElicitParams) => {
      seen.asked.push(p.message);
      return { action: 'accept' };
    },
  };
};
const quietLog = silentLog;

/** Two calls held open at once; `during` runs while both are in flight, from inside call A, B, or neither. */
const twoInFlight = async (relay: CallRelay, during: { a?: () => Promise<unknown>; b?: () => Promise<unknown>; outside?: () => Promise<unknown> }) => {
  const a: Seen = { logs: [], asked: [] };
  const b: Seen = { logs: [], asked: [] };
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  let started = 0;
  let bothIn!: () => void;
  const both = new Promise<void>((r) => (bothIn = r));
  const call = (ctx: HandlerContext, fn?: () => Promise<unknown>) =>
    relay.run(ctx, async () => {
      if (++started === 2) bothIn();
      await both;
      const r = await fn?.();
      await held;
      return r;
    });
  const pa = call(fakeCtx(a), during.a);
  const pb = call(fakeCtx(b), during.b);
  await both;
  const outside = await during.outside?.().then(
    (v) => ({ ok: v }),
    (e: unknown) => ({ error: e instanceof Error ? e.message : String(e) }),
  );
  release();
  await Promise.all([pa, pb]);
  return { a, b, outside };
};

describe('CallRelay', () => {
  it('relays to the call whose context a message arrives in, whatever else is in flight', async () => {
    const relay = new CallRelay('ns', true, quietLog);
    const { a, b } = await twoInFlight(relay, {
      a: async () => (relay.relayLog({ level: 'info', data: 'for a' }), relay.elicit({ message: 'qa', requestedSchema: {} })),
      b: async () => (relay.relayLog({ level: 'info', data: 'for b' }), relay.elicit({ message: 'qb', requestedSchema: {} })),
    });
    expect(a).toEqual({ logs: ['for a'], asked: ['qa'] });
    expect(b).toEqual({ logs: ['for b'], asked: ['qb'] });
  });

  it('stdio: a message outside any call goes to the only call in flight, and to nobody when there are two', async () => {
    const one = new CallRelay('ns', true, quietLog);
    const seen: Seen = { logs: [], asked: [] };
    await one.run(fakeCtx(seen), async () => {
      await one.outside(async () => {
        one.relayLog({ level: 'info', data: 'guessed' });
        await one.elicit({ message: 'q', requestedSchema: {} });
      });
    });
    expect(seen).toEqual({ logs: ['guessed'], asked: ['q'] });

    const two = new CallRelay('ns', true, quietLog);
    const { a, b, outside } = await twoInFlight(two, {
      outside: () => two.outside(() => (two.relayLog({ level: 'info', data: 'whose?' }), two.elicit({ message: 'whose?', requestedSchema: {} }))),
    });
    expect(outside).toEqual({ error: 'Estate cannot tell which caller this elicitation request is for (2 calls in flight)' });
    expect([a, b]).toEqual([
      { logs: [], asked: [] },
      { logs: [], asked: [] },
    ]);
  });

  it('HTTP: a message outside any call (the standalone stream) is never relayed, even with one call in flight', async () => {
    const relay = new CallRelay('ns', false, quietLog);
    const seen: Seen = { logs: [], asked: [] };
    const r = await relay.run(fakeCtx(seen), () =>
      relay.outside(async () => {
        relay.relayLog({ level: 'info', data: 'unrelated' });
        return relay.elicit({ message: 'unrelated', requestedSchema: {} }).catch((e: unknown) => (e as Error).message);
      }),
    );
    expect(r).toBe('Estate cannot tell which caller this elicitation request is for (1 calls in flight)');
    expect(seen).toEqual({ logs: [], asked: [] });
  });
});
