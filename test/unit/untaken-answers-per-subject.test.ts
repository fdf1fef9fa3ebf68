/**
 * The bound on answers one subject's clients leave untaken (ESTATE_MAX_UNTAKEN_BYTES_PER_SUBJECT): an answer that
 * its client does not read is held (until taken, or dropped after 30 s of nothing taken), so a caller that never reads
 * could otherwise go on making answers for the server to hold, call after call. Real sockets on loopback: a client
 * sends 2026-07-28 tools/calls answered with 16 MiB each and reads none of them; once what it left untaken passes the
 * bound, its next call is refused (HTTP 429, -32051, retryable) before the handler runs, while another subject's calls
 * go on; once it reads its answers, it may call again.
 */
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makePrincipal } from '#domain/access';
import { TOO_MANY_CALLS } from '#mcp/jsonrpc';
import { aDefinition } from '../fixtures/builders.ts';
import { errorOf, makeHarness, resultOf, type Harness } from '../fixtures/handlers/harness.ts';
import { serveMcpHttp, type McpHttpServer } from '../fixtures/mcp-http-server.ts';

const ANSWER_TEXT = 'x'.repeat(16 * 1024 * 1024);
const MAX = 8 * 1024 * 1024;
let h: Harness;
let http: McpHttpServer;
let ran = 0;
const sockets: Socket[] = [];

beforeAll(async () => {
  h = await makeHarness(
    [aDefinition({ access: { classification: 'public' } })],
    {
      'payments.lookup': async () => {
        ran++;
        return { content: [{ type: 'text', text: ANSWER_TEXT }] };
      },
    },
    { maxUntakenBytesPerSubject: MAX },
  );
  http = await serveMcpHttp(h.core, makePrincipal({ subject: 'anonymous' }), {
    callerOf: (req) => ({ principal: makePrincipal({ subject: String(req.headers['x-subject']) }), owner: String(req.headers['x-subject']) }),
  });
});
afterAll(async () => {
  for (const s of sockets) s.destroy();
  await http.close();
});

const body = (id: number): string =>
  JSON.stringify({
    jsonrpc: '2.0',
    id,
    method: 'tools/call',
    params: {
      name: 'payments.lookup',
      arguments: { reference: `PMT-${1000 + id}` },
      _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} },
    },
  });
const headers = (subject: string) => ({
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
  'mcp-protocol-version': '2026-07-28',
  'mcp-method': 'tools/call',
  'mcp-name': 'payments.lookup',
  'x-subject': subject,
});

/** A call whose client reads its answer. */
const call = async (subject: string, id: number): Promise<{ status: number; json: { error?: { code: number; message: string; data?: unknown } } }> => {
  const r = await fetch(http.url, { method: 'POST', headers: headers(subject), body: body(id) });
  return { status: r.status, json: (await r.json()) as { error?: { code: number; message: string } } };
};

/** A call whose client reads nothing: resolves once the handler has run (and its answer is being written). */
const callUnread = async (subject: string, id: number): Promise<Socket> => {
  const before = ran;
  const s = connect(http.port, '127.0.0.1');
  sockets.push(s);
  s.pause();
  const text = body(id);
  const head = Object.entries({ ...headers(subject), host: '127.0.0.1', 'content-length': String(Buffer.byteLength(text)) })
    .map(([k, v]) => `${k}: ${v}`)
    .join('\r\n');
  s.write(`POST /mcp HTTP/1.1\r\n${head}\r\n\r\n${text}`);
  await expect.poll(() => ran, { timeout: 10_000 }).toBeGreaterThan(before);
  return s;
};

describe('answers left untaken, per subject', () => {
  it('refuses the calls of a subject that leaves more than its bound unread, serves others meanwhile, and serves it again once it reads', { timeout: 60_000 }, async () => {
    // Calls whose answers erin never reads, until one is refused (the kernel takes some MiB of each on loopback).
    let refused: Awaited<ReturnType<typeof call>> | undefined;
    const unread: Socket[] = [];
    for (let id = 1; id <= 10 && refused === undefined; id++) {
      unread.push(await callUnread('erin', id));
      const ranBefore = ran;
      const probe = await call('erin', 100 + id);
      if (probe.status === 429) {
        refused = probe;
        expect(ran).toBe(ranBefore); // refused before its handler ran
      } else expect(probe.status).toBe(200);
    }
    expect(refused, 'a call refused within 10 unread answers of 16 MiB').toBeDefined();
    expect(refused?.json.error?.code).toBe(TOO_MANY_CALLS);
    expect(refused?.json.error?.message).toMatch(/^Too many answers unread: subject 'erin' has left \d+ bytes of answers untaken \(at most 8388608, ESTATE_MAX_UNTAKEN_BYTES_PER_SUBJECT\); read them, then try again$/);
    expect(refused?.json.error?.data).toEqual({ retryable: true });

    // Another subject is not held to erin's unread answers.
    expect((await call('frank', 200)).status).toBe(200);

    // Erin reads what she left: each answer is taken whole, and she may call again.
    for (const s of unread) s.resume();
    await expect.poll(async () => (await call('erin', 300)).status, { timeout: 20_000, interval: 100 }).toBe(200);
  });

  it('charges a principal without a subject apart from one whose subject is `anonymous`', async () => {
    // The account the HTTP front end charges (#http/unsent), held directly: what one leaves untaken is not the other's.
    const none = makePrincipal({ tenant: 'initech' });
    const named = makePrincipal({ tenant: 'initech', subject: 'anonymous' });
    const session = async (p: typeof none) => {
      const s = h.session(p);
      await s.initialize();
      return s;
    };
    const [noneSession, namedSession] = [await session(none), await session(named)];
    const lookup = { name: 'payments.lookup', arguments: { reference: 'PMT-900' } };
    for (const [holder, holderSession, otherSession] of [
      [none, noneSession, namedSession],
      [named, namedSession, noneSession],
    ] as const) {
      const giveBack = h.core.untakenAccount(holder).hold(MAX + 1);
      try {
        expect(errorOf(await holderSession.request('tools/call', lookup)).code).toBe(TOO_MANY_CALLS);
        expect(resultOf(await otherSession.request('tools/call', lookup)).isError).toBeUndefined();
      } finally {
        giveBack();
      }
    }
  });
});
