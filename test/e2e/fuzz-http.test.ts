/**
 * 2,000 random HTTP requests to ONE `estate serve --http`: well-formed ones (some with one header knocked out) and
 * anything at all — random verbs, headers (content type, protocol version, session id, Mcp-Method/Mcp-Name) and bodies (JSON-RPC, stateless `_meta`, batches, any JSON, bytes, oversized). It
 * must never fail with a 5xx or die, and every JSON-RPC message it sends back — a JSON body or an SSE `data:` line —
 * must be valid JSON-RPC. Seeded by fast-check; the seed is printed on failure (ESTATE_FUZZ_SEED replays).
 */
import fc from 'fast-check';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTempStore, runCli, startHttpServer, type HttpServer, type TempStore } from './helpers.ts';
import { lookupV1, PRINCIPAL_FLAGS } from './sdk-fixtures.ts';

const REQUESTS = 2000;
const CONCURRENCY = 8;
/** A GET stream or a subscriptions/listen POST stays open by design: read what came, then stop. */
const STREAM_WINDOW_MS = 250;
/** Any other request must be answered completely; one that is not within this long has hung, and fails the test. */
const HANG_MS = 30_000;
const FIXTURES = fileURLToPath(new URL('./sdk-fixtures.ts', import.meta.url));
const SEED = process.env.ESTATE_FUZZ_SEED ? Number(process.env.ESTATE_FUZZ_SEED) : Date.now() % 2_147_483_647;

interface Shot {
  method: string;
  headers: Record<string, string>;
  body?: string;
  /** A well-formed notification with every header right: it must never be answered. */
  notification?: boolean;
}

const META = (version: string) => ({ 'io.modelcontextprotocol/protocolVersion': version, 'io.modelcontextprotocol/clientCapabilities': {} });
const METHODS = ['initialize', 'ping', 'tools/list', 'tools/call', 'server/discover', 'subscriptions/listen', 'logging/setLevel', 'notifications/initialized', 'notifications/cancelled'];

const body = (i: number, sessionRevision: fc.Arbitrary<string>): fc.Arbitrary<string> =>
  fc.oneof(
    {
      weight: 6,
      arbitrary: fc
        .record({
          method: fc.oneof(fc.constantFrom(...METHODS), fc.string()),
          withId: fc.boolean(),
          stateless: fc.option(sessionRevision, { nil: undefined }),
          name: fc.constantFrom('payments.lookup', 'no.such', ''),
          args: fc.oneof(fc.constant({ reference: 'PMT-771' }), fc.dictionary(fc.string(), fc.jsonValue())),
          extra: fc.jsonValue(),
        })
        .map((r) =>
          JSON.stringify({
            jsonrpc: '2.0',
            ...(r.withId ? { id: i } : {}),
            method: r.method,
            params: {
              ...(r.method === 'tools/call' ? { name: r.name, arguments: r.args } : {}),
              ...(r.method === 'initialize' ? { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'fuzz', version: '1' } } : {}),
              ...(r.method === 'subscriptions/listen' ? { notifications: { toolsListChanged: true } } : {}),
              ...(r.stateless ? { _meta: META(r.stateless) } : {}),
              ...(typeof r.extra === 'object' && r.extra !== null && !Array.isArray(r.extra) ? { x: r.extra } : {}),
            },
          }),
        ),
    },
    { weight: 2, arbitrary: fc.jsonValue().map((v) => JSON.stringify(v) ?? 'null') },
    { weight: 1, arbitrary: fc.array(fc.constantFrom(...METHODS), { maxLength: 3 }).map((ms) => JSON.stringify(ms.map((method, k) => ({ jsonrpc: '2.0', id: `${i}-${k}`, method })))) },
    { weight: 2, arbitrary: fc.oneof(fc.string(), fc.constantFrom('{', '[1,', '', 'null', '{"jsonrpc":"2.0","id":1,"method":')) },
    { weight: 1, arbitrary: fc.constant(0).map(() => JSON.stringify({ jsonrpc: '2.0', id: i, method: 'ping', params: { pad: 'z'.repeat(1_100_000) } })) },
  );

/** A well-formed stateless (2026-07-28) or session (2025-11-25) request, its headers agreeing with its body. */
const coherent = (i: number, sessionId: string): fc.Arbitrary<Shot> =>
  fc
    .record({
      stateless: fc.boolean(),
      method: fc.constantFrom('tools/list', 'tools/call', 'tools/call', 'ping', 'server/discover', 'notifications/initialized', 'subscriptions/listen'),
      args: fc.oneof(fc.constant({ reference: 'PMT-771' }), fc.record({ reference: fc.string(), include_legs: fc.jsonValue() }, { requiredKeys: [] }), fc.dictionary(fc.string(), fc.jsonValue())),
      name: fc.constantFrom('payments.lookup', 'payments.lookup', 'no.such'),
    })
    .map((r) => {
      const notification = r.method.startsWith('notifications/');
      const params: Record<string, unknown> = {
        ...(r.method === 'tools/call' ? { name: r.name, arguments: r.args } : {}),
        ...(r.method === 'subscriptions/listen' ? { notifications: { toolsListChanged: true } } : {}),
        ...(r.stateless ? { _meta: META('2026-07-28') } : {}),
      };
      const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
      if (r.stateless) {
        headers['mcp-protocol-version'] = '2026-07-28';
        headers['mcp-method'] = r.method;
        if (r.method === 'tools/call') headers['mcp-name'] = r.name;
      } else {
        headers['mcp-protocol-version'] = '2025-11-25';
        headers['mcp-session-id'] = sessionId;
      }
      return { method: 'POST', headers, notification, body: JSON.stringify({ jsonrpc: '2.0', ...(notification ? {} : { id: i }), method: r.method, params }) };
    });

/** Anything: random verbs, headers and bodies. */
const chaos = (i: number, sessionId: string): fc.Arbitrary<Shot> =>
  fc
    .record({
      verb: fc.constantFrom('POST', 'POST', 'POST', 'POST', 'POST', 'POST', 'POST', 'POST', 'GET', 'DELETE', 'PUT'),
      contentType: fc.constantFrom('application/json', 'application/json', 'application/json; charset=utf-8', 'text/plain', undefined),
      accept: fc.constantFrom('application/json, text/event-stream', 'application/json, text/event-stream', 'application/json', 'text/event-stream', undefined),
      version: fc.constantFrom('2026-07-28', '2025-11-25', '2025-03-26', 'v999', undefined),
      session: fc.constantFrom(sessionId, sessionId, 'not-a-session', undefined),
      mcpMethod: fc.option(fc.oneof(fc.constantFrom(...METHODS), fc.string({ unit: 'grapheme-ascii' })), { nil: undefined }),
      mcpName: fc.option(fc.constantFrom('payments.lookup', 'other'), { nil: undefined }),
      body: body(i, fc.constantFrom('2026-07-28', '2025-11-25', 'v999')),
    })
    .map((r) => {
      const headers: Record<string, string> = {};
      if (r.contentType) headers['content-type'] = r.contentType;
      if (r.accept) headers.accept = r.accept;
      if (r.version) headers['mcp-protocol-version'] = r.version;
      if (r.session) headers['mcp-session-id'] = r.session;
      if (r.mcpMethod) headers['mcp-method'] = r.mcpMethod.replace(/[^\x20-\x7e]/g, '');
      if (r.mcpName) headers['mcp-name'] = r.mcpName;
      return { method: r.verb, headers, ...(r.verb === 'POST' || r.verb === 'PUT' ? { body: r.body } : {}) };
    });

/** Half well-formed (some with one header knocked out), half anything: both the happy path and the gates get hit. */
const shot = (i: number, sessionId: string, chaosSessionId: string): fc.Arbitrary<Shot> =>
  fc.oneof(
    { weight: 3, arbitrary: coherent(i, sessionId) },
    {
      weight: 2,
      arbitrary: fc.tuple(coherent(i, sessionId), fc.constantFrom('content-type', 'accept', 'mcp-protocol-version', 'mcp-session-id', 'mcp-method', 'mcp-name')).map(([s, drop]) => {
        const headers = { ...s.headers };
        delete headers[drop];
        return { ...s, headers, notification: false };
      }),
    },
    // Its own session: a random DELETE may end it, and the well-formed requests must keep theirs.
    { weight: 5, arbitrary: chaos(i, chaosSessionId) },
  );

const validMessage = (m: unknown): string | undefined => {
  if (Array.isArray(m)) return m.length > 0 ? m.map(validMessage).find((p) => p !== undefined) : 'empty batch';
  if (typeof m !== 'object' || m === null) return 'not an object';
  const o = m as Record<string, unknown>;
  if (o.jsonrpc !== '2.0') return 'jsonrpc is not "2.0"';
  if ('method' in o) return !('id' in o) && typeof o.method === 'string' && o.method.startsWith('notifications/') ? undefined : 'not a server notification';
  if (!(typeof o.id === 'string' || typeof o.id === 'number' || o.id === null)) return 'bad id';
  if (('result' in o) === ('error' in o)) return 'needs exactly one of result and error';
  if ('error' in o) {
    const e = o.error as Record<string, unknown> | null;
    if (!e || !Number.isInteger(e.code) || typeof e.message !== 'string') return 'malformed error';
  }
  return undefined;
};

/** Every JSON-RPC message in a response body: the whole body for JSON, each `data:` line for SSE. */
const messagesIn = (contentType: string, text: string): string[] => {
  if (contentType.includes('text/event-stream')) {
    return text
      .split('\n')
      .filter((l) => l.startsWith('data:'))
      .map((l) => l.slice(5).trim())
      .filter((d) => d.length > 0);
  }
  return contentType.includes('json') && text.trim().length > 0 ? [text] : [];
};

describe('fuzz: 2,000 random HTTP requests into one estate serve --http', () => {
  let store: TempStore;
  let server: HttpServer;

  beforeAll(async () => {
    store = makeTempStore('estate-fuzz-http-');
    const r = await runCli(['publish', store.file('lookup.json', lookupV1), '--store', store.store]);
    if (r.code !== 0) throw new Error(r.stderr);
    server = await startHttpServer(['--store', store.store, '--handlers', FIXTURES, ...PRINCIPAL_FLAGS], { env: { ESTATE_LOG_LEVEL: 'info' } });
  }, 60_000);

  afterAll(async () => {
    await server?.stop();
    store?.cleanup();
  });

  it('never answers 5xx or dies, and every JSON-RPC message it sends is valid', async () => {
    const context = `seed ${SEED} (replay with ESTATE_FUZZ_SEED=${SEED})`;
    const session = async (): Promise<string> => {
      const init = await fetch(server.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'fuzz', version: '1' } } }),
      });
      await init.text();
      const id = init.headers.get('mcp-session-id');
      if (!id) throw new Error(`initialize gave no session (HTTP ${init.status})`);
      await fetch(server.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-session-id': id, 'mcp-protocol-version': '2025-11-25' },
        body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
      }).then((r) => r.text());
      return id;
    };
    const [sessionId, chaosSessionId] = [await session(), await session()];
    const shots = Array.from({ length: REQUESTS }, (_, i) => fc.sample(shot(i + 1, sessionId, chaosSessionId), { numRuns: 1, seed: SEED + i })[0] as Shot);

    const problems: string[] = [];
    const statuses = new Map<number, number>();
    let judged = 0;
    let streamsCut = 0;
    let next = 0;
    /** Only these may stay open: a GET stream, and a POST that opens subscriptions/listen. */
    const mayStayOpen = (s: Shot): boolean => s.method === 'GET' || (s.body ?? '').includes('subscriptions/listen');
    const fire = async (s: Shot): Promise<void> => {
      const what = `${s.method} ${JSON.stringify(s.headers)} ${String(s.body).slice(0, 200)}`;
      const ac = new AbortController();
      let hung = false;
      const hang = setTimeout(() => {
        hung = true;
        ac.abort();
      }, HANG_MS);
      let windowTimer: NodeJS.Timeout | undefined;
      let status = 0;
      let text = '';
      let contentType = '';
      try {
        const res = await fetch(server.url, { method: s.method, headers: s.headers, body: s.body, signal: ac.signal });
        status = res.status;
        contentType = res.headers.get('content-type') ?? '';
        // A stream that may stay open by design is read for a window from its headers on, then judged on what came.
        if (contentType.includes('text/event-stream') && mayStayOpen(s)) windowTimer = setTimeout(() => ac.abort(), STREAM_WINDOW_MS);
        const reader = res.body?.getReader();
        const decoder = new TextDecoder();
        try {
          for (;;) {
            const { value, done } = (await reader?.read()) ?? { done: true, value: undefined };
            if (done) break;
            text += decoder.decode(value, { stream: true });
          }
        } catch (e) {
          if (hung || !ac.signal.aborted) throw e;
          // the window closed on an open stream: judge what arrived; a partial last line is dropped below
          streamsCut++;
          text = text.slice(0, text.lastIndexOf('\n') + 1);
        }
      } catch (e) {
        problems.push(hung ? `no complete answer within ${HANG_MS} ms (HTTP ${status || 'none'}): ${what}` : `${s.method} failed: ${String(e)} ${String((e as { cause?: unknown }).cause ?? '')}: ${what}`);
        return;
      } finally {
        clearTimeout(hang);
        clearTimeout(windowTimer);
      }
      judged++;
      statuses.set(status, (statuses.get(status) ?? 0) + 1);
      if (s.notification && (status !== 202 || messagesIn(contentType, text).length > 0)) problems.push(`a notification was answered (HTTP ${status}): ${text.slice(0, 200)}`);
      if (status >= 500) problems.push(`HTTP ${status} for ${s.method} ${JSON.stringify(s.headers)} ${String(s.body).slice(0, 200)}: ${text.slice(0, 200)}`);
      for (const raw of messagesIn(contentType, text)) {
        let m: unknown;
        try {
          m = JSON.parse(raw);
        } catch {
          problems.push(`not JSON (${contentType}): ${raw.slice(0, 200)}`);
          continue;
        }
        const p = validMessage(m);
        if (p) problems.push(`${p}: ${raw.slice(0, 200)}`);
      }
    };
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next < shots.length) await fire(shots[next++] as Shot);
      }),
    );

    expect(server.child.exitCode, `the server exited (${context})`).toBeNull();
    const alive = await fetch(server.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'server/discover' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 'alive', method: 'server/discover', params: { _meta: META('2026-07-28') } }),
    });
    expect(alive.status, context).toBe(200);
    expect(problems.slice(0, 10), context).toEqual([]);
    // Every request was answered and judged: none dropped for being slow (a hang is a problem above).
    expect(judged, context).toBe(REQUESTS);
    console.log(`fuzz-http (${context}): ${judged} of ${shots.length} requests judged (${streamsCut} open streams read for ${STREAM_WINDOW_MS} ms); statuses ${JSON.stringify(Object.fromEntries([...statuses].sort()))}`);
  }, 120_000);
});
