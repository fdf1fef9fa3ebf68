/**
 * GET /metrics (SPEC §9): Prometheus text whose values move with the traffic: tool calls by tool, version and outcome
 * with a duration histogram, requests by method, revision and outcome (a made-up method is `other`, never its own
 * label), the catalogue size, sessions, process metrics, all `estate_` prefixed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTempStore, parseMcpBody, startHttpServer, type HttpServer, type TempStore } from './helpers.ts';

const JSON_HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
let srv: HttpServer;
let tmp: TempStore;
beforeAll(async () => {
  tmp = makeTempStore('estate-metrics-');
  srv = await startHttpServer(['--demo', '--store', tmp.store, '--tenant', 'acme', '--scopes', 'payments.read', '--clearance', 'confidential']);
});
afterAll(async () => {
  await srv?.stop();
  tmp?.cleanup();
});

const rpc = async (body: unknown, sid?: string) => {
  const r = await fetch(srv.url, { method: 'POST', headers: { ...JSON_HEADERS, ...(sid ? { 'mcp-session-id': sid } : {}) }, body: JSON.stringify(body) });
  return { sid: r.headers.get('mcp-session-id') ?? undefined, message: parseMcpBody(r.headers.get('content-type') ?? undefined, await r.text()).response };
};
const scrape = async (): Promise<string> => {
  const r = await fetch(srv.url.replace(/\/mcp$/, '/metrics'));
  expect(r.status).toBe(200);
  expect(r.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return r.text();
};
const value = (text: string, series: string): number | undefined => {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
};

describe('/metrics', () => {
  it('counts calls, requests and sessions as they happen', async () => {
    const before = await scrape();
    expect(value(before, 'estate_catalogue_tools')).toBeGreaterThan(0);
    expect(value(before, 'estate_sessions')).toBe(0);
    expect(before).toMatch(/^estate_process_resident_memory_bytes \d+/m);
    expect(before).not.toMatch(/^estate_tool_calls_total\{/m);

    const init = await rpc({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } } });
    await rpc({ jsonrpc: '2.0', method: 'notifications/initialized' }, init.sid);
    for (let i = 0; i < 3; i++) {
      const call = await rpc({ jsonrpc: '2.0', id: 10 + i, method: 'tools/call', params: { name: 'payments.lookup', arguments: { reference: 'PMT-771' } } }, init.sid);
      expect(call.message).toHaveProperty('result');
    }
    await rpc({ jsonrpc: '2.0', id: 20, method: 'made/up/method-1' }, init.sid);
    await rpc({ jsonrpc: '2.0', id: 21, method: 'made/up/method-2' }, init.sid);

    const after = await scrape();
    expect(value(after, 'estate_sessions')).toBe(1);
    const ok = after.split('\n').find((l) => l.startsWith('estate_tool_calls_total{') && l.includes('tool="payments.lookup"') && l.includes('outcome="ok"'));
    expect(ok).toMatch(/ 3$/);
    expect(after).toMatch(/^estate_tool_call_duration_seconds_count\{tool="payments\.lookup",version="[^"]+",outcome="ok"\} 3$/m);
    expect(value(after, 'estate_mcp_requests_total{method="tools/call",revision="2025-11-25",outcome="ok"}')).toBe(3);
    expect(value(after, 'estate_mcp_requests_total{method="other",revision="2025-11-25",outcome="-32601"}')).toBe(2);
    expect(after).not.toContain('made/up');
    // No upstream registered: no per-upstream series at all.
    expect(after).not.toMatch(/^estate_upstream_up\{/m);
  });

  it('counts 2026-07-28 stateless requests too, by method and outcome (a header refusal included)', async () => {
    const meta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };
    const stateless = (method: string, params: Record<string, unknown>, headers: Record<string, string> = {}) =>
      fetch(srv.url, {
        method: 'POST',
        headers: { ...JSON_HEADERS, 'mcp-protocol-version': '2026-07-28', 'mcp-method': method, ...headers },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params: { ...params, _meta: meta } }),
      }).then((r) => r.text());
    await stateless('tools/list', {});
    await stateless('tools/list', {});
    await stateless('tools/call', { name: 'payments.lookup', arguments: { reference: 'PMT-771' } }, { 'mcp-name': 'payments.lookup' });
    await stateless('tools/call', { name: 'payments.lookup', arguments: {} }, { 'mcp-name': 'other.tool' }); // Mcp-Name mismatch
    const text = await scrape();
    expect(value(text, 'estate_mcp_requests_total{method="tools/list",revision="2026-07-28",outcome="ok"}')).toBe(2);
    expect(value(text, 'estate_mcp_requests_total{method="tools/call",revision="2026-07-28",outcome="ok"}')).toBe(1);
    expect(text).toMatch(/^estate_mcp_requests_total\{method="tools\/call",revision="2026-07-28",outcome="-32\d+"\} 1$/m);
  });
});

describe('/metrics and the Host check', () => {
  it('a foreign Host (DNS rebinding) gets 403 for /metrics, while /healthz and /readyz answer any Host', async () => {
    const { request } = await import('node:http');
    const get = (path: string, host: string) =>
      new Promise<number>((resolve, reject) => {
        const u = new URL(srv.url);
        const r = request({ host: u.hostname, port: u.port, path, headers: { host } }, (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        });
        r.on('error', reject);
        r.end();
      });
    expect(await get('/metrics', 'attacker.example')).toBe(403);
    expect(await get('/healthz', '10.1.2.3:8080')).toBe(200);
    expect(await get('/readyz', '10.1.2.3:8080')).toBe(200);
    expect(await get('/metrics', 'localhost')).toBe(200);
  });
});
