/**
 * A session's replay buffer (Last-Event-ID) is bounded in size as well as in messages: a client that lists a large
 * catalogue page by page (each page up to 500 tools) must not make the session pin every page it was sent.
 */
import { describe, expect, it } from 'vitest';
import type { JSONRPCMessage } from '@modelcontextprotocol/server';
import { createReplayStore } from '#mcp/sse-replay-store';

const page = (id: number, chars: number): JSONRPCMessage => ({ jsonrpc: '2.0', id, result: { tools: [{ name: 'x'.repeat(chars) }] } }) as JSONRPCMessage;

const replayed = async (store: ReturnType<typeof createReplayStore>, after: string): Promise<{ id: string; message: JSONRPCMessage }[]> => {
  const out: { id: string; message: JSONRPCMessage }[] = [];
  await store.replayEventsAfter(after, { send: async (id, message) => void out.push({ id, message }) });
  return out;
};

describe('the session replay buffer', () => {
  it('keeps at most maxChars of JSON: large pages push the oldest out, and what is replayed is what was sent', async () => {
    const store = createReplayStore(1000, 100_000);
    const first = await store.storeEvent('s', page(0, 10));
    const ids: string[] = [];
    for (let i = 1; i <= 10; i++) ids.push(await store.storeEvent('s', page(i, 30_000)));
    // ~30 KB a page: the newest three fit, everything before them (the first message included) is gone.
    expect(await store.getStreamIdForEventId(first)).toBeUndefined();
    expect(await store.getStreamIdForEventId(ids[6] as string)).toBeUndefined();
    const after = await replayed(store, ids[7] as string);
    expect(after.map((e) => e.id)).toEqual([ids[8], ids[9]]);
    expect(after[1]?.message).toEqual(page(10, 30_000));
  });

  it('always keeps the newest message, even one larger than the whole budget', async () => {
    const store = createReplayStore(1000, 1000);
    await store.storeEvent('s', page(1, 10));
    const big = await store.storeEvent('s', page(2, 5000));
    expect(await store.getStreamIdForEventId(big)).toBe('s');
    const small = await store.storeEvent('s', page(3, 10));
    expect(await store.getStreamIdForEventId(big)).toBeUndefined();
    expect(await store.getStreamIdForEventId(small)).toBe('s');
  });

  it('still keeps at most `capacity` messages', async () => {
    const store = createReplayStore(3);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push(await store.storeEvent('s', page(i, 1)));
    expect(await store.getStreamIdForEventId(ids[1] as string)).toBeUndefined();
    expect((await replayed(store, ids[2] as string)).map((e) => e.id)).toEqual([ids[3], ids[4]]);
  });
});
