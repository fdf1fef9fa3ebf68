/**
 * What operations cost a tools/call (SPEC §9): throughput with OpenTelemetry tracing exporting, and with Prometheus
 * metrics, beside them off. Every call is sampled, and its spans leave by OTLP/HTTP protobuf for a sink in a child
 * process (it only counts what it receives); the SDK is the real one, started as `estate serve` starts it.
 *
 * - Over HTTP: two `estate serve --http` processes on copies of one tmpfs SQLite store, one with OTEL_EXPORTER_OTLP_ENDPOINT
 *   set, driven alike (a 2025-11-25 session, 16 calls in flight), round by round in turn. Metrics are on in both: the
 *   server always serves /metrics.
 * - In process, where metrics can be left out: a ServerCore built as `estate serve` builds it, with or without the
 *   metrics hooks and with or without tracing, driven through a session's request handler (no transport, so the ratios
 *   are the serving path's own and larger than a client sees). Each variant runs in a fresh process — once started, the
 *   SDK's context manager costs every promise of the process, so "off" must never share one with it — in turn, round
 *   after round, so a noisy machine hits them alike. Figures are medians over the rounds; the notes add the CPU time per
 *   call, steadier than wall time on a shared machine.
 *
 * Runnable alone: `node --import tsx bench/ops.ts`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { median, procCpuMicros, type BenchRow } from './lib.ts';
import { openSession, publishAll, type Session } from './mcp-client.ts';
import { VALID_ARGS, toolName } from './mcp-fixture.ts';

const TOOLS = 50;
const CALLS = 2000;
/**
 * In process, each variant is a fresh process, so its rounds must be long enough that its first calls (warm-up, we
 * read it: not traced) do not show: at 2,000 calls (the HTTP rounds' size, whose servers stay up and warm) "metrics on"
 * read 1-13 µs a call more CPU than "off" from one run to the next, and at 20,000 within ±1 µs either way (a warm-up
 * and a measured run each).
 */
const IN_PROCESS_CALLS = 20_000;
const ROUNDS = 5;
const CONCURRENCY = 16;
const REPO_ROOT = fileURLToPath(new URL('../', import.meta.url));
const THIS_FILE = fileURLToPath(import.meta.url);
const HANDLERS = fileURLToPath(new URL('./mcp-handlers.ts', import.meta.url));
const VARIANTS = ['off', 'metrics', 'tracing', 'both'] as const;
type Variant = (typeof VARIANTS)[number];

interface Figure {
  callsPerSecond: number;
  cpuMicrosPerCall: number;
}

/** CPU time used so far, in µs: this process's, or (Linux) another's from /proc; NaN where it cannot be read. */
const cpuMicros = (pid?: number): number => {
  if (pid === undefined) {
    const c = process.cpuUsage();
    return c.user + c.system;
  }
  return procCpuMicros(pid);
};

/**
 * `calls` calls with `CONCURRENCY` in flight through `call`: calls per second, and the CPU per call of the process
 * that serves them (this one, or the server's `pid`).
 */
const drive = async (call: (i: number) => Promise<void>, pid?: number, calls = CALLS): Promise<Figure> => {
  let n = 0;
  const cpu0 = cpuMicros(pid);
  const t0 = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (n < calls) await call(n++);
    }),
  );
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  return { callsPerSecond: calls / seconds, cpuMicrosPerCall: (cpuMicros(pid) - cpu0) / calls };
};

const storeDir = () => mkdtempSync(join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), 'estate-bench-ops-'));


/** One in-process variant, in this (fresh) process: a warm-up run, then the measured one. */
const inProcess = async (variant: Variant): Promise<Figure> => {
  const [{ pino }, { createCallRecorder }, { loadConfig, loadTracingConfig }, { openEstate }, { startTracing }, { makePrincipal }, server, { StatefulSession }, { createMetrics }, { handlers }] =
    await Promise.all([import('pino'), import('#app/call-recorder'), import('#config'), import('#compose/estate'), import('#compose/tracing'), import('#domain/access'), import('#mcp/server-core'), import('#mcp/stateful-session'), import('#ops/metrics'), import('./mcp-handlers.ts')]);
  const dir = storeDir();
  const store = `sqlite:${join(dir, 'ops.db')}`;
  await publishAll(store, TOOLS);
  const estate = await openEstate(loadConfig({ store }));
  const log = pino({ level: 'silent' });
  const tracing = variant === 'tracing' || variant === 'both' ? await startTracing(loadTracingConfig(process.env), log) : null;
  try {
    const reader = estate.reader({ isOffered: server.isOfferedBy(handlers) });
    await reader.catchUp();
    const metrics = variant === 'metrics' || variant === 'both' ? createMetrics({ catalogue: () => ({ size: reader.catalogue.size, position: reader.position }) }) : undefined;
    const core = new server.ServerCore({ reader, handlers, compiler: estate.compiler, recorder: createCallRecorder(estate.store), log, pageSize: 500, listTtlMs: 60_000, ...(metrics ? { metrics } : {}) });
    const session = new StatefulSession(core, { id: 'bench', principal: makePrincipal({}), transport: 'http', notify: () => undefined });
    let id = 1;
    await session.handle({ jsonrpc: '2.0', id: id++, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'bench', version: '1' } } });
    const call = async (i: number) => {
      const r = await session.handle({ jsonrpc: '2.0', id: id++, method: 'tools/call', params: { name: toolName(i % TOOLS), arguments: VALID_ARGS } });
      if (!r || !('result' in r)) throw new Error(`tools/call failed: ${JSON.stringify(r).slice(0, 300)}`);
    };
    await drive(call, undefined, IN_PROCESS_CALLS);
    const figure = await drive(call, undefined, IN_PROCESS_CALLS);
    await core.close();
    return figure;
  } finally {
    await tracing?.shutdown();
    await estate.close();
    rmSync(dir, { recursive: true, force: true });
  }
};

/** A child whose stdout is JSON lines: `next()` is the next one (a sink's URL, then its counts; a variant's figure). */
const child = (args: string[], env: NodeJS.ProcessEnv = {}): { process: ChildProcess; next(): Promise<Record<string, unknown>> } => {
  const p = spawn(process.execPath, args, { cwd: REPO_ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
  const lines: Record<string, unknown>[] = [];
  const waiting: ((v: Record<string, unknown>) => void)[] = [];
  let buf = '';
  p.stdout?.on('data', (c: Buffer) => {
    buf += c.toString();
    let nl: number;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const v = JSON.parse(buf.slice(0, nl)) as Record<string, unknown>;
      buf = buf.slice(nl + 1);
      const w = waiting.shift();
      if (w) w(v);
      else lines.push(v);
    }
  });
  const closed = new Promise<never>((_, fail) => p.once('close', (code) => fail(new Error(`${args.join(' ').slice(0, 80)} exited (${String(code)}) without an answer`))));
  closed.catch(() => undefined);
  return {
    process: p,
    next: () => Promise.race([new Promise<Record<string, unknown>>((ok) => (lines.length > 0 ? ok(lines.shift() as Record<string, unknown>) : waiting.push(ok))), closed]),
  };
};

/** The OTLP sink: takes every export, counts requests and bytes, answers 200; prints its counts on SIGTERM. */
const SINK = `
const http = require('node:http');
let requests = 0, bytes = 0;
const s = http.createServer((req, res) => { req.on('data', (c) => (bytes += c.length)); req.on('end', () => { requests++; res.writeHead(200).end(); }); });
s.listen(0, '127.0.0.1', () => console.log(JSON.stringify({ url: 'http://127.0.0.1:' + s.address().port })));
process.on('SIGTERM', () => { console.log(JSON.stringify({ requests, bytes })); process.exit(0); });
`;

const startServe = async (store: string, env: NodeJS.ProcessEnv): Promise<{ url: string; process: ChildProcess }> => {
  const p = spawn(process.execPath, [join(REPO_ROOT, 'bin', 'estate.js'), 'serve', '--http', '--port', '0', '--store', store, '--handlers', HANDLERS], {
    cwd: REPO_ROOT,
    env: { ...process.env, ESTATE_LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const url = await new Promise<string>((ok, fail) => {
    let buf = '';
    const onData = (c: Buffer) => {
      buf += c.toString();
      for (const line of buf.split('\n')) {
        if (!line.includes('estate serve ready')) continue;
        p.stderr?.off('data', onData);
        p.stderr?.resume();
        ok(String((JSON.parse(line) as { url: string }).url));
      }
    };
    p.stderr?.on('data', onData);
    p.once('close', (code) => fail(new Error(`estate serve exited (${String(code)}) before it was ready:\n${buf.slice(-2000)}`)));
  });
  return { url, process: p };
};

const httpCall = (s: Session) => async (i: number) => {
  const { body, text } = await s.post({ jsonrpc: '2.0', id: i + 10, method: 'tools/call', params: { name: toolName(i % TOOLS), arguments: VALID_ARGS } });
  if (!body.result) throw new Error(`tools/call failed: ${text.slice(0, 300)}`);
};

const stop = (p: ChildProcess): Promise<void> =>
  new Promise((ok) => {
    if (p.exitCode !== null || p.signalCode !== null) return ok();
    p.once('close', () => ok());
    p.kill('SIGTERM');
  });

export async function run(): Promise<BenchRow[]> {
  const sink = child(['-e', SINK]);
  const otel = { OTEL_EXPORTER_OTLP_ENDPOINT: String((await sink.next()).url), OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf' };
  const noOtel = { OTEL_EXPORTER_OTLP_ENDPOINT: '', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: '' };
  const dir = storeDir();
  const servers: ChildProcess[] = [];
  try {
    const inproc: Record<Variant, Figure[]> = { off: [], metrics: [], tracing: [], both: [] };
    for (let round = 0; round < ROUNDS; round++) {
      for (const v of VARIANTS) {
        const c = child(['--import', 'tsx', THIS_FILE, '--variant', v], v === 'tracing' || v === 'both' ? otel : noOtel);
        inproc[v].push((await c.next()) as unknown as Figure);
        await stop(c.process);
      }
    }

    await publishAll(`sqlite:${join(dir, 'a.db')}`, TOOLS);
    for (const f of readdirSync(dir)) copyFileSync(join(dir, f), join(dir, f.replace(/^a\./, 'b.')));
    const plain = await startServe(`sqlite:${join(dir, 'a.db')}`, noOtel);
    servers.push(plain.process);
    const traced = await startServe(`sqlite:${join(dir, 'b.db')}`, otel);
    servers.push(traced.process);
    const sides = { off: { s: await openSession(plain.url), pid: plain.process.pid }, tracing: { s: await openSession(traced.url), pid: traced.process.pid } };
    const overHttp: Record<'off' | 'tracing', Figure[]> = { off: [], tracing: [] };
    for (const k of ['off', 'tracing'] as const) await drive(httpCall(sides[k].s));
    for (let round = 0; round < ROUNDS; round++) for (const k of ['off', 'tracing'] as const) overHttp[k].push(await drive(httpCall(sides[k].s), sides[k].pid));
    await Promise.all(servers.map(stop));
    const counted = sink.next();
    sink.process.kill('SIGTERM');
    const exported = await counted;

    const rate = (fs: Figure[]) => median(fs.map((f) => f.callsPerSecond));
    const cpu = (fs: Figure[]) => median(fs.map((f) => f.cpuMicrosPerCall));
    const delta = (x: Figure[], base: Figure[]) =>
      `${(((rate(base) - rate(x)) / rate(base)) * 100).toFixed(1)}% fewer calls/s; CPU ${cpu(x).toFixed(0)} vs ${cpu(base).toFixed(0)} µs per call`;
    const rounds = `${CALLS} calls at ${CONCURRENCY} in flight, median of ${ROUNDS} rounds taken in turn`;
    return [
      {
        bench: 'ops',
        case: `tools/call throughput over HTTP, ${CONCURRENCY} in flight, tracing exporting`,
        unit: 'calls/s',
        estate: rate(overHttp.tracing),
        peerName: 'the same server, tracing off',
        peer: rate(overHttp.off),
        notes: `${delta(overHttp.tracing, overHttp.off)} (the server's); estate serve, 2025-11-25 session, SQLite on tmpfs, metrics on in both; ${rounds}; ${Number(exported.requests)} OTLP exports, ${Math.round(Number(exported.bytes) / 1024)} KiB`,
      },
      { bench: 'ops', case: `tools/call throughput in process, ${CONCURRENCY} in flight, metrics on`, unit: 'calls/s', estate: rate(inproc.metrics), peerName: 'metrics and tracing off', peer: rate(inproc.off), notes: `${delta(inproc.metrics, inproc.off)}; no transport (a session's request handler), SQLite on tmpfs; ${IN_PROCESS_CALLS} calls (after as many to warm up) at ${CONCURRENCY} in flight, median of ${ROUNDS} rounds taken in turn, a process each` },
      { bench: 'ops', case: `tools/call throughput in process, ${CONCURRENCY} in flight, tracing exporting`, unit: 'calls/s', estate: rate(inproc.tracing), peerName: 'metrics and tracing off', peer: rate(inproc.off), notes: `${delta(inproc.tracing, inproc.off)}; 3 spans and 4 events per call` },
      { bench: 'ops', case: `tools/call throughput in process, ${CONCURRENCY} in flight, metrics on and tracing exporting`, unit: 'calls/s', estate: rate(inproc.both), peerName: 'metrics and tracing off', peer: rate(inproc.off), notes: delta(inproc.both, inproc.off) },
    ];
  } finally {
    await Promise.all(servers.map(stop));
    if (sink.process.exitCode === null) sink.process.kill('SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  }
}

const invokedDirectly = process.argv[1] !== undefined && resolve(process.argv[1]) === THIS_FILE;
if (invokedDirectly) {
  const at = process.argv.indexOf('--variant');
  if (at >= 0) {
    console.log(JSON.stringify(await inProcess(process.argv[at + 1] as Variant)));
  } else {
    const rows = await run();
    console.table(rows.map((r) => ({ case: r.case, unit: r.unit, estate: Math.round(r.estate), peer: r.peer === undefined ? '' : Math.round(r.peer), notes: r.notes ?? '' })));
  }
}
