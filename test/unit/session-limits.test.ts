/**
 * Issue 9 weaknesses on the session itself, whatever the transport (stdio uses exactly this): a 2025-03-26 batch is
 * bounded in count and bytes, and a request id still in flight is refused so the first request keeps its cancel.
 */
import { describe, expect, it, vi } from 'vitest';
import { makePrincipal } from '#domain/access';
import type { HandlerContext } from '#handlers/types';
import type { JsonRpcResponse } from '#mcp/jsonrpc';
import { StatefulSession } from '#mcp/stateful-session';
import { aDefinition } from '../fixtures/builders.ts';
import { makeHarness, textOf } from '../fixtures/handlers/harness.ts';

const waits = aDefinition({ name: 'test.waits', handler: 'test.waits', inputSchema: { type: 'object' }, access: { requiredScopes: [], tenants: [], classification: 'public' } });
const ping = (id: number) => ({ jsonrpc: '2.0', id, method: 'ping' });

describe('2025-03-26 batch bound', () => {
  it('over the count: one -32600 for the whole batch, nothing in it answered; at the bound: answered per message', async () => {
    const h = await makeHarness([], {});
    const s = h.session();
    await s.initialize('2025-03-26');
    const over = (await s.send(Array.from({ length: 101 }, (_, i) => ping(i)))) as JsonRpcResponse;
    expect(over).toMatchObject({ id: null, error: { code: -32600, message: expect.stringContaining('at most 100 messages (got 101') as string } });
    expect(await s.send(Array.from({ length: 100 }, (_, i) => ping(i)))).toHaveLength(100);
  });

  it('over the bytes (as the transport measured the frame): refused whole', async () => {
    const h = await makeHarness([], {});
    const session = new StatefulSession(h.core, { id: 's', principal: makePrincipal({}), transport: 'stdio', notify: () => undefined, batchLimits: { messages: 100, bytes: 1000 } });
    await session.handleFrame({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-03-26', capabilities: {}, clientInfo: { name: 'u', version: '1' } } });
    expect(await session.handleFrame([ping(1)], 1001)).toMatchObject({ error: { code: -32600, message: expect.stringContaining('at most 1000 bytes (got 1001') as string } });
    expect(await session.handleFrame([ping(1)], 1000)).toHaveLength(1);
  });
});

describe('duplicate request ids in flight', () => {
  it('the second is refused with -32600; a cancel for the id reaches the first', async () => {
    let started = 0;
    const h = await makeHarness([waits], {
      'test.waits': (_args: Record<string, unknown>, ctx: HandlerContext) =>
        new Promise((resolve) => {
          started++;
          ctx.signal?.addEventListener('abort', () => resolve({ content: [{ type: 'text', text: 'stopped' }] }));
        }),
    });
    const s = h.session(makePrincipal({ tenant: 'acme', subject: 'u' }));
    await s.initialize();
    const call = { jsonrpc: '2.0', id: 9, method: 'tools/call', params: { name: 'test.waits', arguments: {} } };
    const first = s.send(call);
    // The handler runs once its validators are ready (compiled ahead, in slices): wait for it, not for a fixed tick.
    await vi.waitFor(() => expect(started).toBe(1));
    const second = (await s.send(call)) as JsonRpcResponse;
    expect(second).toMatchObject({ id: 9, error: { code: -32600, message: expect.stringContaining('already in flight') as string } });
    expect(started).toBe(1);
    await s.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 9 } });
    const answered = (await first) as JsonRpcResponse & { result: Record<string, unknown> };
    expect(answered.id).toBe(9);
    expect(textOf(answered.result)).not.toBe('');
    // Once answered, the id is free again.
    const again = s.send(call);
    await vi.waitFor(() => expect(started).toBe(2));
    await s.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 9 } });
    expect(((await again) as JsonRpcResponse & { result?: unknown }).result).toBeDefined();
  });
});
