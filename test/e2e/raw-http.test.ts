/**
 * `estate serve --http` driven with raw HTTP requests (node:http, so Host and Origin can be set): the checks done
 * before any MCP code, the stateless gates with their HTTP statuses, sessions, and that the server keeps serving
 * after every refusal.
 */
import { request } from 'node:http';
import { connect } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { makeTempStore, parseMcpBody, startHttpServer, type HttpServer, type TempStore } from './helpers.ts';

interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  json(): Record<string, unknown>;
}

const send = (url: string, o: { method?: string; body?: string | Buffer; headers?: Record<string, string> }): Promise<Reply> =>
  new Promise((resolve, reject) => {
    const req = request(url, { method: o.method ?? 'POST', headers: o.headers ?? {} }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body, json: () => parseMcpBody(res.headers['content-type'], body).response ?? {} }),
      );
    });
    req.on('error', (e: NodeJS.ErrnoException) => {
      // A server may answer 413 and close before the whole body is written; the answer has already arrived then.
      if (e.code !== 'EPIPE' && e.code !== 'ECONNRESET') reject(e);
    });
    if (o.body !== undefined) req.end(o.body);
    else req.end();
  });

interface SlowPost {
  head: string;
  body: string;
  /** Body bytes written (all of them, unless the connection broke). */
  sent: number;
  /** Body bytes written when the 413's last byte arrived. */
  answeredAfter: number;
  /** The server closed with a FIN after reading everything (no reset, no write error). */
  endedCleanly: boolean;
  errors: string[];
}

/** POSTs `size` bytes of JSON-ish padding in 64 KiB pieces, each write awaited and followed by a short pause. */
const slowOversizedPost = (url: string, framing: 'content-length' | 'chunked', size: number): Promise<SlowPost> =>
  new Promise((resolve) => {
    const u = new URL(url);
    const socket = connect(Number(u.port), u.hostname);
    const out: SlowPost = { head: '', body: '', sent: 0, answeredAfter: -1, endedCleanly: false, errors: [] };
    let received = Buffer.alloc(0);
    socket.on('data', (c: Buffer) => {
      received = Buffer.concat([received, c]);
      const split = received.indexOf('\r\n\r\n');
      if (split < 0) return;
      out.head = received.subarray(0, split).toString('latin1');
      const length = Number(/content-length: *(\d+)/i.exec(out.head)?.[1] ?? NaN);
      const body = received.subarray(split + 4);
      if (body.length >= length && out.answeredAfter < 0) out.answeredAfter = out.sent;
      out.body = body.toString('utf8');
    });
    socket.on('error', (e: NodeJS.ErrnoException) => out.errors.push(`${e.code ?? ''} ${e.message}`));
    socket.on('end', () => {
      out.endedCleanly = out.errors.length === 0;
      socket.end();
    });
    socket.on('close', () => resolve(out));
    const write = (data: string | Buffer): Promise<void> =>
      new Promise((ok) => {
        if (socket.destroyed) return ok();
        socket.write(data, (e) => {
          if (e) out.errors.push(`write: ${e.message}`);
          ok();
        });
      });
    socket.once('connect', () => {
      void (async () => {
        const framingHeader = framing === 'chunked' ? 'transfer-encoding: chunked' : `content-length: ${size}`;
        await write(`POST ${u.pathname} HTTP/1.1\r\nhost: ${u.host}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\n${framingHeader}\r\n\r\n`);
        const piece = Buffer.alloc(64 * 1024, 0x20);
        while (out.sent < size && !socket.destroyed) {
          await write(framing === 'chunked' ? Buffer.concat([Buffer.from(`${piece.length.toString(16)}\r\n`), piece, Buffer.from('\r\n')]) : piece);
          if (!socket.destroyed) out.sent += piece.length;
          await new Promise((r) => setTimeout(r, 5));
        }
        if (framing === 'chunked') await write('0\r\n\r\n');
      })();
    });
  });

const JSON_HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
const META = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };
const stateless = (method: string, params: Record<string, unknown> = {}, id: number | string = 1) =>
  JSON.stringify({ jsonrpc: '2.0', id, method, params: { ...params, _meta: { ...META, ...((params._meta as object) ?? {}) } } });
const statelessHeaders = (method: string, extra: Record<string, string> = {}) => ({ ...JSON_HEADERS, 'mcp-protocol-version': '2026-07-28', 'mcp-method': method, ...extra });

describe('estate serve --http, raw requests', () => {
  let tmp: TempStore;
  let srv: HttpServer;

  beforeAll(async () => {
    tmp = makeTempStore();
    srv = await startHttpServer(['--demo', '--store', tmp.store, '--tenant', 'acme', '--scopes', 'payments.read', '--clearance', 'confidential']);
  });
  afterAll(async () => {
    await srv?.stop();
    tmp?.cleanup();
  });
  // After every refusal the server still answers a good request.
  afterEach(async () => {
    const r = await send(srv.url, { body: stateless('server/discover'), headers: statelessHeaders('server/discover') });
    expect(r.status).toBe(200);
    expect(r.json()).toMatchObject({ result: { supportedVersions: ['2026-07-28'] } });
  });

  it('logs the bound URL, on loopback, with a loud warning about authorization', () => {
    expect(srv.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/);
    expect(srv.logs.seen.some((l) => l.level === 40 && String(l.msg).startsWith('NO AUTHORIZATION'))).toBe(true);
  });

  it('a body over 1 MiB → 413', async () => {
    const big = Buffer.alloc(1024 * 1024 + 10, 0x20);
    const r = await send(srv.url, { body: big, headers: JSON_HEADERS });
    expect(r.status).toBe(413);
  });

  // Sent over a raw socket, slowly, with every write awaited: the 413 must be readable while the client is still
  // sending, and the server must read the rest of the body and close cleanly — a reset (EPIPE/ECONNRESET on the
  // client's writes) is what made `fetch` report "fetch failed" instead of the 413.
  for (const framing of ['content-length', 'chunked'] as const) {
    it(`a body far over 1 MiB sent slowly (${framing}) → a 413 the client reads, and a clean close after the body`, async () => {
      const r = await slowOversizedPost(srv.url, framing, 4 * 1024 * 1024);
      expect(r.errors).toEqual([]);
      expect(r.sent).toBe(4 * 1024 * 1024);
      expect(r.head).toMatch(/^HTTP\/1\.1 413 /);
      expect(r.head.toLowerCase()).toContain('connection: close');
      expect(JSON.parse(r.body)).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32000, message: 'Payload Too Large: the body exceeds 1 MiB' } });
      // The answer arrived before the client had finished sending: it never waited for a body it will not use.
      expect(r.answeredAfter).toBeLessThan(r.sent);
      expect(r.endedCleanly).toBe(true);
    }, 60_000);
  }

  it('a content type other than JSON → 415', async () => {
    const r = await send(srv.url, { body: stateless('tools/list'), headers: { ...statelessHeaders('tools/list'), 'content-type': 'text/plain' } });
    expect(r.status).toBe(415);
  });

  it('a Host or Origin not allowed → 403', async () => {
    const badHost = await send(srv.url, { body: stateless('tools/list'), headers: { ...statelessHeaders('tools/list'), host: 'evil.example:80' } });
    expect(badHost.status).toBe(403);
    const badOrigin = await send(srv.url, { body: stateless('tools/list'), headers: { ...statelessHeaders('tools/list'), origin: 'http://evil.example' } });
    expect(badOrigin.status).toBe(403);
    const goodOrigin = await send(srv.url, { body: stateless('tools/list'), headers: { ...statelessHeaders('tools/list'), origin: 'http://localhost:3000' } });
    expect(goodOrigin.status).toBe(200);
  });

  it('bad JSON → 400 with -32700 and id null', async () => {
    const r = await send(srv.url, { body: '{"jsonrpc":', headers: JSON_HEADERS });
    expect(r.status).toBe(400);
    expect(r.json()).toEqual({ jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error' } });
  });

  it('stateless: a missing _meta key → -32602, an unsupported revision → -32022 with {supported, requested}', async () => {
    const noCaps = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' } } });
    const r1 = await send(srv.url, { body: noCaps, headers: statelessHeaders('tools/list') });
    expect(r1.status).toBe(400);
    expect(r1.json()).toMatchObject({ id: 1, error: { code: -32602 } });
    const wrongRev = JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list', params: { _meta: { ...META, 'io.modelcontextprotocol/protocolVersion': '2030-01-01' } } });
    const r2 = await send(srv.url, { body: wrongRev, headers: statelessHeaders('tools/list', { 'mcp-protocol-version': '2030-01-01' }) });
    expect(r2.status).toBe(400);
    expect(r2.json()).toEqual({
      jsonrpc: '2.0',
      id: 2,
      error: { code: -32022, message: 'Unsupported protocol version', data: { supported: ['2026-07-28'], requested: '2030-01-01' } },
    });
  });

  it('stateless: headers missing or not matching the body → -32020', async () => {
    const bodyDisagrees = JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'tools/list', params: { _meta: { ...META, 'io.modelcontextprotocol/protocolVersion': '2030-01-01' } } });
    const r = await send(srv.url, { body: bodyDisagrees, headers: statelessHeaders('tools/list') });
    expect(r.status).toBe(400);
    expect(r.json()).toMatchObject({ id: 3, error: { code: -32020 } });
    const missingMethod = await send(srv.url, { body: stateless('tools/list'), headers: { ...JSON_HEADERS, 'mcp-protocol-version': '2026-07-28' } });
    expect(missingMethod.status).toBe(400);
    expect(missingMethod.json()).toMatchObject({ error: { code: -32020 } });
    const wrongName = await send(srv.url, {
      body: stateless('tools/call', { name: 'payments.lookup', arguments: { reference: 'PMT-771' } }),
      headers: statelessHeaders('tools/call', { 'mcp-name': 'fx.rates' }),
    });
    expect(wrongName.status).toBe(400);
    expect(wrongName.json()).toMatchObject({ error: { code: -32020 } });
  });

  it('stateless: ping does not exist (-32601, 404); tools/list carries ttlMs and cacheScope private', async () => {
    const ping = await send(srv.url, { body: stateless('ping'), headers: statelessHeaders('ping') });
    expect(ping.status).toBe(404);
    expect(ping.json()).toMatchObject({ error: { code: -32601 } });
    const list = await send(srv.url, { body: stateless('tools/list'), headers: statelessHeaders('tools/list') });
    expect(list.status).toBe(200);
    const result = list.json().result as { tools: { name: string }[]; ttlMs: number; cacheScope: string };
    expect(result.ttlMs).toBe(60_000);
    expect(result.cacheScope).toBe('private');
    expect(result.tools.map((t) => t.name)).toEqual(['fx.rates', 'payments.lookup']);
  });

  it('stateless: tools/call runs and answers with the version and a fresh run id', async () => {
    const r = await send(srv.url, {
      body: stateless('tools/call', { name: 'payments.lookup', arguments: { reference: 'PMT-771' } }),
      headers: statelessHeaders('tools/call', { 'mcp-name': 'payments.lookup' }),
    });
    expect(r.status).toBe(200);
    const result = r.json().result as { content: { text: string }[]; _meta: Record<string, string> };
    expect(result.content[0]?.text).toBe('PMT-771: HELD, 250000 AED');
    expect(result._meta['io.estate/version']).toBe('1.0.0');
    expect(result._meta['io.estate/runId']).toMatch(/^[0-9a-f-]{36}$/);
    // a dispatched method's error is in-band: HTTP 200, the JSON-RPC error is the payload
    const unknown = await send(srv.url, {
      body: stateless('tools/call', { name: 'payments.transfer', arguments: {} }),
      headers: statelessHeaders('tools/call', { 'mcp-name': 'payments.transfer' }),
    });
    expect(unknown.status).toBe(200);
    expect(unknown.json()).toEqual({ jsonrpc: '2.0', id: 1, error: { code: -32602, message: 'Unknown tool: payments.transfer' } });
  });

  it('stateful: initialize gives a session; an unknown session → 404; before initialize → -32600', async () => {
    const early = await send(srv.url, { body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }), headers: JSON_HEADERS });
    expect(early.status).toBe(400);
    expect(early.json()).toMatchObject({ id: 1, error: { code: -32600 } });
    const init = await send(srv.url, {
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } }),
      headers: JSON_HEADERS,
    });
    expect(init.status).toBe(200);
    const sid = init.headers['mcp-session-id'] as string;
    expect(sid).toMatch(/^[0-9a-f-]{36}$/);
    expect(init.json()).toMatchObject({ result: { protocolVersion: '2025-06-18' } });
    const list = await send(srv.url, { body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }), headers: { ...JSON_HEADERS, 'mcp-session-id': sid } });
    expect(list.status).toBe(200);
    expect((list.json().result as { tools: unknown[] }).tools).toHaveLength(2);
    const batch = await send(srv.url, { body: JSON.stringify([{ jsonrpc: '2.0', id: 3, method: 'ping' }]), headers: { ...JSON_HEADERS, 'mcp-session-id': sid } });
    expect(batch.json()).toMatchObject({ id: null, error: { code: -32600 } });
    const unknown = await send(srv.url, { body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }), headers: { ...JSON_HEADERS, 'mcp-session-id': 'no-such-session' } });
    expect(unknown.status).toBe(404);
    const del = await send(srv.url, { method: 'DELETE', headers: { 'mcp-session-id': sid } });
    expect(del.status).toBe(200);
    const gone = await send(srv.url, { body: JSON.stringify({ jsonrpc: '2.0', id: 4, method: 'ping' }), headers: { ...JSON_HEADERS, 'mcp-session-id': sid } });
    expect(gone.status).toBe(404);
  });

  // The SDK transport answered these (valid JSON) "-32700 Parse error" with id null; stdio served them.
  it('stateful: an initialize with missing params starts a session as on stdio; a message the SDK would not take → -32600 with its id', async () => {
    const post = (body: unknown, sid?: string) => send(srv.url, { body: JSON.stringify(body), headers: { ...JSON_HEADERS, ...(sid ? { 'mcp-session-id': sid } : {}) } });
    const bare = await post({ jsonrpc: '2.0', id: 8, method: 'initialize' });
    expect(bare.status, bare.body).toBe(200);
    expect(bare.json()).toMatchObject({ id: 8, result: { protocolVersion: '2025-11-25' } });
    const sid = bare.headers['mcp-session-id'] as string;
    expect(sid).toMatch(/^[0-9a-f-]{36}$/);

    for (const [message, why] of [
      [{ jsonrpc: '2.0', id: 9, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } }, extra: 1 }, /unknown member 'extra'/],
      [{ jsonrpc: '2.0', id: 1.5, method: 'initialize', params: {} }, /id must be a string or an integer/],
    ] as const) {
      const r = await post(message);
      expect(r.status).toBe(400);
      expect(r.json()).toMatchObject({ id: message.id, error: { code: -32600, message: expect.stringMatching(why) } });
    }

    // In a live session Estate answers these itself, as over stdio: a member JSON-RPC does not name is ignored, a bad
    // _meta is the tool call's own error, with the id.
    const extra = await post({ jsonrpc: '2.0', id: 2, method: 'ping', extra: 1 }, sid);
    expect(extra.json()).toEqual({ jsonrpc: '2.0', id: 2, result: {} });
    const fractional = await post({ jsonrpc: '2.0', id: 1.5, method: 'ping' }, sid);
    expect(fractional.json()).toEqual({ jsonrpc: '2.0', id: 1.5, result: {} });
    const meta = await post({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'fx.rates', arguments: {}, _meta: 5 } }, sid);
    expect(meta.json()).toMatchObject({ id: 3 });
    expect(JSON.stringify(meta.json())).not.toContain('Parse error');
  });
});
