/**
 * MCP serving: Estate (`estate serve --http`, a real process on a temp SQLite store) vs the official SDK v2
 * `McpServer` (its own process, NodeStreamableHTTPServerTransport), each serving the SAME 1,000 tools (Estate: JSON
 * Schema 2020-12 definitions published through the command handler; SDK: the same shapes as Zod schemas) with the same
 * in-process handler. Both are driven identically from this process over Streamable HTTP on loopback, as one
 * 2025-11-25 session each (initialize, then POSTs carrying Mcp-Session-Id). The floor is JSON.parse + JSON.stringify of
 * the same request and response messages: what any JSON-RPC server pays at least. Two Estate-side variants show where
 * its time goes: the store on tmpfs (no fsync for the call record) and the 2026-07-28 stateless path (no session).
 *
 * Runnable alone: `node --import tsx bench/mcp.ts`. Estate loads the handler from bench/mcp-handlers.ts; the SDK peer
 * is bench/mcp-sdk-server.ts; both serve the tools of bench/mcp-fixture.ts.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { percentile, sample, type BenchRow } from './lib.ts';
import { TOOL_COUNT, VALID_ARGS, definition, toolName } from './mcp-fixture.ts';

const CALL_LATENCY_ITERATIONS = 1500;
const CALL_THROUGHPUT_REQUESTS = 3000;
const CONCURRENCY = 16;
const LIST_ITERATIONS = 60;
const WARMUP = 150;
const PROTOCOL = '2025-11-25';

const REPO_ROOT = fileURLToPath(new URL('../', import.meta.url));
const THIS_FILE = fileURLToPath(import.meta.url);
const HANDLERS = fileURLToPath(new URL('./mcp-handlers.ts', import.meta.url));
const SDK_SERVER = fileURLToPath(new URL('./mcp-sdk-server.ts', import.meta.url));

// ---------------------------------------------------------------------------------------------------------------
// Driving a server: one 2025-11-25 session, raw POSTs (no client library in the measured path).

export interface Session {
  post(message: Record<string, unknown>): Promise<{ text: string; body: Record<string, unknown> }>;
}

/** A response is JSON, or SSE whose `data:` lines carry the JSON-RPC response; either is accepted. */
const readResponse = async (res: Response, id: unknown): Promise<{ text: string; body: Record<string, unknown> }> => {
  const raw = await res.text();
  if (!(res.headers.get('content-type') ?? '').includes('text/event-stream')) return { text: raw, body: JSON.parse(raw) as Record<string, unknown> };
  for (const line of raw.split('\n')) {
    if (!line.startsWith('data:')) continue;
    const data = line.slice(5).trim();
    if (!data) continue;
    const msg = JSON.parse(data) as Record<string, unknown>;
    if (msg.id === id) return { text: data, body: msg };
  }
  throw new Error(`no response with id ${String(id)} in SSE body: ${raw.slice(0, 300)}`);
};

export const openSession = async (url: string): Promise<Session> => {
  const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
  const init = await fetch(url, {
    method: 'POST',
    headers,
    body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: PROTOCOL, capabilities: {}, clientInfo: { name: 'bench', version: '1.0.0' } } }),
  });
  const sid = init.headers.get('mcp-session-id');
  const initBody = await readResponse(init, 0);
  if (!init.ok || !sid || !initBody.body.result) throw new Error(`initialize failed at ${url}: HTTP ${init.status} ${initBody.text.slice(0, 300)}`);
  const sessionHeaders = { ...headers, 'mcp-session-id': sid, 'mcp-protocol-version': PROTOCOL };
  const note = await fetch(url, { method: 'POST', headers: sessionHeaders, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) });
  await note.text();
  return {
    async post(message) {
      const res = await fetch(url, { method: 'POST', headers: sessionHeaders, body: JSON.stringify(message) });
      return readResponse(res, message.id);
    },
  };
};

/** Estate's 2026-07-28 path: no session; every request carries its revision in `_meta` and the routing headers. */
const openStateless = async (url: string): Promise<Session> => {
  const meta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };
  return {
    async post(message) {
      const params: Record<string, unknown> = { ...((message.params as Record<string, unknown> | undefined) ?? {}), _meta: meta };
      const headers: Record<string, string> = {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2026-07-28',
        'mcp-method': String(message.method),
        ...(message.method === 'tools/call' ? { 'mcp-name': String(params.name) } : {}),
      };
      const res = await fetch(url, { method: 'POST', headers, body: JSON.stringify({ ...message, params }) });
      return readResponse(res, message.id);
    },
  };
};

let nextId = 1;
const callMessage = (i: number) => ({ jsonrpc: '2.0', id: nextId++, method: 'tools/call', params: { name: toolName(i % TOOL_COUNT), arguments: VALID_ARGS } });

const callOnce = async (s: Session, i: number): Promise<string> => {
  const { body, text } = await s.post(callMessage(i));
  const result = body.result as { isError?: boolean } | undefined;
  if (!result || result.isError) throw new Error(`tools/call did not succeed: ${text.slice(0, 300)}`);
  return text;
};

/** Every page of tools/list; returns the tools seen and the last response text. */
const listAll = async (s: Session): Promise<{ count: number; text: string }> => {
  let cursor: string | undefined;
  let count = 0;
  let text = '';
  do {
    const r = await s.post({ jsonrpc: '2.0', id: nextId++, method: 'tools/list', params: cursor ? { cursor } : {} });
    text = r.text;
    const result = r.body.result as { tools?: unknown[]; nextCursor?: string } | undefined;
    if (!result?.tools) throw new Error(`tools/list failed: ${text.slice(0, 300)}`);
    count += result.tools.length;
    cursor = result.nextCursor;
  } while (cursor);
  return { count, text };
};

const timeAsync = async (n: number, fn: (i: number) => Promise<unknown>): Promise<number[]> => {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = process.hrtime.bigint();
    await fn(i);
    out.push(Number(process.hrtime.bigint() - t0) / 1000);
  }
  return out;
};

/** `total` calls with `CONCURRENCY` in flight; returns calls per second. */
const throughput = async (s: Session, total: number): Promise<number> => {
  let next = 0;
  const t0 = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < total) await callOnce(s, next++);
    }),
  );
  return total / (Number(process.hrtime.bigint() - t0) / 1e9);
};

interface Figures {
  listP50: number;
  listP99: number;
  listTools: number;
  callP50: number;
  callP99: number;
  callsPerSecond: number;
  /** The first call of each tool: Estate compiles a version's validator on its first call. */
  coldP50: number;
  callRequest: string;
  callResponse: string;
  listResponse: string;
}

export const measure = async (url: string, open: (url: string) => Promise<Session> = openSession): Promise<Figures> => {
  const s = await open(url);
  const first = await listAll(s);
  for (let i = 0; i < 5; i++) await listAll(s);
  const list = await timeAsync(LIST_ITERATIONS, () => listAll(s));
  // One call per tool first, timed apart: after it every tool is warm, so the loops below measure the steady state.
  const cold = await timeAsync(TOOL_COUNT, (i) => callOnce(s, i));
  for (let i = 0; i < WARMUP; i++) await callOnce(s, i);
  const callRequest = JSON.stringify(callMessage(7));
  const callResponse = await callOnce(s, 7);
  const calls = await timeAsync(CALL_LATENCY_ITERATIONS, (i) => callOnce(s, i));
  const callsPerSecond = await throughput(s, CALL_THROUGHPUT_REQUESTS);
  return {
    listP50: percentile(list, 50),
    listP99: percentile(list, 99),
    listTools: first.count,
    callP50: percentile(calls, 50),
    callP99: percentile(calls, 99),
    callsPerSecond,
    coldP50: percentile(cold, 50),
    callRequest,
    callResponse,
    listResponse: first.text,
  };
};

// ---------------------------------------------------------------------------------------------------------------
// Processes.

const waitForJsonLine = (child: ChildProcess, stream: 'stdout' | 'stderr', match: (v: Record<string, unknown>) => boolean, what: string): Promise<Record<string, unknown>> =>
  new Promise((resolve, reject) => {
    let buf = '';
    const seen: string[] = [];
    const timer = setTimeout(() => reject(new Error(`${what}: not ready in 120 s\n${seen.slice(-20).join('\n')}`)), 120_000);
    child[stream]?.on('data', (c: Buffer) => {
      buf += c.toString();
      let nl: number;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        seen.push(line);
        try {
          const v = JSON.parse(line) as Record<string, unknown>;
          if (match(v)) {
            clearTimeout(timer);
            resolve(v);
          }
        } catch {
          // not JSON: keep it for the error message
        }
      }
    });
    child.once('close', (code) => {
      clearTimeout(timer);
      reject(new Error(`${what} exited (${String(code)}) before it was ready\n${seen.slice(-20).join('\n')}`));
    });
  });

const stop = (child: ChildProcess): Promise<void> =>
  new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    const kill = setTimeout(() => child.kill('SIGKILL'), 5000);
    child.once('close', () => (clearTimeout(kill), resolve()));
    child.kill('SIGTERM');
  });

const publishAll = async (store: string): Promise<void> => {
  const { loadConfig } = await import('#config');
  const { openEstate } = await import('#compose/estate');
  const { validateDefinition } = await import('#domain/tool-definition');
  const estate = await openEstate(loadConfig({ store }));
  try {
    for (let i = 0; i < TOOL_COUNT; i++) await estate.commands.publish(validateDefinition(definition(i), estate.compiler), 'bench');
  } finally {
    await estate.close();
  }
};

const floor = (f: Figures): { list: number; call: number } => {
  // Both directions of one exchange: the client writes the request and reads the response, the server the reverse.
  const roundTrip = (request: string, response: string) => () => {
    JSON.stringify(JSON.parse(request));
    JSON.stringify(JSON.parse(response));
  };
  const listRequest = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} });
  return {
    list: percentile(sample(roundTrip(listRequest, f.listResponse), 200, 20), 50),
    call: percentile(sample(roundTrip(f.callRequest, f.callResponse), 20_000), 50),
  };
};

const startEstate = async (store: string, children: ChildProcess[]): Promise<string> => {
  const child = spawn(process.execPath, [join(REPO_ROOT, 'bin', 'estate.js'), 'serve', '--http', '--port', '0', '--store', store, '--handlers', HANDLERS], {
    cwd: REPO_ROOT,
    env: { ...process.env, ESTATE_LOG_LEVEL: 'info' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  children.push(child);
  const ready = await waitForJsonLine(child, 'stderr', (v) => v.msg === 'estate serve ready', 'estate serve');
  // Past the ready line only warnings matter; drain so the pipe never blocks the server.
  child.stderr?.resume();
  return String(ready.url);
};

/** tmpfs, where fsync costs nothing: the same server without the disk, to show what the durable call record costs. */
const SHM = '/dev/shm';

export async function run(): Promise<BenchRow[]> {
  const dir = mkdtempSync(join(tmpdir(), 'estate-bench-mcp-'));
  const shmDir = existsSync(SHM) ? mkdtempSync(join(SHM, 'estate-bench-mcp-')) : undefined;
  const store = `sqlite:${join(dir, 'bench.db')}`;
  const children: ChildProcess[] = [];
  try {
    await publishAll(store);
    if (shmDir) for (const f of readdirSync(dir)) copyFileSync(join(dir, f), join(shmDir, f));
    const estateUrl = await startEstate(store, children);
    const startSdk = async (sse: boolean): Promise<string> => {
      const child = spawn(process.execPath, ['--import', 'tsx', SDK_SERVER, ...(sse ? ['--sse'] : [])], { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
      children.push(child);
      return String((await waitForJsonLine(child, 'stdout', (v) => typeof v.url === 'string', 'SDK McpServer')).url);
    };
    const sdkReady = { url: await startSdk(false) };
    const sdkSseUrl = await startSdk(true);

    const estate = await measure(estateUrl);
    const sdk = await measure(String(sdkReady.url));
    const sdkSse = await measure(sdkSseUrl);
    const shm = shmDir ? await measure(await startEstate(`sqlite:${join(shmDir, 'bench.db')}`, children)) : undefined;
    const stateless = await measure(estateUrl, openStateless);
    const fl = floor(estate);
    const ratio = (a: number, b: number) => `${(a / b).toFixed(2)}x`;
    const peerName = 'SDK v2 McpServer (Zod, same transport, JSON responses)';
    const common = `${TOOL_COUNT} tools, Streamable HTTP on loopback, one ${PROTOCOL} session each`;
    const rows: BenchRow[] = [
      { bench: 'mcp', case: 'tools/list, full list (all pages), p50', unit: 'µs', estate: estate.listP50, peerName, peer: sdk.listP50, notes: `${common}; Estate ${estate.listTools} tools in pages of ≤500, SDK ${sdk.listTools} in one; Estate/SDK ${ratio(estate.listP50, sdk.listP50)}` },
      { bench: 'mcp', case: 'tools/list, full list (all pages), p99', unit: 'µs', estate: estate.listP99, peerName, peer: sdk.listP99, notes: `${LIST_ITERATIONS} sequential lists; Estate/SDK ${ratio(estate.listP99, sdk.listP99)}` },
      { bench: 'mcp', case: 'tools/call, valid arguments, p50', unit: 'µs', estate: estate.callP50, peerName, peer: sdk.callP50, notes: `${CALL_LATENCY_ITERATIONS} sequential calls, every tool warm; Estate validates with Ajv and commits a call record (SQLite, synchronous=FULL) before answering, the SDK records nothing; Estate/SDK ${ratio(estate.callP50, sdk.callP50)}` },
      { bench: 'mcp', case: 'tools/call, valid arguments, p99', unit: 'µs', estate: estate.callP99, peerName, peer: sdk.callP99, notes: `Estate/SDK ${ratio(estate.callP99, sdk.callP99)}` },
      { bench: 'mcp', case: `tools/call throughput, ${CONCURRENCY} in flight`, unit: 'calls/s', estate: estate.callsPerSecond, peerName, peer: sdk.callsPerSecond, notes: `${CALL_THROUGHPUT_REQUESTS} calls; Estate/SDK ${ratio(estate.callsPerSecond, sdk.callsPerSecond)}` },
      { bench: 'mcp', case: 'tools/call, first call of each tool (cold), p50', unit: 'µs', estate: estate.coldP50, peerName, peer: sdk.coldP50, notes: `${TOOL_COUNT} calls, one per tool, before the loops above; Estate compiles a validator on a version's first call; Estate/SDK ${ratio(estate.coldP50, sdk.coldP50)}` },
    ];
    const ssePeer = 'SDK v2 McpServer answering as event streams (Estate\'s response mode)';
    rows.push(
      { bench: 'mcp', case: 'tools/call, valid arguments, p50, both answering as event streams', unit: 'µs', estate: estate.callP50, peerName: ssePeer, peer: sdkSse.callP50, notes: `the SDK peer with enableJsonResponse false; Estate/SDK ${ratio(estate.callP50, sdkSse.callP50)}` },
      { bench: 'mcp', case: `tools/call throughput, ${CONCURRENCY} in flight, both answering as event streams`, unit: 'calls/s', estate: estate.callsPerSecond, peerName: ssePeer, peer: sdkSse.callsPerSecond, notes: `Estate/SDK ${ratio(estate.callsPerSecond, sdkSse.callsPerSecond)}` },
    );
    if (shm) {
      const note = 'Estate with its SQLite store on tmpfs (fsync free): the serving path without the durable write';
      rows.push(
        { bench: 'mcp', case: 'tools/call p50, Estate store on tmpfs', unit: 'µs', estate: shm.callP50, peerName, peer: sdk.callP50, notes: `${note}; Estate/SDK ${ratio(shm.callP50, sdk.callP50)}` },
        { bench: 'mcp', case: 'tools/call p99, Estate store on tmpfs', unit: 'µs', estate: shm.callP99, peerName, peer: sdk.callP99, notes: `Estate/SDK ${ratio(shm.callP99, sdk.callP99)}` },
        { bench: 'mcp', case: `tools/call throughput, ${CONCURRENCY} in flight, Estate store on tmpfs`, unit: 'calls/s', estate: shm.callsPerSecond, peerName, peer: sdk.callsPerSecond, notes: `Estate/SDK ${ratio(shm.callsPerSecond, sdk.callsPerSecond)}` },
      );
    }
    const peerless = 'Estate only: the SDK McpServer has no equivalent stateless server to compare with on this transport';
    rows.push(
      { bench: 'mcp', case: 'tools/list full list p50, Estate 2026-07-28 stateless', unit: 'µs', estate: stateless.listP50, notes: `${peerless}; vs its 2025 session ${ratio(stateless.listP50, estate.listP50)}` },
      { bench: 'mcp', case: 'tools/call p50, Estate 2026-07-28 stateless', unit: 'µs', estate: stateless.callP50, notes: `disk store; vs its 2025 session ${ratio(stateless.callP50, estate.callP50)}` },
      { bench: 'mcp', case: 'tools/call p99, Estate 2026-07-28 stateless', unit: 'µs', estate: stateless.callP99, notes: `vs its 2025 session ${ratio(stateless.callP99, estate.callP99)}` },
      { bench: 'mcp', case: `tools/call throughput, ${CONCURRENCY} in flight, Estate 2026-07-28 stateless`, unit: 'calls/s', estate: stateless.callsPerSecond, notes: `vs its 2025 session ${ratio(stateless.callsPerSecond, estate.callsPerSecond)}` },
    );
    rows.push(
      { bench: 'mcp', case: 'floor: JSON.parse+stringify of one tools/call exchange, p50', unit: 'µs', estate: estate.callP50, peerName: 'JSON floor', peer: fl.call, notes: `request + response (${estate.callResponse.length} B), both directions, in-process` },
      { bench: 'mcp', case: 'floor: JSON.parse+stringify of one tools/list page, p50', unit: 'µs', estate: estate.listP50, peerName: 'JSON floor', peer: fl.list, notes: `one page of Estate's list (${Math.round(estate.listResponse.length / 1024)} KiB), both directions; Estate's figure is the full list (2 pages)` },
    );
    return rows;
  } finally {
    await Promise.all(children.map(stop));
    rmSync(dir, { recursive: true, force: true });
    if (shmDir) rmSync(shmDir, { recursive: true, force: true });
  }
}

const invokedDirectly = process.argv[1] !== undefined && resolve(process.argv[1]) === THIS_FILE;
if (invokedDirectly) {
  const rows = await run();
  console.table(rows.map((r) => ({ case: r.case, unit: r.unit, estate: Math.round(r.estate * 10) / 10, peer: r.peer === undefined ? '' : Math.round(r.peer * 10) / 10, peerName: r.peerName ?? '' })));
  console.log(JSON.stringify(rows, null, 2));
}
