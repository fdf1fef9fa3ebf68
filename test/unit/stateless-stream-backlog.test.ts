/**
 * A 2026-07-28 tools/call answered as an event stream (it asked for log messages) to a client that stops reading: the
 * process holds at most MAX_UNSENT_BYTES of its notifications for it (the rest are dropped; a stateless stream has
 * nothing to resume from), the answer still reaches it, and a client that keeps reading is sent every one. In process,
 * on a real loopback server, so the server's own buffers can be read.
 */
import { request, type IncomingMessage, type ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makePrincipal } from '#domain/access';
import { MAX_UNSENT_BYTES } from '#http/unsent';
import { aDefinition } from '../fixtures/builders.ts';
import { makeHarness } from '../fixtures/handlers/harness.ts';
import { serveMcpHttp, type McpHttpServer } from '../fixtures/mcp-http-server.ts';

const LINES = 1000; // a call's bound on log lines
const LINE = 'x'.repeat(8000); // under a line's bound of 8,192 characters

let http: McpHttpServer;
let port: number;
/** The server side of each stream, by the client's x-client header. */
const responses = new Map<string, ServerResponse>();
/** Lets the handler answer once the test has looked at the server's buffers. */
const answers = new Map<string, () => void>();
const logged = new Map<string, number>();
let peak = 0;

beforeAll(async () => {
  const h = await makeHarness([aDefinition({ access: { classification: 'public' } })], {
    'payments.lookup': async (args, ctx) => {
      const who = String(args.reference);
      for (let i = 0; i < LINES; i++) {
        ctx.log.info(`${i}:${LINE}`);
        logged.set(who, i + 1);
        const res = responses.get(who);
        if (res) peak = Math.max(peak, res.writableLength);
        await new Promise((r) => setImmediate(r)); // as an upstream's lines come: between reads of its socket
      }
      await new Promise<void>((r) => answers.set(who, r));
      return { content: [{ type: 'text', text: `done ${who}` }] };
    },
  });
  http = await serveMcpHttp(h.core, makePrincipal({}), { onRequest: (req, res) => responses.set(String(req.headers['x-client']), res) });
  port = http.port;
});

afterAll(() => http.close());

/** A stateless tools/call that asks for log messages; the response, paused (nothing read until the test resumes it). */
const call = (who: string): Promise<IncomingMessage> => {
  const meta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {}, 'io.modelcontextprotocol/logLevel': 'info' };
  const body = JSON.stringify({ jsonrpc: '2.0', id: who, method: 'tools/call', params: { name: 'payments.lookup', arguments: { reference: who }, _meta: meta } });
  const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'payments.lookup', 'x-client': who };
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method: 'POST', path: '/mcp', headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) } }, (res) => {
      res.pause();
      resolve(res);
    });
    req.on('error', reject);
    req.end(body);
  });
};

/** Reads the rest of a response: the log lines' numbers and the answer. */
const readRest = (res: IncomingMessage): Promise<{ lines: number[]; answer: unknown }> =>
  new Promise((resolve) => {
    let text = '';
    res.setEncoding('utf8');
    res.on('data', (c: string) => (text += c));
    res.on('end', () => {
      const messages = [...text.matchAll(/^data: (.+)$/gm)].map((m) => JSON.parse(m[1] as string) as { method?: string; params?: { data?: string }; result?: unknown });
      const lines = messages.filter((m) => m.method === 'notifications/message').map((m) => Number(String(m.params?.data).split(':')[0]));
      resolve({ lines, answer: messages.find((m) => m.result !== undefined)?.result });
    });
    res.resume();
  });

describe('a stateless call stream to a client that stops reading', () => {
  it('holds at most MAX_UNSENT_BYTES of its notifications for it, drops the rest, and still sends the answer', async () => {
    peak = 0;
    const res = await call('PMT-001');
    await expect.poll(() => logged.get('PMT-001'), { timeout: 30_000 }).toBe(LINES);
    // 8 MB of lines were sent while it read nothing: Node's buffer for its socket stayed within the bound (and what the
    // transport held for it too: the lines past the bound were dropped, below).
    expect(peak).toBeLessThanOrEqual(MAX_UNSENT_BYTES + 9 * 1024);
    (answers.get('PMT-001') as () => void)();
    const { lines, answer } = await readRest(res);
    expect(answer).toMatchObject({ content: [{ type: 'text', text: 'done PMT-001' }] });
    // It got what the sockets' buffers and the bound held, in order, and not the rest.
    expect(lines.length).toBeGreaterThan(0);
    expect(lines.length).toBeLessThan(LINES);
    expect(lines.every((n, k) => k === 0 || n > (lines[k - 1] as number))).toBe(true);
  }, 60_000);

  it('a client that keeps reading is sent every line and the answer', async () => {
    const res = await call('PMT-002');
    const rest = readRest(res);
    await expect.poll(() => logged.get('PMT-002'), { timeout: 30_000 }).toBe(LINES);
    (answers.get('PMT-002') as () => void)();
    const { lines, answer } = await rest;
    expect(answer).toMatchObject({ content: [{ type: 'text', text: 'done PMT-002' }] });
    expect(lines).toEqual(Array.from({ length: LINES }, (_, k) => k));
  }, 60_000);
});
