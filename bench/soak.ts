/**
 * `npm run soak -- --minutes N [--out dir]`: drive one serving process with mixed traffic for N minutes and record
 * how it holds up. Traffic (4 client loops): 2026 tools/list, valid and invalid tools/call, unknown tools, 2025
 * sessions opened and closed; a 2026 `subscriptions/listen` stream held open throughout; a publish from another
 * process (the CLI) every 20 s. Every sample interval: the server's RSS (from /proc), heap used and event-loop delay
 * p99 (its own /metrics), and p50/p99 latency, requests, 5xx and errors of the interval. At the end every run id the
 * server returned is looked up with `estate calls`. Writes soak.json and soak.svg (a vega-lite chart) to --out.
 */
import { spawn, execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { renderSoakChart, type SoakSample } from './soak-chart.ts';

const run = promisify(execFile);
const args = process.argv.slice(2);
const flag = (name: string, fallback: string): string => {
  const i = args.indexOf(name);
  return i >= 0 && args[i + 1] !== undefined ? args[i + 1]! : fallback;
};
const minutes = Number(flag('--minutes', '1'));
const outDir = resolve(flag('--out', '.cache/soak'));
if (!(minutes > 0)) throw new Error('--minutes must be a positive number');
// Per-minute samples for long runs; a short run still gets a dozen points.
const intervalMs = minutes >= 10 ? 60_000 : 5_000;
const ROOT = resolve(import.meta.dirname, '..');
const BIN = join(ROOT, 'bin', 'estate.js');
const dir = mkdtempSync(join(tmpdir(), 'estate-soak-'));
const store = `sqlite:${join(dir, 'soak.db')}`;
const PRINCIPAL = ['--tenant', 'acme', '--scopes', 'payments.read,payments.write,accounts.read,reports.read', '--clearance', 'restricted'];

const server = spawn(process.execPath, [BIN, 'serve', '--http', '--port', '0', '--demo', '--store', store, ...PRINCIPAL], {
  cwd: ROOT,
  env: { ...process.env, ESTATE_LOG_LEVEL: 'warn' },
  stdio: ['ignore', 'ignore', 'pipe'],
});
const url = await new Promise<string>((ok, fail) => {
  let buf = '';
  server.stderr.on('data', (c: Buffer) => {
    buf += c.toString();
    const m = /MCP server at (http:\/\/\S+\/mcp)/.exec(buf);
    if (m) ok(m[1]!);
  });
  server.on('exit', (code) => fail(new Error(`server exited ${code}: ${buf}`)));
  setTimeout(() => fail(new Error(`server not ready: ${buf}`)), 120_000).unref();
});
server.stderr.resume();
const base = url.replace(/\/mcp$/, '');

const META = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };
const HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2026-07-28' };
let nextId = 1;
const runIds = new Set<string>();

interface Bucket { latencies: number[]; requests: number; http5xx: number; errors: number }
let bucket: Bucket = { latencies: [], requests: 0, http5xx: 0, errors: 0 };
const totals = { requests: 0, http5xx: 0, errors: 0, notifications: 0, publishes: 0, sessions: 0 };
const errorSamples: string[] = [];
const noteError = (what: string): void => {
  bucket.errors++;
  totals.errors++;
  if (errorSamples.length < 20) errorSamples.push(what);
};

/** One timed POST; returns the parsed JSON body (or the first JSON data line of an event stream). */
const timed = async (body: unknown, headers: Record<string, string>, sessionId?: string): Promise<{ status: number; json: Record<string, unknown> | null; session: string | null }> => {
  const t0 = performance.now();
  const res = await fetch(url, { method: 'POST', headers: { ...HEADERS, ...headers, ...(sessionId ? { 'mcp-session-id': sessionId } : {}) }, body: JSON.stringify(body) });
  const text = await res.text();
  bucket.latencies.push(performance.now() - t0);
  bucket.requests++;
  totals.requests++;
  if (res.status >= 500) {
    bucket.http5xx++;
    totals.http5xx++;
  }
  const line = text.startsWith('{') ? text : text.split('\n').find((l) => l.startsWith('data: {'))?.slice(6);
  return { status: res.status, json: line ? (JSON.parse(line) as Record<string, unknown>) : null, session: res.headers.get('mcp-session-id') };
};

/** `recorded`: the call reaches its handler, so its run must be on record (SPEC §4); schema refusals and unknown tools never do. */
const call = async (name: string, a: unknown, expect: 'ok' | 'isError' | 'error', recorded = expect !== 'error'): Promise<void> => {
  const r = await timed({ jsonrpc: '2.0', id: nextId++, method: 'tools/call', params: { name, arguments: a, _meta: META } }, { 'mcp-method': 'tools/call', 'mcp-name': name });
  const result = r.json?.result as { isError?: boolean; _meta?: Record<string, unknown> } | undefined;
  const runId = result?._meta?.['io.estate/runId'];
  if (recorded && typeof runId === 'string') runIds.add(runId);
  const got = r.json?.error ? 'error' : result?.isError ? 'isError' : result ? 'ok' : 'none';
  if (got !== expect) noteError(`${name}: expected ${expect}, got ${got} (HTTP ${r.status})`);
};

const list = async (): Promise<void> => {
  const r = await timed({ jsonrpc: '2.0', id: nextId++, method: 'tools/list', params: { _meta: META } }, { 'mcp-method': 'tools/list' });
  if (!Array.isArray((r.json?.result as { tools?: unknown } | undefined)?.tools)) noteError(`tools/list: HTTP ${r.status}`);
};

const session = async (): Promise<void> => {
  const legacy = { 'mcp-protocol-version': '2025-11-25' };
  const init = await timed({ jsonrpc: '2.0', id: nextId++, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'soak', version: '1' } } }, legacy);
  if (!init.session) return noteError(`initialize: HTTP ${init.status}, no session`);
  await fetch(url, { method: 'POST', headers: { ...HEADERS, ...legacy, 'mcp-session-id': init.session }, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) }).then((r) => r.text());
  const l = await timed({ jsonrpc: '2.0', id: nextId++, method: 'tools/list', params: {} }, legacy, init.session);
  if (!l.json?.result) noteError(`session tools/list: HTTP ${l.status}`);
  await fetch(url, { method: 'DELETE', headers: { 'mcp-session-id': init.session, 'mcp-protocol-version': '2025-11-25' } }).then((r) => r.text());
  totals.sessions++;
};

const ops: [number, () => Promise<void>][] = [
  [35, list],
  [20, () => call('payments.lookup', { reference: nextId % 2 === 0 ? 'PMT-771' : 'PMT-772', include_legs: nextId % 3 === 0 }, 'ok')],
  // A valid call the handler refuses (a tool error): it ran, so it must be on record too.
  [10, () => call('payments.lookup', { reference: 'PMT-999' }, 'isError')],
  [15, () => call('payments.lookup', { reference: 'not-a-reference' }, 'isError', false)],
  [5, () => call('no.such_tool', {}, 'error')],
  [15, session],
];
const pick = (): (() => Promise<void>) => {
  let r = Math.random() * 100;
  for (const [w, op] of ops) if ((r -= w) < 0) return op;
  return list;
};

const end = Date.now() + minutes * 60_000;
const loop = async (): Promise<void> => {
  while (Date.now() < end) {
    try {
      await pick()();
    } catch (e) {
      noteError(`request failed: ${e instanceof Error ? e.message : String(e)}`);
    }
  }
};

// The 2026 listener: one stream for the whole run, counting change notifications.
const listener = new AbortController();
void fetch(url, { method: 'POST', signal: listener.signal, headers: { ...HEADERS, 'mcp-method': 'subscriptions/listen' }, body: JSON.stringify({ jsonrpc: '2.0', id: 'listen', method: 'subscriptions/listen', params: { notifications: { toolsListChanged: true }, _meta: META } }) })
  .then(async (res) => {
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) totals.notifications += (Buffer.from(chunk).toString().match(/list_changed/g) ?? []).length;
  })
  .catch(() => undefined);

const publisher = setInterval(() => {
  const n = ++totals.publishes;
  const file = join(dir, `t${n}.json`);
  writeFileSync(file, JSON.stringify({ name: `payments.soak_${n}`, version: '1.0.0', description: 'A soak tool.', inputSchema: { type: 'object', properties: { reference: { type: 'string' } }, required: ['reference'] }, access: { requiredScopes: [], tenants: ['acme'], classification: 'public' }, sideEffect: 'none', handler: 'payments.lookup' }));
  run(process.execPath, [BIN, 'publish', file, '--store', store], { cwd: ROOT }).catch((e: unknown) => noteError(`publish: ${String(e)}`));
}, 20_000);

const metric = (text: string, name: string): number => Number(new RegExp(`^${name} ([0-9.e+-]+)$`, 'm').exec(text)?.[1] ?? NaN);
const quantile = (xs: number[], q: number): number => {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
};
const samples: SoakSample[] = [];
const t0 = Date.now();
const sample = async (): Promise<void> => {
  const b = bucket;
  bucket = { latencies: [], requests: 0, http5xx: 0, errors: 0 };
  const text = await fetch(`${base}/metrics`).then((r) => r.text());
  const rssKb = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${server.pid}/status`, 'utf8'))?.[1]);
  samples.push({
    minute: Number(((Date.now() - t0) / 60_000).toFixed(2)),
    rssMb: Number((rssKb / 1024).toFixed(1)),
    heapMb: Number((metric(text, 'estate_nodejs_heap_size_used_bytes') / 2 ** 20).toFixed(1)),
    loopP99Ms: Number((metric(text, 'estate_nodejs_eventloop_lag_p99_seconds') * 1000).toFixed(2)),
    p50Ms: Number(quantile(b.latencies, 0.5).toFixed(2)),
    p99Ms: Number(quantile(b.latencies, 0.99).toFixed(2)),
    requests: b.requests,
    http5xx: b.http5xx,
    errors: b.errors,
  });
  const s = samples[samples.length - 1]!;
  process.stderr.write(`soak ${s.minute} min: rss ${s.rssMb} MB, heap ${s.heapMb} MB, loop p99 ${s.loopP99Ms} ms, p50 ${s.p50Ms} ms, p99 ${s.p99Ms} ms, ${s.requests} requests, ${s.http5xx} 5xx, ${s.errors} errors\n`);
};
const sampler = setInterval(() => void sample(), intervalMs);

await Promise.all([loop(), loop(), loop(), loop()]);
clearInterval(sampler);
clearInterval(publisher);
await sample();
listener.abort();

// The audit: every run id a call returned must be a run `estate calls` lists.
const { stdout } = await run(process.execPath, [BIN, 'calls', '--json', '--limit', '999999', '--store', store], { cwd: ROOT, maxBuffer: 256 * 2 ** 20 });
const listed = new Set((JSON.parse(stdout) as { runs: { runId: string }[] }).runs.map((r) => r.runId));
const lost = [...runIds].filter((id) => !listed.has(id));
server.kill('SIGTERM');

// RSS trend after warm-up (the first fifth): least-squares slope in MB per minute.
const warm = samples.slice(Math.floor(samples.length / 5));
const mean = (xs: number[]): number => xs.reduce((a, b) => a + b, 0) / xs.length;
const mx = mean(warm.map((s) => s.minute));
const my = mean(warm.map((s) => s.rssMb));
const slope = warm.reduce((a, s) => a + (s.minute - mx) * (s.rssMb - my), 0) / (warm.reduce((a, s) => a + (s.minute - mx) ** 2, 0) || 1);
const summary = {
  minutes, ...totals, runIdsReturned: runIds.size, runIdsLost: lost.length,
  rssMbFirst: samples[0]?.rssMb, rssMbLast: samples.at(-1)?.rssMb, rssSlopeMbPerMinAfterWarmup: Number(slope.toFixed(3)),
  p99MsMedian: quantile(samples.map((s) => s.p99Ms), 0.5), p99MsMax: Math.max(...samples.map((s) => s.p99Ms)),
};
mkdirSync(outDir, { recursive: true });
writeFileSync(join(outDir, 'soak.json'), `${JSON.stringify({ at: new Date().toISOString(), node: process.version, summary, samples, errorSamples, lostRunIds: lost.slice(0, 20) }, null, 2)}\n`);
writeFileSync(join(outDir, 'soak.svg'), await renderSoakChart(samples, `estate soak: ${minutes} min, ${totals.requests} requests`));
rmSync(dir, { recursive: true, force: true });
console.log(JSON.stringify(summary));
process.stderr.write(`soak: wrote ${join(outDir, 'soak.json')} and soak.svg\n`);
process.exitCode = totals.http5xx === 0 && lost.length === 0 ? 0 : 1;
