/**
 * What a call record may hold of the client's own words: its clientInfo name and version, at most 256 characters each.
 * A 2025 session's clientInfo goes into the record of every call the session makes, so one initialize with a 1 MiB
 * name made every small call after it a 1 MiB record (kept forever, read back a thousand at a time by a run's page).
 * Past the bound the initialize (or the stateless request) is refused with -32602 naming the field, and nothing runs
 * or is recorded; at the bound the client is recorded whole.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makePrincipal } from '#domain/access';
import { MAX_CLIENT_INFO_CHARS } from '#mcp/client-info';
import { INVALID_PARAMS } from '#mcp/jsonrpc';
import { errorOf, makeCountingHarness, resultOf, type Harness } from '../fixtures/handlers/harness.ts';
import { serveMcpHttp, type McpHttpServer } from '../fixtures/mcp-http-server.ts';

let h: Harness;
let ran: () => number;
beforeAll(async () => {
  ({ h, ran } = await makeCountingHarness());
});

const LONG = 'n'.repeat(MAX_CLIENT_INFO_CHARS + 1);
const AT_BOUND = 'a'.repeat(MAX_CLIENT_INFO_CHARS);
const call = (runId: string) => ({ name: 'payments.lookup', arguments: { reference: 'PMT-100' }, _meta: { 'io.estate/runId': runId } });

describe('a client\'s name and version in call records', () => {
  it.each([
    ['name', { name: LONG, version: '1' }],
    ['version', { name: 'agent', version: LONG }],
  ])('a session whose clientInfo.%s is too long: the initialize is refused, naming the field, and the session stays closed', async (field, clientInfo) => {
    const s = h.session(makePrincipal({ subject: `s-${field}` }));
    const refused = errorOf(await s.request('initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo }));
    expect(refused).toEqual({ code: INVALID_PARAMS, message: `Invalid params: clientInfo.${field} is 257 characters long; at most 256` });
    const before = ran();
    expect(errorOf(await s.request('tools/call', call(`run-long-${field}`))).message).toBe('Invalid Request: the session is not initialized');
    expect(ran()).toBe(before);
    await h.recorder.flush();
    expect(await h.calls(`run-long-${field}`)).toEqual([]);
  });

  it('at the bound: accepted, and every call of the session records the client whole', async () => {
    const s = h.session(makePrincipal({ subject: 'at-bound' }));
    resultOf(await s.request('initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: AT_BOUND, version: AT_BOUND } }));
    await s.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    resultOf(await s.request('tools/call', call('run-at-bound')));
    await h.recorder.flush();
    expect((await h.calls('run-at-bound')).map((c) => c.client)).toEqual([{ name: AT_BOUND, version: AT_BOUND }]);
  });

  describe('on the 2026-07-28 stateless path', () => {
    let http: McpHttpServer;
    beforeAll(async () => {
      http = await serveMcpHttp(h.core, makePrincipal({ subject: 'stateless' }));
    });
    afterAll(() => http.close());

    const post = (clientInfo: unknown, runId: string) =>
      fetch(http.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'payments.lookup' },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'tools/call',
          params: { ...call(runId), _meta: { ...call(runId)._meta, 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {}, 'io.modelcontextprotocol/clientInfo': clientInfo } },
        }),
      });

    it('a 2025 session\'s initialize over HTTP whose clientInfo name is too long: 400 with the error, no session id handed out', async () => {
      const r = await fetch(http.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: LONG, version: '1' } } }),
      });
      expect([r.status, r.headers.get('mcp-session-id')]).toEqual([400, null]);
      expect(await r.json()).toEqual({ jsonrpc: '2.0', id: 7, error: { code: INVALID_PARAMS, message: 'Invalid params: clientInfo.name is 257 characters long; at most 256' } });
    });

    it('a request whose clientInfo name is too long: refused before anything runs, nothing recorded', async () => {
      const before = ran();
      const r = await post({ name: LONG, version: '1' }, 'run-stateless-long');
      const body = (await r.json()) as { error: { code: number; message: string } };
      expect(body.error).toEqual({ code: INVALID_PARAMS, message: 'Invalid params: _meta["io.modelcontextprotocol/clientInfo"].name is 257 characters long; at most 256' });
      expect(ran()).toBe(before);
      await h.recorder.flush();
      expect(await h.calls('run-stateless-long')).toEqual([]);
    });

    it('at the bound: recorded whole', async () => {
      const r = await post({ name: 'agent', version: AT_BOUND }, 'run-stateless-bound');
      expect(r.status).toBe(200);
      await h.recorder.flush();
      expect((await h.calls('run-stateless-bound')).map((c) => c.client)).toEqual([{ name: 'agent', version: AT_BOUND }]);
    });
  });
});
