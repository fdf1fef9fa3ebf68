/**
 * Progress and log messages reach the client only when it asked: a progressToken on the request, a log level set by
 * logging/setLevel (sessions) or `_meta["io.modelcontextprotocol/logLevel"]` (2026-07-28).
 */
import { describe, expect, it } from 'vitest';
import { makePrincipal } from '#domain/access';
import type { HandlerMap } from '#handlers/types';
import type { JsonRpcNotification } from '#mcp/jsonrpc';
import { handleStateless } from '#mcp/stateless';
import { aDefinition } from '../fixtures/builders.ts';
import { makeHarness, resultOf } from '../fixtures/handlers/harness.ts';

const chatty: HandlerMap = {
  'payments.lookup': (_args, ctx) => {
    ctx.progress?.(0, 100);
    ctx.log.debug('starting');
    ctx.log.info('looked up', { n: 1 });
    ctx.progress?.(100, 100, 'done');
    return { content: [{ type: 'text', text: 'ok' }] };
  },
};
const def = aDefinition({ access: { classification: 'public' } });
const call = (meta: Record<string, unknown> = {}) => ({ name: 'payments.lookup', arguments: { reference: 'PMT-771' }, _meta: meta });
const methods = (ns: JsonRpcNotification[]) => ns.map((n) => n.method);

describe('client channel', () => {
  it('sessions: progress only with a token, log messages only at or above the level the client set', async () => {
    const h = await makeHarness([def], chatty);
    const s = h.session();
    await s.initialize();
    resultOf(await s.request('tools/call', call()));
    expect(s.notifications).toEqual([]);
    resultOf(await s.request('tools/call', call({ progressToken: 'tok-1' })));
    expect(s.notifications).toEqual([
      { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 'tok-1', progress: 0, total: 100 } },
      { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 'tok-1', progress: 100, total: 100, message: 'done' } },
    ]);
    s.notifications.length = 0;
    expect(resultOf(await s.request('logging/setLevel', { level: 'info' }))).toEqual({});
    resultOf(await s.request('tools/call', call()));
    expect(s.notifications).toEqual([
      { jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', logger: 'payments.lookup', data: { message: 'looked up', n: 1 } } },
    ]);
  });

  it('2026-07-28: log messages only when the request names a level; delivered on the request channel', async () => {
    const h = await makeHarness([def], chatty);
    const sent: JsonRpcNotification[] = [];
    const meta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };
    const req = (m: Record<string, unknown>) => ({ jsonrpc: '2.0' as const, id: 1, method: 'tools/call', params: call({ ...meta, ...m }) });
    await handleStateless(h.core, req({}), { principal: makePrincipal({}), notify: (n) => sent.push(n) });
    expect(sent).toEqual([]);
    await handleStateless(h.core, req({ 'io.modelcontextprotocol/logLevel': 'debug', progressToken: 7 }), { principal: makePrincipal({}), notify: (n) => sent.push(n) });
    expect(methods(sent)).toEqual(['notifications/progress', 'notifications/message', 'notifications/message', 'notifications/progress']);
  });
});
