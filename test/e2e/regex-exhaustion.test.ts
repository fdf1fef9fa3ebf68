/**
 * Issue 9, High 1 and its weaknesses, against the real `estate serve --http` with tokens: a hostile /v1/check is
 * refused 403 before anything is compiled when its namespace is not the caller's, and with the right namespace it is
 * refused within the time budget while tools/list keeps being answered; in-place `$ref` cycles are refused at publish;
 * a 90,000-value enum is not echoed whole; a frame nested 400,000 deep is refused before it is parsed.
 * Timings are printed, never asserted (only orderings: an answer that came BEFORE another one).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestIssuer, type TestIssuer } from '../fixtures/jwks.ts';
import { makeTempStore, startHttpServer, startStdioServer, toolDefinition, type HttpServer, type TempStore } from './helpers.ts';

const AUDIENCE = 'https://estate.test/mcp';
const META = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };
const BUDGET_MS = 1000;

const post = async (url: string, body: unknown, token: string, headers: Record<string, string> = {}) => {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${token}`, ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, text, json: () => JSON.parse(text) as Record<string, unknown> };
};

/** The probe's definition: `count` properties with patterns like `^(a{1,400}b){1,2}b<i>$` (19 KB at 300). */
export const hostileDefinition = (name: string, count: number, extra: Record<string, unknown> = {}): Record<string, unknown> => {
  const properties: Record<string, unknown> = {};
  for (let i = 0; i < count; i++) properties[`p${i}`] = { type: 'string', pattern: `^(a{1,400}b){1,2}b${i}$` };
  return toolDefinition({ name, handler: name, inputSchema: { type: 'object', properties, ...extra } });
};

describe('regex engine exhaustion and friends, over HTTP', { timeout: 180_000 }, () => {
  let tmp: TempStore;
  let idp: TestIssuer;
  let srv: HttpServer;
  let base: string;
  const token = (sub: string, scope: string) => idp.mint({ claims: { sub, scope, tenant: undefined, clearance: undefined } });
  const list = async (t: string) =>
    post(srv.url, { jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: META } }, t, { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/list' });
  /** Calls a tool just published, once the server's view has it (the view follows the store: no fixed wait). */
  const callTool = async (t: string, name: string, args: unknown) => {
    for (let i = 0; ; i++) {
      const r = await callOnce(t, name, args);
      if (!r.text.includes(`Unknown tool: ${name}`) || i === 500) return r;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  };
  const callOnce = async (t: string, name: string, args: unknown) =>
    post(srv.url, { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name, arguments: args, _meta: META } }, t, {
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': 'tools/call',
      'mcp-name': name,
    });

  beforeAll(async () => {
    tmp = makeTempStore('estate-regex-');
    idp = await startTestIssuer(AUDIENCE);
    srv = await startHttpServer(['--demo', '--store', tmp.store, '--auth-issuer', idp.issuer, '--auth-jwks-url', idp.jwksUrl, '--auth-audience', AUDIENCE], {
      // A short list TTL: tools published here are called here, as soon as the view has them.
      env: { ESTATE_SCHEMA_BUDGET_MS: String(BUDGET_MS), ESTATE_LIST_TTL_MS: '20' },
    });
    base = new URL('/', srv.url).href.replace(/\/$/, '');
    // Tools published here run the demo's fx.rates handler: a tool whose handler is not bound is unknown to callers.
    const ci = await token('ci-fx', 'estate:publish:fx');
    const lookup = toolDefinition({
      name: 'fx.lookup',
      handler: 'fx.rates',
      inputSchema: { type: 'object', properties: { reference: { type: 'string', pattern: '^(PAY|REF)-[0-9]{4,8}$' } }, required: ['reference'], additionalProperties: false },
    });
    const published = await post(`${base}/v1/tools`, lookup, ci);
    expect(published.status, published.text).toBe(201);
  });
  afterAll(async () => {
    await srv?.stop();
    await idp?.close();
    tmp?.cleanup();
  });

  it('a /v1/check for a namespace the token lacks is refused 403 before any of its body is checked or compiled', async () => {
    // Besides 300 costly patterns, the body breaks two rules that checking would report (422): a bad version and a
    // pattern RE2 refuses. A 403 means nothing was checked before the namespace was.
    const body = hostileDefinition('payments.attack', 300, { patternProperties: { '(?=x)': { type: 'string' } } });
    body.version = 'not-semver';
    const r = await post(`${base}/v1/check`, body, await token('ci-cards', 'estate:publish:cards'));
    expect(r.status).toBe(403);
    expect(r.json()).toEqual({ error: { code: 'insufficient_scope', message: 'Forbidden: checking payments.attack needs the scope estate:publish:payments' } });
  });

  it('with the right namespace the hostile check is refused within the budget, and tools/list is answered meanwhile', async () => {
    const reader = await token('agent', '');
    // Warm up the worker so its start-up is not counted in either direction.
    expect((await post(`${base}/v1/check`, toolDefinition({ name: 'payments.warm', handler: 'payments.warm' }), await token('ci', 'estate:publish:payments'))).status).toBe(200);
    const ci = await token('ci-payments', 'estate:publish:payments');
    let checkDone = false;
    const sent = Date.now();
    const check = post(`${base}/v1/check`, hostileDefinition('payments.attack', 1000), ci).finally(() => (checkDone = true));
    let listsBefore = 0;
    let maxGap = 0;
    while (!checkDone) {
      const t0 = performance.now();
      const l = await list(reader);
      maxGap = Math.max(maxGap, performance.now() - t0);
      expect(l.status).toBe(200);
      if (!checkDone) listsBefore++;
    }
    const r = await check;
    console.log(`hostile check (1000 patterns, budget ${BUDGET_MS} ms): ${r.status} after ${Date.now() - sent} ms; ${listsBefore} tools/list answered meanwhile, slowest ${maxGap.toFixed(1)} ms`);
    expect(r.status).toBe(422);
    expect(r.json()).toMatchObject({ result: 'refused', name: 'payments.attack', error: { code: 'schema-too-costly' } });
    // Sequential lists: had the check blocked the event loop, at most the one already in flight would have been answered.
    expect(listsBefore).toBeGreaterThanOrEqual(3);
    // The server still checks and serves afterwards.
    expect((await post(`${base}/v1/check`, toolDefinition({ name: 'payments.after', handler: 'payments.after' }), ci)).status).toBe(200);
  });

  it('classifying a new version against its baseline runs under the same budget: a costly change is refused, tools/list answered meanwhile', async () => {
    // Cheap to check (Ajv ignores descriptions), costly to classify: 400 anyOf branches compared pairwise, each
    // comparison reading 1.5 KB descriptions. On the event loop this took 8 to 10 s and then published.
    const wide = (version: string, v: number) =>
      toolDefinition({
        name: 'payments.wide',
        version,
        handler: 'payments.wide',
        inputSchema: { type: 'object', properties: { x: { anyOf: Array.from({ length: 400 }, (_, k) => ({ description: `${k}:${v}:${'d'.repeat(1500)}` })) } } },
      });
    const ci = await token('ci-payments', 'estate:publish:payments');
    const first = await post(`${base}/v1/tools`, wide('1.0.0', 0), ci);
    expect(first.status, first.text).toBe(201);
    const reader = await token('agent', '');
    let done = false;
    const sent = Date.now();
    const publish = post(`${base}/v1/tools`, wide('2.0.0', 1), ci).finally(() => (done = true));
    let listsBefore = 0;
    let maxGap = 0;
    while (!done) {
      const t0 = performance.now();
      expect((await list(reader)).status).toBe(200);
      maxGap = Math.max(maxGap, performance.now() - t0);
      if (!done) listsBefore++;
    }
    const r = await publish;
    console.log(`costly classification (budget ${BUDGET_MS} ms): ${r.status} after ${Date.now() - sent} ms; ${listsBefore} tools/list answered meanwhile, slowest ${maxGap.toFixed(1)} ms`);
    expect(r.status, r.text).toBe(422);
    expect(r.json()).toMatchObject({
      result: 'refused',
      error: { code: 'schema-too-costly', message: `definition: classifying the change from its baseline took longer than the budget of ${BUDGET_MS} ms; use fewer or simpler subschemas (anyOf/oneOf/allOf branches are compared pairwise)` },
    });
    expect(listsBefore).toBeGreaterThanOrEqual(3);
    // A cheap change to the same tool still classifies (against the wide baseline) and publishes.
    const small = toolDefinition({ name: 'payments.wide', version: '2.0.0', handler: 'payments.wide', inputSchema: { type: 'object' } });
    const cheap = await post(`${base}/v1/tools`, small, ci);
    expect(cheap.status, cheap.text).toBe(201);
  });

  it('too many patterns in one schema: schema-too-costly, before anything is compiled', async () => {
    const r = await post(`${base}/v1/check`, hostileDefinition('payments.many', 1001), await token('ci-payments', 'estate:publish:payments'));
    expect(r.status).toBe(422);
    expect(r.json()).toMatchObject({ error: { code: 'schema-too-costly', message: 'inputSchema carries 1001 patterns; at most 1000 per schema' } });
  });

  it('patterns run on RE2 in the server: a call matching and one not matching', async () => {
    const reader = await token('agent', '');
    const bad = await callTool(reader, 'fx.lookup', { reference: 'PAY-12' });
    expect(bad.text).toContain("$.reference: does not match pattern '^(PAY|REF)-[0-9]{4,8}$'");
  });

  it('a lifecycle route for a namespace the token lacks: 403 from the path, its body never read', async () => {
    // Over 1 MiB: a server reading the body first answers 413.
    const body = JSON.stringify({ reason: 'x'.repeat(1024 * 1024 + 10) });
    const r = await post(`${base}/v1/tools/fx.lookup/versions/1.0.0/retire`, body, await token('ci-cards', 'estate:lifecycle:cards'));
    expect(r.status).toBe(403);
  });

  it('mutually recursive $refs that never descend are refused at publish (schema-invalid), never a -32603 later', async () => {
    const ci = await token('ci-fx', 'estate:publish:fx');
    const cyclic = toolDefinition({
      name: 'fx.cyclic',
      handler: 'fx.rates',
      inputSchema: { type: 'object', properties: { a: { $ref: '#/$defs/x' } }, $defs: { x: { allOf: [{ $ref: '#/$defs/y' }] }, y: { anyOf: [{ $ref: '#/$defs/x' }] } } },
    });
    const r = await post(`${base}/v1/tools`, cyclic, ci);
    expect(r.status).toBe(422);
    expect(r.json()).toMatchObject({ error: { code: 'schema-invalid', message: 'inputSchema: $ref cycle at #/$defs/x never descends into the value, so validation would recurse without end' } });
    // Recursion that descends (a tree) is fine: published, and a call validates.
    const tree = toolDefinition({
      name: 'fx.tree',
      handler: 'fx.rates',
      inputSchema: { type: 'object', properties: { node: { $ref: '#/$defs/node' } }, $defs: { node: { type: 'object', properties: { kids: { type: 'array', items: { $ref: '#/$defs/node' } }, v: { type: 'integer' } } } } },
    });
    expect((await post(`${base}/v1/tools`, tree, ci)).status).toBe(201);
    const call = await callTool(await token('agent', ''), 'fx.tree', { node: { kids: [{ kids: [{ v: 'x' }] }] } });
    expect(call.json()).not.toHaveProperty('error');
    expect(call.text).toContain('$.node.kids[0].kids[0].v: expected type integer, got string');
  });

  it('a 90,000-value enum is not echoed whole: a small call gets a small answer', async () => {
    const values = Array.from({ length: 90_000 }, (_, i) => `v${i}`);
    const big = toolDefinition({ name: 'fx.enum', handler: 'fx.rates', inputSchema: { type: 'object', properties: { e: { enum: values } } } });
    expect((await post(`${base}/v1/tools`, big, await token('ci-fx', 'estate:publish:fx'))).status).toBe(201);
    const r = await callTool(await token('agent', ''), 'fx.enum', { e: 'nope' });
    console.log(`90,000-value enum: the refusal is ${r.text.length} bytes`);
    expect(r.text.length).toBeLessThan(4096);
    expect(r.text).toContain('$.e: must be one of [\\"v0\\",\\"v1\\"');
    expect(r.text).toContain(', … (89980 more)]');
  });

  it('a frame nested 400,000 deep is refused before it is parsed, with its id (-32600)', async () => {
    const depth = 400_000;
    const text = `{"jsonrpc":"2.0","id":"deep-1","method":"tools/call","params":{"name":"fx.lookup","arguments":{"a":${'['.repeat(depth)}${']'.repeat(depth)}}}}`;
    const r = await post(srv.url, text, await token('agent', ''), { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'fx.lookup' });
    expect(r.json()).toEqual({ jsonrpc: '2.0', id: 'deep-1', error: { code: -32600, message: 'Invalid Request: the message is nested deeper than 512 levels' } });
    const d = await post(`${base}/v1/check`, `{"name":"payments.deep","x":${'['.repeat(depth)}${']'.repeat(depth)}}`, await token('ci-payments', 'estate:publish:payments'));
    expect(d.status).toBe(400);
    expect(d.json()).toMatchObject({ error: { code: 'syntax-error', message: 'request body: nested deeper than 1024 levels' } });
  });
});

describe('depth before parse on stdio', { timeout: 60_000 }, () => {
  it('a line nested 400,000 deep is refused (-32600 with its id) and the server goes on', async () => {
    const srv = await startStdioServer(['--demo']);
    try {
      const depth = 400_000;
      srv.child.stdin?.write(`{"jsonrpc":"2.0","id":"deep-2","method":"tools/list","params":{"x":${'['.repeat(depth)}${']'.repeat(depth)}}}\n`);
      const pong = await srv.request('ping', undefined, 'after-deep');
      expect(pong.result).toEqual({});
      const answer = srv.lines.seen.map((l) => JSON.parse(l) as Record<string, unknown>).find((m) => m.id === 'deep-2');
      expect(answer).toEqual({ jsonrpc: '2.0', id: 'deep-2', error: { code: -32600, message: 'Invalid Request: the message is nested deeper than 512 levels' } });
    } finally {
      await srv.stop();
    }
  });
});
