/**
 * Server-to-client streams over HTTP: a 2025 session's GET event stream (list_changed after a publish from another
 * process, and what it missed replayed on reconnect with Last-Event-ID), and a stateless `subscriptions/listen`.
 */
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTempStore, openSse, parseMcpBody, runCli, startHttpServer, toolDefinition, type HttpServer, type TempStore } from './helpers.ts';

const JSON_HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

const post = (url: string, body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; headers: Record<string, unknown>; json: Record<string, unknown> | null }> =>
  new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', headers: { ...JSON_HEADERS, ...headers } }, (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, json: parseMcpBody(res.headers['content-type'], text).response }));
    });
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });

describe('HTTP event streams', () => {
  let tmp: TempStore;
  let srv: HttpServer;
  let n = 0;

  const publishVisible = async (): Promise<string> => {
    const name = `fx.extra${++n}`;
    const file = tmp.file(`${name}.json`, toolDefinition({ name, handler: 'fx.rates', access: { requiredScopes: [], tenants: [], classification: 'public' } }));
    const r = await runCli(['publish', file, '--json', '--store', tmp.store]);
    expect(JSON.parse(r.stdout)).toMatchObject({ result: 'published' });
    return name;
  };
  const applied = (name: string) => srv.logs.next((l) => l.msg === 'catalogue updated' && Array.isArray(l.tools) && l.tools.includes(name), 15_000);

  beforeAll(async () => {
    tmp = makeTempStore();
    const file = tmp.file('progress.json', toolDefinition({ name: 'test.progress', handler: 'test.progress', inputSchema: { type: 'object' } }));
    expect((await runCli(['publish', file, '--store', tmp.store])).code).toBe(0);
    const elicit = tmp.file('elicit.json', toolDefinition({ name: 'test.elicit', handler: 'test.elicit', inputSchema: { type: 'object' } }));
    expect((await runCli(['publish', elicit, '--store', tmp.store])).code).toBe(0);
    srv = await startHttpServer(['--demo', '--handlers', 'test/fixtures/handlers/test-handlers.ts', '--store', tmp.store], { env: { ESTATE_LOG_LEVEL: 'debug' } });
  });
  afterAll(async () => {
    await srv?.stop();
    tmp?.cleanup();
  });

  it('a session hears list_changed on its GET stream, and a reconnect with Last-Event-ID gets what it missed', async () => {
    const init = await post(srv.url, { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } });
    const sid = init.headers['mcp-session-id'] as string;
    const h = { 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' };
    expect((await post(srv.url, { jsonrpc: '2.0', method: 'notifications/initialized' }, h)).status).toBe(202);
    await post(srv.url, { jsonrpc: '2.0', id: 2, method: 'tools/list' }, h);

    const first = await openSse(srv.url, { headers: h });
    expect(first.status).toBe(200);
    await applied(await publishVisible());
    const ev = await first.events.next(undefined, 15_000, 'list_changed event');
    expect(JSON.parse(ev.data)).toEqual({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' });
    expect(ev.id).toEqual(expect.any(String));
    first.close();

    // Listed again, then a change while no stream is open: the notice waits in the session's replay buffer.
    await post(srv.url, { jsonrpc: '2.0', id: 3, method: 'tools/list' }, h);
    await applied(await publishVisible());
    const resumed = await openSse(srv.url, { headers: { ...h, 'last-event-id': ev.id as string } });
    expect(resumed.status).toBe(200);
    const missed = await resumed.events.next(undefined, 15_000, 'replayed event');
    expect(JSON.parse(missed.data)).toEqual({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' });
    expect(Number(missed.id)).toBeGreaterThan(Number(ev.id));
    resumed.close();
  });

  it('a stateless subscriptions/listen is acknowledged first and then told, each message with its subscription id', async () => {
    const meta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };
    const listen = await openSse(srv.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'subscriptions/listen' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 'sub-1', method: 'subscriptions/listen', params: { notifications: { toolsListChanged: true }, _meta: meta } }),
    });
    expect(listen.status).toBe(200);
    const ack = JSON.parse((await listen.events.next(undefined, 10_000, 'ack')).data) as Record<string, unknown>;
    expect(ack).toEqual({
      jsonrpc: '2.0',
      method: 'notifications/subscriptions/acknowledged',
      params: { notifications: { toolsListChanged: true }, _meta: { 'io.modelcontextprotocol/subscriptionId': 'sub-1' } },
    });
    await publishVisible();
    const note = JSON.parse((await listen.events.next(undefined, 15_000, 'list_changed')).data) as Record<string, unknown>;
    expect(note).toEqual({ jsonrpc: '2.0', method: 'notifications/tools/list_changed', params: { _meta: { 'io.modelcontextprotocol/subscriptionId': 'sub-1' } } });
    listen.close();
  });

  it('a session tools/call carries its progress and log notifications on its own event stream, before the result', async () => {
    const init = await post(srv.url, { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } });
    const h = { 'mcp-session-id': init.headers['mcp-session-id'] as string, 'mcp-protocol-version': '2025-11-25' };
    await post(srv.url, { jsonrpc: '2.0', method: 'notifications/initialized' }, h);
    await post(srv.url, { jsonrpc: '2.0', id: 2, method: 'logging/setLevel', params: { level: 'info' } }, h);
    const stream = await openSse(srv.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...h },
      body: JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'test.progress', arguments: {}, _meta: { progressToken: 'p-1' } } }),
    });
    const frames: Record<string, unknown>[] = [];
    for (;;) {
      const ev = await stream.events.next(undefined, 10_000, 'frame');
      const m = JSON.parse(ev.data) as Record<string, unknown>;
      frames.push(m);
      if (m.id === 3) break;
    }
    expect(frames.map((f) => f.method ?? 'result')).toEqual(['notifications/progress', 'notifications/progress', 'notifications/progress', 'notifications/message', 'result']);
    expect(frames.slice(0, 3).map((f) => (f.params as { progress: number }).progress)).toEqual([0, 50, 100]);
    expect(frames[3]?.params).toEqual({ level: 'info', logger: 'test.progress', data: 'progress handler finished' });
  });

  it('a call stream broken mid-call resumes with Last-Event-ID: what it missed, then the rest; once ended, it is replayed', async () => {
    const init = await post(srv.url, { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: { elicitation: {} }, clientInfo: { name: 'raw', version: '1' } } });
    const h = { 'mcp-session-id': init.headers['mcp-session-id'] as string, 'mcp-protocol-version': '2025-11-25' };
    await post(srv.url, { jsonrpc: '2.0', method: 'notifications/initialized' }, h);
    // The call asks its client something, so it is answered as an event stream; read up to its priming event (an id,
    // empty data), then hang up before anything else is read.
    const primingId = await new Promise<string>((resolve, reject) => {
      const req = request(srv.url, { method: 'POST', headers: { ...JSON_HEADERS, ...h } }, (res) => {
        expect(res.headers['content-type']).toContain('text/event-stream');
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          text += c;
          const m = /^id: (\S+)\ndata: \n\n/.exec(text);
          if (m) {
            req.destroy();
            resolve(m[1] as string);
          }
        });
      });
      req.on('error', (e: NodeJS.ErrnoException) => (e.code === 'ECONNRESET' ? undefined : reject(e)));
      req.end(JSON.stringify({ jsonrpc: '2.0', id: 'c1', method: 'tools/call', params: { name: 'test.elicit', arguments: { text: 'Name?' } } }));
    });
    // Reconnected while the call waits for its answer: the question it missed comes first. Until the server has seen
    // the first connection go, the stream is still taken (409), and the client tries again, as the SDK's does.
    // Bounded by a deadline, not a count of attempts: a loaded machine may take long to see the connection go.
    const until = Date.now() + 20_000;
    let resumed = await openSse(srv.url, { headers: { ...h, 'last-event-id': primingId } });
    while (resumed.status === 409 && Date.now() < until) {
      resumed.close();
      await new Promise((r) => setTimeout(r, 20));
      resumed = await openSse(srv.url, { headers: { ...h, 'last-event-id': primingId } });
    }
    expect(resumed.status).toBe(200);
    const askedEvent = await resumed.events.next(undefined, 10_000, 'the replayed elicitation/create');
    const asked = JSON.parse(askedEvent.data) as { id: string | number; method: string; params: { message: string } };
    expect(asked).toMatchObject({ method: 'elicitation/create', params: { message: 'Name?' } });
    expect(Number(askedEvent.id)).toBeGreaterThan(Number(primingId));
    // The answer to the question settles the call; its result comes on the resumed stream.
    expect((await post(srv.url, { jsonrpc: '2.0', id: asked.id, result: { action: 'accept', content: { name: 'Ada' } } }, h)).status).toBe(202);
    const resultEvent = await resumed.events.next(undefined, 10_000, 'the result');
    expect(JSON.parse(resultEvent.data)).toMatchObject({ jsonrpc: '2.0', id: 'c1', result: { content: [{ type: 'text', text: 'accept: {"name":"Ada"}' }] } });
    resumed.close();
    // The call has ended: a reconnect after the question is replayed the result from the session's buffer.
    const late = await openSse(srv.url, { headers: { ...h, 'last-event-id': askedEvent.id as string } });
    expect(late.status).toBe(200);
    expect(JSON.parse((await late.events.next(undefined, 10_000, 'the replayed result')).data)).toMatchObject({ id: 'c1', result: { content: [{ type: 'text', text: 'accept: {"name":"Ada"}' }] } });
    late.close();
  });

  it('a reconnect names only its own session\'s streams: another session\'s running call is not reachable by its event id', async () => {
    const open = async (): Promise<Record<string, string>> => {
      const init = await post(srv.url, { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: { elicitation: {} }, clientInfo: { name: 'raw', version: '1' } } });
      const h = { 'mcp-session-id': init.headers['mcp-session-id'] as string, 'mcp-protocol-version': '2025-11-25' };
      await post(srv.url, { jsonrpc: '2.0', method: 'notifications/initialized' }, h);
      return h;
    };
    const a = await open();
    const b = await open();
    await post(srv.url, { jsonrpc: '2.0', id: 2, method: 'tools/list' }, b);
    // A's call waits for its client's answer; its question carries an event id of A's buffer.
    const call = await openSse(srv.url, { method: 'POST', headers: { 'content-type': 'application/json', ...a }, body: JSON.stringify({ jsonrpc: '2.0', id: 'a1', method: 'tools/call', params: { name: 'test.elicit', arguments: { text: 'Secret?' } } }) });
    const askedEvent = await call.events.next(undefined, 10_000, "A's question");
    const asked = JSON.parse(askedEvent.data) as { id: string | number };
    // B names that id: whatever B is sent, it is B's own (here: the list_changed it is owed), never A's question.
    const intruder = await openSse(srv.url, { headers: { ...b, 'last-event-id': askedEvent.id as string } });
    if (intruder.status === 200) {
      await applied(await publishVisible());
      const first = JSON.parse((await intruder.events.next(undefined, 15_000, "B's first event")).data) as Record<string, unknown>;
      expect(first).toEqual({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' });
    } else expect(intruder.status).toBeGreaterThanOrEqual(400);
    intruder.close();
    // A still gets its answer.
    await post(srv.url, { jsonrpc: '2.0', id: asked.id, result: { action: 'decline' } }, a);
    expect(JSON.parse((await call.events.next(undefined, 10_000, "A's result")).data)).toMatchObject({ id: 'a1', result: { content: [{ type: 'text', text: 'decline: {}' }] } });
    call.close();
  });

  it('a stateless tools/call with a progressToken is answered as an event stream with its progress first', async () => {
    const meta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {}, progressToken: 9 };
    const stream = await openSse(srv.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'test.progress' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 'sp', method: 'tools/call', params: { name: 'test.progress', arguments: {}, _meta: meta } }),
    });
    expect(stream.headers['content-type']).toContain('text/event-stream');
    const frames: Record<string, unknown>[] = [];
    for (;;) {
      const m = JSON.parse((await stream.events.next(undefined, 10_000, 'frame')).data) as Record<string, unknown>;
      frames.push(m);
      if (m.id === 'sp') break;
    }
    // no log level named: no log message
    expect(frames.map((f) => f.method ?? 'result')).toEqual(['notifications/progress', 'notifications/progress', 'notifications/progress', 'result']);
    expect(frames[3]?.result).toMatchObject({ resultType: 'complete', content: [{ type: 'text', text: 'progressed' }] });
  });
});
