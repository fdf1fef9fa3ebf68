/**
 * Issue 9, High 1: tools/list latency while a hostile /v1/check runs (1000 properties with patterns like
 * `^(a{1,400}b){1,2}b<i>$`, refused with schema-too-costly at the budget), against the real `estate serve --http`.
 * Prints tools/list latencies (median and max) with no check running and while the check runs.
 *
 *   node --import tsx bench/regex-latency.ts
 */
import { startTestIssuer } from '../test/fixtures/jwks.ts';
import { makeTempStore, startHttpServer, toolDefinition } from '../test/e2e/helpers.ts';

const AUDIENCE = 'https://estate.test/mcp';
const META = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };

const tmp = makeTempStore('estate-bench-');
const idp = await startTestIssuer(AUDIENCE);
const srv = await startHttpServer(['--demo', '--store', tmp.store, '--auth-issuer', idp.issuer, '--auth-jwks-url', idp.jwksUrl, '--auth-audience', AUDIENCE]);
const base = new URL('/', srv.url).href.replace(/\/$/, '');
const token = (sub: string, scope: string) => idp.mint({ claims: { sub, scope, tenant: undefined, clearance: undefined } });
const reader = await token('agent', '');
const ci = await token('ci', 'estate:publish:payments');
const post = async (url: string, body: unknown, t: string, headers: Record<string, string> = {}) => {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${t}`, ...headers }, body: JSON.stringify(body) });
  return { status: res.status, text: await res.text() };
};
const list = () => post(srv.url, { jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: META } }, reader, { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/list' });
const timed = async (): Promise<number> => {
  const t0 = performance.now();
  const r = await list();
  if (r.status !== 200) throw new Error(`tools/list answered ${r.status}`);
  return performance.now() - t0;
};
const summary = (xs: number[]): string => {
  const s = [...xs].sort((a, b) => a - b);
  return `n=${s.length} median ${(s[Math.floor(s.length / 2)] ?? 0).toFixed(1)} ms, max ${(s[s.length - 1] ?? 0).toFixed(1)} ms`;
};

try {
  await post(`${base}/v1/check`, toolDefinition({ name: 'payments.warm', handler: 'payments.lookup' }), ci); // starts the worker
  const idle: number[] = [];
  for (let i = 0; i < 50; i++) idle.push(await timed());
  const properties: Record<string, unknown> = {};
  for (let i = 0; i < 1000; i++) properties[`p${i}`] = { type: 'string', pattern: `^(a{1,400}b){1,2}b${i}$` };
  const hostile = toolDefinition({ name: 'payments.attack', handler: 'payments.lookup', inputSchema: { type: 'object', properties } });
  let done = false;
  const t0 = performance.now();
  const check = post(`${base}/v1/check`, hostile, ci).finally(() => (done = true));
  const during: number[] = [];
  while (!done) during.push(await timed());
  const r = await check;
  console.log(`tools/list, no check running:       ${summary(idle)}`);
  console.log(`tools/list, during a hostile check: ${summary(during)}`);
  console.log(`the check: ${r.status} ${JSON.parse(r.text).error?.code as string} after ${(performance.now() - t0).toFixed(0)} ms`);
} finally {
  await srv.stop();
  await idp.close();
  tmp.cleanup();
}
