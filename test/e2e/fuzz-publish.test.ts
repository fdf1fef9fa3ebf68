/**
 * Issue 9 "Must show": random definitions (pattern sets and schema shapes, seeded) over the publishing API while
 * tools/list traffic runs against the same `estate serve --http`. Asserted (robust properties only): every request is
 * answered with a status its kind allows (a namespace the token lacks: 403, nothing else; a check: 200 or 422; a
 * publish: 201 or 422 — never a 5xx), every published tool's first call is answered without a JSON-RPC error (its
 * validators compiled ahead, never -32603), the server still serves afterwards, and its RSS grows by less than a
 * generous cap (a size, not a time). Reported, not asserted: how many tools/list were answered during the fuzz, the
 * longest round trip (which includes this test process's own work and the two cores it shares), and the server's own
 * longest event-loop stall (`estate_nodejs_eventloop_lag_max_seconds` over the fuzz).
 * ESTATE_FUZZ_SEED replays a run.
 */
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestIssuer, type TestIssuer } from '../fixtures/jwks.ts';
import { makeTempStore, startHttpServer, toolDefinition, type HttpServer, type TempStore } from './helpers.ts';

const AUDIENCE = 'https://estate.test/mcp';
const META = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };
const SEED = Number(process.env.ESTATE_FUZZ_SEED ?? Date.now() % 2 ** 31);
const RUNS = 40;
const RSS_GROWTH_CAP_MIB = 400;

const post = async (url: string, body: unknown, token: string, headers: Record<string, string> = {}) => {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${token}`, ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: res.status, text: await res.text() };
};

const rssMiB = (pid: number): number => {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
};

/** Patterns: simple, backtrack-safe, costly, non-linear (lookaround, backreference), invalid, random text. */
const pattern = fc.oneof(
  fc.constantFrom('^[a-z]+$', '^\\d{4}-\\d{2}$', '^(PAY|REF)-[0-9]{4,8}$', '.*', '^(a+)+$', '(?=a)b', '(a)\\1', '[', '^\\p{L}+$', '^(a{1,400}b){1,2}b$', '^(x{1,99}){1,9}$'),
  fc.integer({ min: 0, max: 1e6 }).map((i) => `^p${i}(a|b)*[0-9]{1,3}$`),
  fc.string({ maxLength: 30 }),
);

const leaf = fc.oneof(
  pattern.map((p) => ({ type: 'string', pattern: p })),
  fc.constantFrom({ type: 'integer', minimum: 0 }, { type: 'boolean' }, { type: 'number', multipleOf: 0.5 }, { type: 'string', format: 'date' }),
  fc.array(fc.string({ maxLength: 8 }), { minLength: 1, maxLength: 50 }).map((values) => ({ enum: values })),
  fc.dictionary(pattern, fc.constant({ type: 'string' }), { maxKeys: 4 }).map((pp) => ({ type: 'object', patternProperties: pp })),
);

const { schema } = fc.letrec<{ schema: unknown }>((tie) => ({
  schema: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    leaf,
    fc.dictionary(fc.string({ minLength: 1, maxLength: 6 }), tie('schema'), { maxKeys: 6 }).map((properties) => ({ type: 'object', properties })),
    tie('schema').map((items) => ({ type: 'array', items })),
    fc.array(tie('schema'), { minLength: 1, maxLength: 3 }).map((anyOf) => ({ anyOf })),
    fc.constant({ $ref: '#/$defs/a' }),
  ),
}));

const definition = fc.record({
  namespace: fc.constantFrom('fx', 'fx', 'fx', 'payments'), // payments is not the fuzzing token's: 403
  id: fc.integer({ min: 0, max: 1e6 }),
  properties: fc.dictionary(fc.string({ minLength: 1, maxLength: 6 }), schema, { maxKeys: 8 }),
  defs: fc.oneof(
    fc.constant({ a: { type: 'string' } }),
    fc.constant({ a: { allOf: [{ $ref: '#/$defs/b' }] }, b: { anyOf: [{ $ref: '#/$defs/a' }] } }), // an in-place cycle
    fc.constant({ a: { type: 'object', properties: { next: { $ref: '#/$defs/a' } } } }), // a tree: fine
  ),
  many: fc.option(fc.integer({ min: 1, max: 400 }), { freq: 5 }), // sometimes hundreds of costly patterns
  verb: fc.constantFrom('check', 'tools'),
});

describe('fuzzing the publishing API with definitions while tools/list runs', { timeout: 600_000 }, () => {
  let tmp: TempStore;
  let idp: TestIssuer;
  let srv: HttpServer;
  let base: string;

  beforeAll(async () => {
    tmp = makeTempStore('estate-fuzz-publish-');
    idp = await startTestIssuer(AUDIENCE);
    srv = await startHttpServer(['--demo', '--store', tmp.store, '--auth-issuer', idp.issuer, '--auth-jwks-url', idp.jwksUrl, '--auth-audience', AUDIENCE], {
      env: { ESTATE_SCHEMA_BUDGET_MS: '1000' },
    });
    base = new URL('/', srv.url).href.replace(/\/$/, '');
  });
  afterAll(async () => {
    await srv?.stop();
    await idp?.close();
    tmp?.cleanup();
  });

  it(`every request answered, no 5xx, still serving, memory bounded (seed ${SEED})`, async () => {
    console.log(`fuzz-publish seed ${SEED} (ESTATE_FUZZ_SEED=${SEED} replays)`);
    const ci = await idp.mint({ claims: { sub: 'ci-fx', scope: 'estate:publish:fx', tenant: undefined, clearance: undefined } });
    const reader = await idp.mint({ claims: { sub: 'agent', scope: '', tenant: undefined, clearance: undefined } });
    const pid = srv.child.pid as number;
    const list = () => post(srv.url, { jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: META } }, reader, { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/list' });
    expect((await list()).status).toBe(200);
    const rssBefore = rssMiB(pid);
    // The server's own event-loop delay (prom-client's histogram, reset by each scrape): this scrape starts the window.
    const loopLagMaxMs = async (): Promise<number> => {
      const text = await (await fetch(srv.url.replace(/\/mcp$/, '/metrics'))).text();
      const line = text.split('\n').find((l) => l.startsWith('estate_nodejs_eventloop_lag_max_seconds '));
      return line === undefined ? NaN : Number(line.split(' ')[1]) * 1000;
    };
    await loopLagMaxMs();

    let fuzzing = true;
    let lists = 0;
    let maxGap = 0;
    const listStatuses = new Map<number, number>();
    const traffic = (async () => {
      while (fuzzing) {
        const t0 = performance.now();
        const r = await list();
        maxGap = Math.max(maxGap, performance.now() - t0);
        lists++;
        listStatuses.set(r.status, (listStatuses.get(r.status) ?? 0) + 1);
      }
    })();

    const samples = fc.sample(definition, { numRuns: RUNS, seed: SEED });
    const statuses = new Map<number, number>();
    const misjudged: string[] = [];
    const published: string[] = [];
    const started = performance.now();
    try {
      for (const [i, d] of samples.entries()) {
        const properties: Record<string, unknown> = { ...d.properties };
        for (let k = 0; k < (d.many ?? 0); k++) properties[`h${k}`] = { type: 'string', pattern: `^(a{1,400}b){1,2}b${k}$` };
        const def = toolDefinition({
          name: `${d.namespace}.fuzz_${i}_${d.id}`,
          handler: `${d.namespace}.rates`,
          inputSchema: { type: 'object', properties, $defs: d.defs },
        });
        const r = await post(`${base}/v1/${d.verb}`, def, ci);
        statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
        const allowed = d.namespace !== 'fx' ? [403] : d.verb === 'check' ? [200, 422] : [201, 422];
        if (!allowed.includes(r.status)) misjudged.push(`${d.verb} ${String(def.name)}: ${r.status} (expected ${allowed.join('/')}) ${r.text.slice(0, 200)} for ${JSON.stringify(def).slice(0, 300)}`);
        if (r.status === 201) published.push(def.name as string);
      }
      // Each published tool's first call, while the traffic still runs: answered as a result (valid or not), never a
      // JSON-RPC error. Until the server's view has the tool, the call is an Unknown tool: asked again.
      for (const name of published) {
        for (let attempt = 0; ; attempt++) {
          const r = await post(srv.url, { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name, arguments: {}, _meta: META } }, reader, {
            'mcp-protocol-version': '2026-07-28',
            'mcp-method': 'tools/call',
            'mcp-name': name,
          });
          if (r.text.includes(`Unknown tool: ${name}`) && attempt < 500) {
            await new Promise((resolve) => setTimeout(resolve, 10));
            continue;
          }
          if (r.status !== 200 || !r.text.includes('"result"')) misjudged.push(`call ${name}: ${r.status} ${r.text.slice(0, 300)}`);
          break;
        }
      }
    } finally {
      fuzzing = false;
      await traffic;
    }
    const seconds = (performance.now() - started) / 1000;
    const rssAfter = rssMiB(pid);
    const serverStallMs = await loopLagMaxMs();
    console.log(
      `fuzz-publish (seed ${SEED}): ${RUNS} definitions (${published.length} published, each then called) in ${seconds.toFixed(1)} s, statuses ${JSON.stringify(Object.fromEntries(statuses))}; ` +
        `${lists} tools/list answered meanwhile (${JSON.stringify(Object.fromEntries(listStatuses))}), the longest round trip ${maxGap.toFixed(1)} ms; ` +
        `the server's longest event-loop stall (its own monitor) ${serverStallMs.toFixed(1)} ms; server RSS ${rssBefore.toFixed(0)} → ${rssAfter.toFixed(0)} MiB`,
    );
    expect(misjudged, `seed ${SEED}`).toEqual([]);
    expect([...listStatuses.keys()], `seed ${SEED}`).toEqual([200]);
    expect(lists).toBeGreaterThan(0);
    // Still serving: a list and a well-formed check.
    expect((await list()).status).toBe(200);
    expect((await post(`${base}/v1/check`, toolDefinition({ name: 'fx.after_fuzz', handler: 'fx.rates' }), ci)).status).toBe(200);
    expect(rssAfter - rssBefore, `seed ${SEED}`).toBeLessThan(RSS_GROWTH_CAP_MIB);
  });
});
