/**
 * Proxying (SPEC §7): a tools/call through `estate serve --http` in front of server-everything (over stdio, and over
 * Streamable HTTP), beside the same call made directly to the same upstream by the SDK v2 Client, and beside Estate
 * answering from a local handler (what the proxy adds beyond Estate's own path). Latency p50/p99 of sequential calls,
 * the three kinds interleaved call by call so a noisy shared machine hits them alike, and throughput at 16 in flight; Estate's figures include its durable call record (SQLite,
 * synchronous=FULL) and the validation of the arguments against the pinned schema. Throughput through Estate is
 * also set beside Estate's local handler driven by the same SDK Client over HTTP: that client's own cost per call
 * (fetch, SSE parsing) bounds both, and a direct stdio client pays none of it. Runnable alone:
 * `node --import tsx bench/upstream.ts`.
 */
import { Client, StreamableHTTPClientTransport, type Transport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { percentile, type BenchRow } from './lib.ts';

const REPO_ROOT = fileURLToPath(new URL('../', import.meta.url));
const ESTATE = join(REPO_ROOT, 'bin', 'estate.js');
const EVERYTHING = join(REPO_ROOT, 'node_modules', '@modelcontextprotocol', 'server-everything', 'dist', 'index.js');
const SEQUENTIAL = 200;
const CONCURRENT_REQUESTS = 480;
const CONCURRENCY = 16;
const WARMUP = 30;

/** A local handler with the same answer, served by the same process (`--handlers bench/upstream.ts`): Estate's own cost. */
export const handlers = { 'bench.echo': async (args: Record<string, unknown>) => ({ content: [{ type: 'text' as const, text: `Echo: ${String(args.message)}` }] }) };

const localEcho = {
  name: 'bench.echo',
  version: '1.0.0',
  description: 'Echoes the message (a local handler).',
  inputSchema: { type: 'object', properties: { message: { type: 'string' } }, required: ['message'] },
  access: { requiredScopes: ['bench.use'], tenants: [], classification: 'internal' },
  sideEffect: 'none',
  handler: 'bench.echo',
};

const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });

export const waitFor = (child: ChildProcess, text: string): Promise<string> =>
  new Promise((resolve, reject) => {
    let seen = '';
    child.stderr?.on('data', (c: Buffer) => {
      seen += c.toString();
      const line = seen.split('\n').find((l) => l.includes(text));
      if (line) resolve(line);
    });
    child.once('exit', (code) => reject(new Error(`exited ${String(code)} before "${text}": ${seen.slice(-2000)}`)));
  });

/** `estate <args> --store <store>` to completion (`estate`: another checkout's bin/estate.js, for an A/B). */
export const cli = (args: string[], store: string, estate = ESTATE): Promise<void> =>
  new Promise((resolve, reject) => {
    const c = spawn(process.execPath, [estate, ...args, '--store', store], { cwd: REPO_ROOT, stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, ESTATE_LOG_LEVEL: 'warn' } });
    let err = '';
    c.stderr.on('data', (d: Buffer) => (err += d.toString()));
    c.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`estate ${args.join(' ')}: ${err}`))));
  });

const connect = async (transport: Transport): Promise<Client> => {
  const client = new Client({ name: 'bench-upstream', version: '1.0.0' });
  await client.connect(transport);
  return client;
};

type Call = () => Promise<unknown>;
const caller = (client: Client, tool: string): Call => () => client.callTool({ name: tool, arguments: { message: 'bench' } });

/**
 * Sequential latency of several calls, INTERLEAVED: each round makes one call of each kind, in a rotating order, so a
 * burst of load from elsewhere on a shared machine falls on every side alike and the differences stay readable.
 */
const latencies = async (calls: Call[]): Promise<{ p50: number; p99: number }[]> => {
  for (const call of calls) for (let i = 0; i < WARMUP; i++) await call();
  const lat = calls.map(() => [] as number[]);
  for (let i = 0; i < SEQUENTIAL; i++) {
    for (let k = 0; k < calls.length; k++) {
      const j = (i + k) % calls.length;
      const t0 = process.hrtime.bigint();
      await (calls[j] as Call)();
      (lat[j] as number[]).push(Number(process.hrtime.bigint() - t0) / 1e6);
    }
  }
  return lat.map((l) => ({ p50: percentile(l, 50), p99: percentile(l, 99) }));
};

const throughput = async (call: Call): Promise<number> => {
  let next = 0;
  const t0 = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next++ < CONCURRENT_REQUESTS) await call();
    }),
  );
  return CONCURRENT_REQUESTS / (Number(process.hrtime.bigint() - t0) / 1e9);
};

type Lat = { p50: number; p99: number };
const round = (x: number, d = 2): number => Math.round(x * 10 ** d) / 10 ** d;

export async function run(): Promise<BenchRow[]> {
  const dir = mkdtempSync(join(tmpdir(), 'estate-bench-upstream-'));
  const store = `sqlite:${join(dir, 'e.db')}`;
  const port = await freePort();
  const children: ChildProcess[] = [];
  const clients: Client[] = [];
  try {
    const everythingHttp = spawn(process.execPath, [EVERYTHING, 'streamableHttp'], { env: { ...process.env, PORT: String(port) }, stdio: ['ignore', 'ignore', 'pipe'] });
    children.push(everythingHttp);
    await waitFor(everythingHttp, 'listening on port');
    const upstreamUrl = `http://127.0.0.1:${port}/mcp`;
    const access = ['--scopes', 'bench.use', '--clearance', 'internal'];
    await cli(['upstream', 'add', 'ev', '--command', `${process.execPath} ${EVERYTHING} stdio`, ...access], store);
    await cli(['upstream', 'add', 'evh', '--url', upstreamUrl, ...access], store);
    for (const ns of ['ev', 'evh']) {
      await cli(['upstream', 'sync', ns], store);
      await cli(['upstream', 'approve', ns, '--all'], store);
    }
    const def = join(dir, 'bench.echo.json');
    writeFileSync(def, JSON.stringify(localEcho));
    await cli(['publish', def], store);
    // ESTATE_BENCH_CPU_PROF=<dir>: the Estate process writes a V8 CPU profile there (read it with bench/cpuprofile-summary.ts).
    const profile = process.env.ESTATE_BENCH_CPU_PROF ? ['--cpu-prof', '--cpu-prof-interval=250', `--cpu-prof-dir=${process.env.ESTATE_BENCH_CPU_PROF}`] : [];
    const estate = spawn(process.execPath, [...profile, ESTATE, 'serve', '--http', '--port', '0', '--store', store, '--handlers', fileURLToPath(import.meta.url), '--scopes', 'bench.use', '--clearance', 'internal', '--upstream-sync-interval', '0'], {
      cwd: REPO_ROOT,
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { ...process.env, ESTATE_LOG_LEVEL: 'info' },
    });
    children.push(estate);
    const ready = JSON.parse(await waitFor(estate, 'estate serve ready')) as { url: string };

    const direct = {
      stdio: await connect(new StdioClientTransport({ command: process.execPath, args: [EVERYTHING, 'stdio'], stderr: 'ignore' })),
      http: await connect(new StreamableHTTPClientTransport(new URL(upstreamUrl))),
    };
    const viaEstate = await connect(new StreamableHTTPClientTransport(new URL(ready.url)));
    clients.push(direct.stdio, direct.http, viaEstate);

    const rows: BenchRow[] = [];
    const local = caller(viaEstate, 'bench.echo');
    for (const [kind, ns, directClient] of [['HTTP', 'evh', direct.http], ['stdio', 'ev', direct.stdio]] as const) {
      const [d, p, l] = (await latencies([caller(directClient, 'echo'), caller(viaEstate, `${ns}.echo`), local])) as [Lat, Lat, Lat];
      const dOps = await throughput(caller(directClient, 'echo'));
      const pOps = await throughput(caller(viaEstate, `${ns}.echo`));
      const lOps = await throughput(local);
      const peerName = `SDK Client direct to the upstream (${kind})`;
      const notes = `server-everything echo over ${kind}; Estate over HTTP 2025-11-25 in front; samples interleaved with Estate serving the same answer from a LOCAL handler (same process, same durable call record): p50 ${round(l.p50)} ms, p99 ${round(l.p99)} ms`;
      rows.push(
        { bench: 'upstream', case: `proxied tools/call, upstream over ${kind}, p50`, unit: 'ms', estate: round(p.p50), peerName, peer: round(d.p50), notes: `${notes}; the proxy adds ${round(p.p50 - d.p50)} ms over direct, ${round(p.p50 - l.p50)} ms over Estate's local handler` },
        { bench: 'upstream', case: `proxied tools/call, upstream over ${kind}, p99`, unit: 'ms', estate: round(p.p99), peerName, peer: round(d.p99), notes },
        { bench: 'upstream', case: `proxied tools/call, upstream over ${kind}, ${CONCURRENCY} in flight`, unit: 'ops/s', estate: Math.round(pOps), peerName, peer: Math.round(dOps), notes: `${notes}; ratio ${round(pOps / dOps)}` },
        {
          bench: 'upstream',
          case: `proxied tools/call, upstream over ${kind}, ${CONCURRENCY} in flight, vs Estate's local handler`,
          unit: 'ops/s',
          estate: Math.round(pOps),
          peerName: "Estate's local handler, same SDK Client over HTTP",
          peer: Math.round(lOps),
          notes: `what the proxy hop costs at ${CONCURRENCY} in flight: both sides driven by the same SDK v2 Client over Streamable HTTP, whose own cost per call bounds them (a direct stdio client pays none of it); ratio ${round(pOps / lOps)}`,
        },
      );
    }
    return rows;
  } finally {
    await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
    for (const c of children) c.kill('SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const rows = await run();
  console.log(JSON.stringify(rows, null, 2));
}
