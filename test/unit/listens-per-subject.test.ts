/**
 * The bound on 2026-07-28 `subscriptions/listen` streams one subject holds open (ESTATE_MAX_LISTENS_PER_SUBJECT): each
 * is a connection, a transport and a watcher that every catalogue change visits. Past the bound a listen is refused
 * (429, JSON-RPC -32000 naming the setting) before anything is opened; another subject's listens go on; a closed
 * stream gives its place back.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makePrincipal } from '#domain/access';
import { aDefinition } from '../fixtures/builders.ts';
import { makeHarness } from '../fixtures/handlers/harness.ts';
import { serveMcpHttp, type McpHttpServer } from '../fixtures/mcp-http-server.ts';

let http: McpHttpServer;
const open: AbortController[] = [];

beforeAll(async () => {
  const h = await makeHarness([aDefinition({ access: { classification: 'public' } })], { 'payments.lookup': () => ({ content: [] }) });
  http = await serveMcpHttp(h.core, makePrincipal({}), {
    maxListensPerSubject: 2,
    // As authorization would: the caller's subject from its token, here from a header.
    callerOf: (req) => {
      const sent = req.headers['x-subject'];
      // No header: a principal without a subject (as without authorization).
      if (sent === undefined) return { principal: makePrincipal({}), owner: '' };
      const subject = String(sent);
      return { principal: makePrincipal({ subject }), owner: subject };
    },
  });
});

afterAll(async () => {
  for (const a of open) a.abort();
  await http.close();
});

const meta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };
let id = 0;

/** A listen request; its status, and for a stream the first event's data (the acknowledgement). */
const listen = async (subject: string | undefined): Promise<{ status: number; first: string; abort: AbortController }> => {
  const abort = new AbortController();
  open.push(abort);
  const res = await fetch(http.url, {
    method: 'POST',
    signal: abort.signal,
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'subscriptions/listen', ...(subject !== undefined ? { 'x-subject': subject } : {}) },
    body: JSON.stringify({ jsonrpc: '2.0', id: `l${++id}`, method: 'subscriptions/listen', params: { notifications: { toolsListChanged: true }, _meta: meta } }),
  });
  if (res.status !== 200 || !(res.headers.get('content-type') ?? '').includes('text/event-stream')) return { status: res.status, first: await res.text(), abort };
  const reader = (res.body as ReadableStream<Uint8Array>).getReader();
  let text = '';
  while (!text.includes('\n\n')) text += new TextDecoder().decode((await reader.read()).value);
  return { status: res.status, first: text, abort };
};

describe('subscriptions/listen streams per subject', () => {
  it('refuses a listen past the bound before opening it, lets another subject listen, and gives a closed stream its place back', async () => {
    const a1 = await listen('alice');
    const a2 = await listen('alice');
    for (const s of [a1, a2]) expect(s.first).toContain('notifications/subscriptions/acknowledged');

    const refused = await listen('alice');
    expect(refused.status).toBe(429);
    const body = JSON.parse(refused.first) as { id: string; error: { code: number; message: string } };
    expect(body.error.code).toBe(-32000);
    expect(body.error.message).toBe("Too Many Requests: subject 'alice' already has 2 subscriptions/listen streams open (at most 2, ESTATE_MAX_LISTENS_PER_SUBJECT); close one");
    expect(body.id).toBe(`l${id}`);

    expect((await listen('bob')).first).toContain('notifications/subscriptions/acknowledged');

    a1.abort.abort();
    await expect.poll(async () => (await listen('alice')).status, { timeout: 10_000 }).toBe(200);
  });

  it('counts a principal without a subject apart from one whose subject is `anonymous`', async () => {
    const held = [await listen(undefined), await listen(undefined)];
    for (const s of held) expect(s.first).toContain('notifications/subscriptions/acknowledged');
    expect((await listen(undefined)).status).toBe(429);
    const named = [await listen('anonymous'), await listen('anonymous')];
    for (const s of named) expect(s.first).toContain('notifications/subscriptions/acknowledged');
    expect((await listen('anonymous')).status).toBe(429);
    for (const s of [...held, ...named]) s.abort.abort();
  });
});
