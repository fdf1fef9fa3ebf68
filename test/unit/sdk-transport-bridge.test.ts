/**
 * Estate's node:http bridge for the SDK's web-standard transport (src/mcp/sdk-transport.ts), with the real transport on
 * a real loopback server: an event stream's head goes out before its answer exists and each piece as it comes; a client
 * that goes away ends the bridge (the transport then drops that stream's answer); a client that stops reading is dropped
 * after the stall time; a transport that throws is a 500 with a JSON-RPC error, reported to its onerror; hostile header
 * bytes break nothing.
 */
import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createSdkTransport, loadSdkTransport, serveOverNode, type SdkTransport } from '#mcp/sdk-transport';
import { createReplayStore } from '#mcp/sse-replay-store';

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
});

const serve = async (handle: (req: IncomingMessage, res: ServerResponse) => Promise<void>): Promise<number> => {
  const server = createServer((req, res) => {
    let text = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (text += c));
    req.on('end', () => {
      (req as IncomingMessage & { text: string }).text = text;
      void handle(req, res);
    });
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return (server.address() as AddressInfo).port;
};

const HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25' };
const CALL = { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'x', arguments: {} } };

/** A stateless SDK transport that hands each request to `onRequest` (which answers through the transport, or not). */
const transportFor = async (onRequest: (t: SdkTransport, id: number) => void, resumable = false): Promise<SdkTransport> => {
  await loadSdkTransport();
  // Resumable: with an event store, each stream starts with a priming event (as a session's do).
  const t = createSdkTransport({ sessionIdGenerator: undefined, supportedProtocolVersions: ['2025-11-25'], ...(resumable ? { eventStore: createReplayStore() } : {}) });
  t.onmessage = (m) => onRequest(t, (m as { id: number }).id);
  await t.start();
  return t;
};

const post = (port: number, headers: Record<string, string> = HEADERS) =>
  new Promise<IncomingMessage>((resolve, reject) => {
    const body = JSON.stringify(CALL);
    const req = request({ host: '127.0.0.1', port, method: 'POST', path: '/mcp', headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) } }, resolve);
    req.on('error', reject);
    req.end(body);
  });

const readAll = (res: IncomingMessage): Promise<string> =>
  new Promise((resolve) => {
    let text = '';
    res.setEncoding('utf8');
    res.on('data', (c: string) => (text += c));
    res.on('end', () => resolve(text));
  });

describe('the SDK transport over node:http', () => {
  it('sends an event stream\'s head before its answer exists, then the answer, then ends', async () => {
    let answer!: () => void;
    const transport = await transportFor((t, id) => {
      answer = () => void t.send({ jsonrpc: '2.0', id, result: { content: [{ type: 'text', text: 'done' }] } }, { relatedRequestId: id });
    });
    let served!: Promise<void>;
    const port = await serve((req, res) => (served = serveOverNode(transport, req, res, CALL)));
    const res = await post(port);
    // The head arrived while the answer is still withheld: nothing waits for the first pieces.
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toContain('text/event-stream');
    const body = readAll(res);
    answer();
    const text = await body;
    expect(text).toContain('"result":{"content":[{"type":"text","text":"done"}]}');
    expect(text).toContain('event: message');
    await served;
  });

  it('sends the head and priming event of a call that is still running at once, before its answer', async () => {
    let answer!: () => void;
    const transport = await transportFor((t, id) => {
      answer = () => void t.send({ jsonrpc: '2.0', id, result: { content: [] } }, { relatedRequestId: id });
    }, true);
    let served!: Promise<void>;
    const port = await serve((req, res) => (served = serveOverNode(transport, req, res, CALL)));
    // The answer is withheld: the head and the priming event still arrive, before it.
    const res = await post(port);
    expect(res.statusCode).toBe(200);
    const firstPiece = await new Promise<string>((resolve) => res.once('data', (c: Buffer) => resolve(c.toString())));
    expect(firstPiece).toMatch(/^id: .+\ndata: \n\n$/);
    const rest = readAll(res);
    answer();
    expect(await rest).toContain('"id":7');
    await served;
  });

  it('ends when the client goes away mid-stream; a later answer is dropped, not thrown', async () => {
    let answer!: () => Promise<void>;
    const transport = await transportFor((t, id) => {
      answer = () => t.send({ jsonrpc: '2.0', id, result: { content: [] } }, { relatedRequestId: id });
    });
    let served!: Promise<void>;
    const port = await serve((req, res) => (served = serveOverNode(transport, req, res, CALL)));
    const res = await post(port);
    expect(res.statusCode).toBe(200);
    res.destroy();
    await served;
    // The bridge ended (it resolved above) and cancelled the stream, so the transport drops the answer quietly.
    await expect(answer()).resolves.toBeUndefined();
  });

  it('drops a client that stops reading once it has read nothing for the stall time, and ends', async () => {
    let flood!: () => Promise<void>;
    const transport = await transportFor((t, id) => {
      flood = async () => {
        for (let i = 0; i < 2000; i++) await t.send({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: `${i}:${'x'.repeat(8 * 1024)}` } }, { relatedRequestId: id });
      };
    });
    let served!: Promise<void>;
    let response!: ServerResponse;
    const port = await serve((req, res) => {
      response = res;
      return (served = serveOverNode(transport, req, res, CALL, { stallMs: 200 }));
    });
    const res = await post(port);
    res.pause(); // and never read again
    await flood(); // 16 MB: more than the sockets' buffers hold
    await served;
    expect(response.destroyed).toBe(true);
  });

  it('answers 500 with a JSON-RPC error when the transport throws, and tells its onerror', async () => {
    const errors: Error[] = [];
    const broken = {
      handleRequest: () => Promise.reject(new Error('transport broke')),
      onerror: (e: Error) => errors.push(e),
    } as unknown as SdkTransport;
    const port = await serve((req, res) => serveOverNode(broken, req, res, CALL));
    const res = await post(port);
    expect(res.statusCode).toBe(500);
    expect(JSON.parse(await readAll(res))).toEqual({ jsonrpc: '2.0', error: { code: -32603, message: 'Internal error' }, id: null });
    expect(errors.map((e) => e.message)).toEqual(['transport broke']);
  });

  it('serves a request whose header carries bytes beyond ASCII', async () => {
    const transport = await transportFor((t, id) => void t.send({ jsonrpc: '2.0', id, result: { content: [] } }, { relatedRequestId: id }));
    const port = await serve((req, res) => serveOverNode(transport, req, res, CALL));
    const res = await post(port, { ...HEADERS, 'x-note': 'caf\u00e9 \u00ff' });
    expect(res.statusCode).toBe(200);
    expect(await readAll(res)).toContain('"id":7');
  });

  it('answers a refusal of the transport\'s own (a missing Accept) whole, with its length', async () => {
    const transport = await transportFor(() => undefined);
    const port = await serve((req, res) => serveOverNode(transport, req, res, CALL));
    const res = await post(port, { 'content-type': 'application/json', 'mcp-protocol-version': '2025-11-25' });
    const text = await readAll(res);
    expect(res.statusCode).toBe(406);
    expect(res.headers['content-length']).toBe(String(Buffer.byteLength(text)));
    expect(JSON.parse(text)).toMatchObject({ jsonrpc: '2.0', error: { code: -32000 } });
  });
});
