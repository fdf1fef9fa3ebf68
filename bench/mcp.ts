/**
 * MCP serving: Estate (`estate serve --http`, a real process on a temp SQLite store) vs the official SDK v2
 * `McpServer` (its own process, NodeStreamableHTTPServerTransport), each serving the SAME 1,000 tools (Estate: JSON
 * Schema 2020-12 definitions published through the command handler; SDK: the same shapes as Zod schemas) with the same
 * in-process handler. Both are driven identically from this process over Streamable HTTP on loopback (the bench's raw
 * keep-alive client, bench/http-raw.ts; `BENCH_HTTP_CLIENT=node` for node:http's), as one 2025-11-25 session each
 * (initialize, then POSTs carrying Mcp-Session-Id). The floors: JSON.parse +
 * JSON.stringify of the same messages (what any JSON-RPC server pays at least), and the store's disk (one fsync, one
 * SQLite commit: bench/mcp-floors.ts). Estate-side variants show where its time goes: the store on tmpfs (no fsync for
 * the call record), the 2026-07-28 stateless path (no session), a client that can be asked things (event streams).
 * The issue-15 targets are named in the notes of the rows that judge them.
 *
 * Warm calls are measured INTERLEAVED: every server's session makes one call in turn (rotating the order), and
 * throughput runs in rounds that alternate between the servers, so a burst of load from elsewhere on the machine (the
 * disk's other users, a noisy neighbour) falls on every side alike; run one after the other, the same commit's ratios
 * moved by 0.3–0.8 between runs minutes apart (docs/benchmarks-history.md).
 *
 * Runnable alone: `node --import tsx bench/mcp.ts`. Estate loads the handler from bench/mcp-handlers.ts; the SDK peer
 * is bench/mcp-sdk-server.ts; both serve the tools of bench/mcp-fixture.ts.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { median, percentile, sample, type BenchRow } from './lib.ts';
import { diskFloors } from './mcp-floors.ts';
import { callMessage, callOnce, HTTP_CLIENT, listAll, openSession, openStateless, PROTOCOL, publishAll, REPO_ROOT, startEstate, stop, throughput, timeAsync, waitForJsonLine, type Session } from './mcp-client.ts';
import { TOOL_COUNT } from './mcp-fixture.ts';

const CALL_LATENCY_ITERATIONS = 1500;
const CALL_THROUGHPUT_REQUESTS = 10_000;
/** Throughput rounds per server, alternating between them; the median round is reported. */
const THROUGHPUT_ROUNDS = 5;
const CONCURRENCY = 16;
const LIST_ITERATIONS = 60;
const WARMUP = 150;

const THIS_FILE = fileURLToPath(import.meta.url);
const SDK_SERVER = fileURLToPath(new URL('./mcp-sdk-server.ts', import.meta.url));

interface CallFigures {
  callP50: number;
  callP99: number;
  callsPerSecond: number;
}

interface ListFigures {
  listP50: number;
  listP99: number;
  listTools: number;
  /** The first call of each tool: a version's first call, its validators compiled ahead (or not). */
  coldP50: number;
  callRequest: string;
  callResponse: string;
  listResponse: string;
  /** Every page of one full list, as answered. */
  listPages: string[];
  /** The session, for the warm calls measured later beside the other servers'. */
  session: Session;
}

type Figures = ListFigures & CallFigures;

/**
 * Warm calls of several sessions, interleaved call by call (the order rotating each round), then throughput in rounds
 * alternating between them (the median round). Each session's figures, in the order given.
 */
const measureCallsInterleaved = async (sessions: Session[]): Promise<CallFigures[]> => {
  for (const s of sessions) for (let i = 0; i < WARMUP; i++) await callOnce(s, i);
  const latencies = sessions.map(() => [] as number[]);
  for (let i = 0; i < CALL_LATENCY_ITERATIONS; i++) {
    for (let k = 0; k < sessions.length; k++) {
      const j = (i + k) % sessions.length;
      const t0 = process.hrtime.bigint();
      await callOnce(sessions[j] as Session, i);
      (latencies[j] as number[]).push(Number(process.hrtime.bigint() - t0) / 1000);
    }
  }
  const rates = sessions.map(() => [] as number[]);
  for (let r = 0; r < THROUGHPUT_ROUNDS; r++) {
    for (let k = 0; k < sessions.length; k++) {
      const j = (r + k) % sessions.length;
      (rates[j] as number[]).push(await throughput(sessions[j] as Session, CALL_THROUGHPUT_REQUESTS / THROUGHPUT_ROUNDS, CONCURRENCY));
    }
  }
  return sessions.map((_, j) => ({ callP50: percentile(latencies[j] as number[], 50), callP99: percentile(latencies[j] as number[], 99), callsPerSecond: median(rates[j] as number[]) }));
};

/** Lists (full, every page) and each tool's first call; the warm calls come later, interleaved. */
export const measure = async (url: string, open: (url: string) => Promise<Session> = openSession): Promise<ListFigures> => {
  const s = await open(url);
  const first = await listAll(s);
  for (let i = 0; i < 5; i++) await listAll(s);
  const list = await timeAsync(LIST_ITERATIONS, () => listAll(s));
  // One call per tool first, timed apart: after it every tool is warm, so the loops below measure the steady state.
  const cold = await timeAsync(TOOL_COUNT, (i) => callOnce(s, i));
  const callRequest = JSON.stringify(callMessage(7));
  const callResponse = await callOnce(s, 7);
  return {
    listP50: percentile(list, 50),
    listP99: percentile(list, 99),
    listTools: first.count,
    coldP50: percentile(cold, 50),
    callRequest,
    callResponse,
    listResponse: first.text,
    listPages: first.pages,
    session: s,
  };
};

const floor = (f: ListFigures): { list: number; call: number; allPages: number } => {
  // Both directions of one exchange: the client writes the request and reads the response, the server the reverse.
  const roundTrip = (request: string, response: string) => () => {
    JSON.stringify(JSON.parse(request));
    JSON.stringify(JSON.parse(response));
  };
  const listRequest = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} });
  const allPages = () => {
    for (const page of f.listPages) roundTrip(listRequest, page)();
  };
  return {
    list: percentile(sample(roundTrip(listRequest, f.listResponse), 200, 20), 50),
    call: percentile(sample(roundTrip(f.callRequest, f.callResponse), 20_000), 50),
    allPages: percentile(sample(allPages, 100, 10), 50),
  };
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
    const estateUrl = (await startEstate(store, children)).url;
    const startSdk = async (sse: boolean): Promise<string> => {
      const child = spawn(process.execPath, ['--import', 'tsx', SDK_SERVER, ...(sse ? ['--sse'] : [])], { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
      children.push(child);
      return String((await waitForJsonLine(child, 'stdout', (v) => typeof v.url === 'string', 'SDK McpServer')).url);
    };
    const sdkReady = { url: await startSdk(false) };
    const sdkSseUrl = await startSdk(true);

    const estateLists = await measure(estateUrl);
    const sdkLists = await measure(String(sdkReady.url));
    const sdkSseLists = await measure(sdkSseUrl);
    const shmUrl = shmDir ? (await startEstate(`sqlite:${join(shmDir, 'bench.db')}`, children)).url : undefined;
    const shmLists = shmUrl ? await measure(shmUrl) : undefined;
    const statelessLists = await measure(estateUrl, openStateless);
    // The stateless path without the disk: what it costs on its own (the disk's share varies with its other users).
    const shmStatelessSession = shmUrl ? await openStateless(shmUrl) : undefined;
    // Every warm-call figure below comes from ONE interleaved measurement of these sessions.
    const interleaved = [estateLists.session, sdkLists.session, statelessLists.session, ...(shmLists ? [shmLists.session] : []), ...(shmStatelessSession ? [shmStatelessSession] : [])];
    const [estateCalls, sdkCalls, statelessCalls, ...shmCalls] = (await measureCallsInterleaved(interleaved)) as [CallFigures, CallFigures, CallFigures, ...CallFigures[]];
    const estate: Figures = { ...estateLists, ...estateCalls };
    const sdk: Figures = { ...sdkLists, ...sdkCalls };
    const stateless: Figures = { ...statelessLists, ...statelessCalls };
    const shm: Figures | undefined = shmLists ? { ...shmLists, ...(shmCalls[0] as CallFigures) } : undefined;
    const shmStateless = shmStatelessSession ? shmCalls[shmLists ? 1 : 0] : undefined;
    // A client that declared elicitation may be asked things mid-call: Estate answers its calls as event streams;
    // interleaved with the SDK answering as event streams.
    const [estateSse, sdkSseCalls] = (await measureCallsInterleaved([await openSession(estateUrl, { elicitation: {} }), sdkSseLists.session])) as [CallFigures, CallFigures];
    const sdkSse: Figures = { ...sdkSseLists, ...sdkSseCalls };
    const disk = diskFloors(dir);
    const fl = floor(estate);
    const ratio = (a: number, b: number) => `${(a / b).toFixed(2)}x`;
    const peerName = 'SDK v2 McpServer (Zod, same transport, JSON responses)';
    const common = `${TOOL_COUNT} tools, Streamable HTTP on loopback, one ${PROTOCOL} session each, driven by ${HTTP_CLIENT}`;
    const rows: BenchRow[] = [
      { bench: 'mcp', case: 'tools/list, full list (all pages), p50', unit: 'µs', estate: estate.listP50, peerName, peer: sdk.listP50, notes: `${common}; Estate ${estate.listTools} tools in pages of ≤500, SDK ${sdk.listTools} in one; Estate/SDK ${ratio(estate.listP50, sdk.listP50)}` },
      { bench: 'mcp', case: 'tools/list, full list (all pages), p99', unit: 'µs', estate: estate.listP99, peerName, peer: sdk.listP99, notes: `${LIST_ITERATIONS} sequential lists; Estate/SDK ${ratio(estate.listP99, sdk.listP99)}` },
      { bench: 'mcp', case: 'tools/call, valid arguments, p50', unit: 'µs', estate: estate.callP50, peerName, peer: sdk.callP50, notes: `${CALL_LATENCY_ITERATIONS} sequential calls each, interleaved call by call with the peer's and Estate's variants, every tool warm; Estate validates with Ajv and commits a call record (SQLite, synchronous=FULL) before answering, the SDK records nothing; Estate/SDK ${ratio(estate.callP50, sdk.callP50)}` },
      { bench: 'mcp', case: 'tools/call, valid arguments, p99', unit: 'µs', estate: estate.callP99, peerName, peer: sdk.callP99, notes: `Estate/SDK ${ratio(estate.callP99, sdk.callP99)}` },
      { bench: 'mcp', case: `tools/call throughput, ${CONCURRENCY} in flight`, unit: 'calls/s', estate: estate.callsPerSecond, peerName, peer: sdk.callsPerSecond, notes: `median of ${THROUGHPUT_ROUNDS} rounds of ${CALL_THROUGHPUT_REQUESTS / THROUGHPUT_ROUNDS} calls, rounds alternating with the peer's; durable records, group commit; Estate/SDK ${ratio(estate.callsPerSecond, sdk.callsPerSecond)} (issue 15 target: ≥ 1.5x)` },
      { bench: 'mcp', case: 'tools/call, first call of each tool (cold), p50', unit: 'µs', estate: estate.coldP50, peerName, peer: sdk.coldP50, notes: `${TOOL_COUNT} calls, one per tool, before the loops above; Estate compiles a validator on a version's first call; Estate/SDK ${ratio(estate.coldP50, sdk.coldP50)}` },
    ];
    const ssePeer = 'SDK v2 McpServer answering as event streams (Estate\'s response mode)';
    rows.push(
      { bench: 'mcp', case: 'tools/call, valid arguments, p50, both answering as event streams', unit: 'µs', estate: estateSse.callP50, peerName: ssePeer, peer: sdkSse.callP50, notes: `the SDK peer with enableJsonResponse false; Estate for a client that declared elicitation (a call that may ask it something streams; others answer as JSON); Estate/SDK ${ratio(estateSse.callP50, sdkSse.callP50)}` },
      { bench: 'mcp', case: `tools/call throughput, ${CONCURRENCY} in flight, both answering as event streams`, unit: 'calls/s', estate: estateSse.callsPerSecond, peerName: ssePeer, peer: sdkSse.callsPerSecond, notes: `Estate/SDK ${ratio(estateSse.callsPerSecond, sdkSse.callsPerSecond)}` },
    );
    if (shm) {
      const note = 'Estate with its SQLite store on tmpfs (fsync free): the serving path without the durable write';
      rows.push(
        { bench: 'mcp', case: 'tools/call p50, Estate store on tmpfs', unit: 'µs', estate: shm.callP50, peerName, peer: sdk.callP50, notes: `${note}; Estate/SDK ${ratio(shm.callP50, sdk.callP50)} (issue 15 target: ≤ 1.00x)` },
        { bench: 'mcp', case: 'tools/call p99, Estate store on tmpfs', unit: 'µs', estate: shm.callP99, peerName, peer: sdk.callP99, notes: `Estate/SDK ${ratio(shm.callP99, sdk.callP99)}` },
        { bench: 'mcp', case: `tools/call throughput, ${CONCURRENCY} in flight, Estate store on tmpfs`, unit: 'calls/s', estate: shm.callsPerSecond, peerName, peer: sdk.callsPerSecond, notes: `Estate/SDK ${ratio(shm.callsPerSecond, sdk.callsPerSecond)}` },
      );
    }
    if (shmStateless) {
      rows.push(
        { bench: 'mcp', case: 'tools/call p50, Estate 2026-07-28 stateless, store on tmpfs', unit: 'µs', estate: shmStateless.callP50, peerName, peer: sdk.callP50, notes: `the stateless path without fsync; Estate/SDK ${ratio(shmStateless.callP50, sdk.callP50)}` },
        { bench: 'mcp', case: `tools/call throughput, ${CONCURRENCY} in flight, Estate 2026-07-28 stateless, store on tmpfs`, unit: 'calls/s', estate: shmStateless.callsPerSecond, peerName, peer: sdk.callsPerSecond, notes: `Estate/SDK ${ratio(shmStateless.callsPerSecond, sdk.callsPerSecond)}` },
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
    // Issue 15: each target against its own peer or floor, one row each.
    rows.push(
      { bench: 'mcp', case: 'tools/list full list p50 vs JSON floor of all its pages', unit: 'µs', estate: estate.listP50, peerName: 'JSON floor, every page', peer: fl.allPages, notes: `JSON.parse+stringify of each of the ${estate.listPages.length} pages, both directions; Estate/floor ${ratio(estate.listP50, fl.allPages)} (target: ≤ 3x)` },
      { bench: 'mcp', case: 'tools/call, first call of each tool vs a warm call, p50', unit: 'µs', estate: estate.coldP50, peerName: "Estate's own warm call, p50", peer: estate.callP50, notes: `cold/warm ${ratio(estate.coldP50, estate.callP50)} (target: ≤ 2x); validators compiled ahead, one per distinct schema` },
      { bench: 'mcp', case: 'tools/call p50, durable record on disk vs one fsync of the disk', unit: 'µs', estate: estate.callP50, peerName: "floor: fsync of a 4 KiB write on the store's disk", peer: disk.fsyncP50, notes: `Estate/SDK ${ratio(estate.callP50, sdk.callP50)} (target: ≤ 1.3x); the disk's own floors: fsync ${disk.fsyncP50.toFixed(0)} µs, one SQLite commit (WAL, synchronous=FULL) ${disk.commitP50.toFixed(0)} µs` },
      { bench: 'mcp', case: 'floor: one SQLite commit of a call-sized row (WAL, synchronous=FULL), p50', unit: 'µs', estate: estate.callP50, peerName: "floor: SQLite commit on the store's disk", peer: disk.commitP50, notes: 'what a durable record costs at least on this disk, before any MCP work; Estate figure: its durable tools/call p50' },
      { bench: 'mcp', case: `tools/call throughput, ${CONCURRENCY} in flight, Estate 2026-07-28 stateless vs McpServer 2025 session`, unit: 'calls/s', estate: stateless.callsPerSecond, peerName, peer: sdk.callsPerSecond, notes: `disk store, a record per call (group commit); Estate/SDK ${ratio(stateless.callsPerSecond, sdk.callsPerSecond)} (target: ≥ 2x)` },
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
