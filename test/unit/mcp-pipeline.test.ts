/**
 * The stateful five-gate pipeline and the stateless path, driven directly (no transport).
 */
import { describe, expect, it } from 'vitest';
import { makePrincipal } from '#domain/access';
import { handleStateless, isStatelessMessage } from '#mcp/stateless';
import { aDefinition } from '../fixtures/builders.ts';
import { errorOf, makeHarness, resultOf } from '../fixtures/handlers/harness.ts';

const echo = { 'payments.lookup': () => ({ content: [{ type: 'text', text: 'ok' }] }) };
const meta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };

describe('stateful pipeline (the five gates, in order)', () => {
  it('gate 1: an invalid envelope is answered -32600 with its readable id, else null', async () => {
    const h = await makeHarness([aDefinition()], echo);
    const s = h.session();
    expect(await s.send({ jsonrpc: '1.0', id: 7, method: 'ping' })).toEqual({ jsonrpc: '2.0', id: 7, error: { code: -32600, message: 'Invalid Request: jsonrpc must be "2.0"' } });
    expect(errorOf(await s.send({ jsonrpc: '2.0', id: { bad: true }, method: 'ping' }))).toMatchObject({ code: -32600 });
    expect(await s.send({ jsonrpc: '2.0', id: { bad: true }, method: 'ping' })).toMatchObject({ id: null });
    expect(await s.send('just a string')).toMatchObject({ id: null, error: { code: -32600 } });
    expect(await s.send({ jsonrpc: '2.0', id: 3 })).toMatchObject({ id: 3, error: { code: -32600 } });
  });

  it('gate 2: notifications are never answered, even before initialize and even with an id-less unknown method', async () => {
    const h = await makeHarness([aDefinition()], echo);
    const s = h.session();
    expect(await s.send({ jsonrpc: '2.0', method: 'notifications/initialized' })).toBeNull();
    expect(await s.send({ jsonrpc: '2.0', method: 'notifications/whatever', params: { x: 1 } })).toBeNull();
    // gate 2 before gate 3: a notification carrying an id is still a notification
    expect(await s.send({ jsonrpc: '2.0', id: 5, method: 'notifications/cancelled', params: { requestId: 1 } })).toBeNull();
  });

  it('gate 3: a request without id is not answered', async () => {
    const h = await makeHarness([aDefinition()], echo);
    const s = h.session();
    expect(await s.send({ jsonrpc: '2.0', method: 'tools/list' })).toBeNull();
    expect(await s.send({ jsonrpc: '2.0', method: 'initialize', params: { protocolVersion: '2025-11-25' } })).toBeNull();
    expect(s.session.isInitialized).toBe(false);
  });

  it('gate 4: before initialize only initialize and ping are served', async () => {
    const h = await makeHarness([aDefinition()], echo);
    const s = h.session();
    expect(errorOf(await s.request('tools/list'))).toEqual({ code: -32600, message: 'Invalid Request: the session is not initialized' });
    expect(resultOf(await s.request('ping'))).toEqual({});
    await s.initialize();
    expect(resultOf(await s.request('ping'))).toEqual({});
    expect(resultOf(await s.request('tools/list'))).toHaveProperty('tools');
  });

  it('gate 5: an unknown method is -32601; a second initialize is refused', async () => {
    const h = await makeHarness([aDefinition()], echo);
    const s = h.session();
    await s.initialize();
    expect(errorOf(await s.request('resources/list'))).toMatchObject({ code: -32601 });
    expect(errorOf(await s.request('initialize', { protocolVersion: '2025-11-25' }))).toMatchObject({ code: -32600 });
  });

  it.each([
    ['2025-11-25', '2025-11-25'],
    ['2025-06-18', '2025-06-18'],
    ['2025-03-26', '2025-03-26'],
    ['2024-11-05', '2024-11-05'],
    ['2099-01-01', '2025-11-25'],
    ['2026-07-28', '2025-11-25'],
    [undefined, '2025-11-25'],
  ])('initialize with %s negotiates %s', async (requested, negotiated) => {
    const h = await makeHarness([aDefinition()], echo);
    const s = h.session();
    const r = resultOf(await s.request('initialize', { ...(requested ? { protocolVersion: requested } : {}), capabilities: {} }));
    expect(r.protocolVersion).toBe(negotiated);
    expect(r.capabilities).toMatchObject({ tools: { listChanged: true } });
  });

  it('batches are answered per message on 2025-03-26 and refused elsewhere', async () => {
    const h = await makeHarness([aDefinition()], echo);
    const old = h.session();
    await old.initialize('2025-03-26');
    const answers = await old.send([
      { jsonrpc: '2.0', id: 'a', method: 'ping' },
      { jsonrpc: '2.0', method: 'notifications/initialized' },
      { jsonrpc: '2.0', id: 'b', method: 'nope' },
      { jsonrpc: '1.0', id: 'c', method: 'ping' },
    ]);
    expect(answers).toEqual([
      { jsonrpc: '2.0', id: 'a', result: {} },
      { jsonrpc: '2.0', id: 'b', error: { code: -32601, message: 'Method not found: nope' } },
      { jsonrpc: '2.0', id: 'c', error: { code: -32600, message: 'Invalid Request: jsonrpc must be "2.0"' } },
    ]);
    // An empty array is one invalid request, and the answer must not claim that batches are refused here.
    expect(await old.send([])).toEqual({ jsonrpc: '2.0', id: null, error: { code: -32600, message: 'Invalid Request: an empty batch (a batch holds at least one message)' } });
    const current = h.session();
    await current.initialize('2025-11-25');
    expect(await current.send([{ jsonrpc: '2.0', id: 'a', method: 'ping' }])).toMatchObject({ id: null, error: { code: -32600 } });
  });
});

describe('stateless path (2026-07-28)', () => {
  const principal = makePrincipal({});
  const req = (method: string, params: Record<string, unknown> = {}, id: number | string = 1) => ({ jsonrpc: '2.0' as const, id, method, params });

  it('routes on params._meta protocolVersion', () => {
    expect(isStatelessMessage(req('tools/list', { _meta: meta }))).toBe(true);
    expect(isStatelessMessage(req('tools/list'))).toBe(false);
    expect(isStatelessMessage([req('tools/list', { _meta: meta })])).toBe(false);
  });

  it('refuses in order: missing _meta key (-32602), unsupported revision (-32022), header mismatch (-32020)', async () => {
    const h = await makeHarness([aDefinition()], echo);
    const noCaps = await handleStateless(h.core, req('tools/list', { _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' } }), { principal });
    expect(noCaps).toMatchObject({ kind: 'response', response: { error: { code: -32602 } } });
    const oldRev = await handleStateless(h.core, req('tools/list', { _meta: { ...meta, 'io.modelcontextprotocol/protocolVersion': '2025-11-25' } }), { principal });
    expect(oldRev).toMatchObject({ response: { error: { code: -32022, data: { supported: ['2026-07-28'], requested: '2025-11-25' } } } });
    // revision is checked before headers: a bad revision with bad headers is still -32022
    const both = await handleStateless(h.core, req('tools/list', { _meta: { ...meta, 'io.modelcontextprotocol/protocolVersion': '1999-01-01' } }), { principal, headers: () => undefined });
    expect(both).toMatchObject({ response: { error: { code: -32022, data: { requested: '1999-01-01' } } } });
    // over HTTP the header names the revision asked for: a supported header with a different body is a mismatch
    const v999 = { _meta: { ...meta, 'io.modelcontextprotocol/protocolVersion': 'v999.0.0' } };
    const supportedHeader = await handleStateless(h.core, req('tools/list', v999), { principal, headers: (n) => ({ 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/list' })[n] });
    expect(supportedHeader).toMatchObject({ status: 400, response: { error: { code: -32020 } } });
    const unsupportedHeader = await handleStateless(h.core, req('tools/list', { _meta: meta }), { principal, headers: (n) => ({ 'mcp-protocol-version': 'v999.0.0', 'mcp-method': 'tools/list' })[n] });
    expect(unsupportedHeader).toMatchObject({ status: 400, response: { error: { code: -32022, data: { requested: 'v999.0.0' } } } });
    const headers: Record<string, string> = { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'other.tool' };
    const mismatch = await handleStateless(h.core, req('tools/call', { name: 'payments.lookup', arguments: {}, _meta: meta }), { principal, headers: (n) => headers[n] });
    expect(mismatch).toMatchObject({ response: { error: { code: -32020 } } });
    const wrongMethod = await handleStateless(h.core, req('tools/list', { _meta: meta }), { principal, headers: (n) => headers[n] });
    expect(wrongMethod).toMatchObject({ response: { error: { code: -32020 } } });
  });

  it('subscriptions/listen with notifications that are not an object → -32602, no stream held open (found by a probe)', async () => {
    const h = await makeHarness([aDefinition()], echo);
    for (const notifications of [5, 'toolsListChanged', [true], null]) {
      const r = await handleStateless(h.core, req('subscriptions/listen', { notifications, _meta: meta }), { principal });
      expect(r).toMatchObject({ kind: 'response', response: { error: { code: -32602 } } });
    }
    expect(await handleStateless(h.core, req('subscriptions/listen', { notifications: { toolsListChanged: true }, _meta: meta }), { principal })).toMatchObject({ kind: 'listen', toolsListChanged: true });
  });

  it('notifications and id-less requests get nothing', async () => {
    const h = await makeHarness([aDefinition()], echo);
    expect(await handleStateless(h.core, { jsonrpc: '2.0', method: 'notifications/initialized', params: { _meta: meta } }, { principal })).toEqual({ kind: 'none' });
    expect(await handleStateless(h.core, { jsonrpc: '2.0', method: 'tools/list', params: { _meta: meta } }, { principal })).toEqual({ kind: 'none' });
  });

  it('ping and logging/setLevel do not exist; server/discover answers the revisions', async () => {
    const h = await makeHarness([aDefinition()], echo);
    for (const m of ['ping', 'logging/setLevel']) {
      expect(await handleStateless(h.core, req(m, { _meta: meta }), { principal })).toMatchObject({ response: { error: { code: -32601 } } });
    }
    const d = await handleStateless(h.core, req('server/discover', { _meta: meta }), { principal });
    expect(d).toMatchObject({ response: { result: { supportedVersions: ['2026-07-28'], capabilities: { tools: { listChanged: true } } } } });
  });

  it('tools/list carries ttlMs and cacheScope private', async () => {
    const h = await makeHarness([aDefinition()], echo);
    const out = await handleStateless(h.core, req('tools/list', { _meta: meta }), { principal: makePrincipal({ clearance: 'internal' }) });
    expect(out).toMatchObject({ response: { result: { ttlMs: 60_000, cacheScope: 'private', tools: [{ name: 'payments.lookup' }] } } });
  });
});
