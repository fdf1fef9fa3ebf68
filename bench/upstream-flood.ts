/**
 * A probe, not a bench row: what an upstream that floods one call with notifications costs everyone else. `estate
 * serve --http` fronts one upstream: over HTTP test/fixtures/upstream/fixture-http.mjs (its `flood` tool: `--logs`
 * log lines of one character on the call's event stream, or `--comments` comment lines, or `--empty` events holding
 * only a comment), over stdio test/fixtures/upstream/fixture-server.mjs (its `chatter` tool: `--logs` log
 * notifications; or with `--stderr N`, its `grumble` tool: N MiB of one-character lines on its stderr). While the
 * flooding call runs, a second client asks tools/list again and again (`--beside list`), or, over HTTP, calls the same
 * upstream's `flood` tool for 10 log lines 20 ms apart (`--beside call`: a call that streams a little at a time, ~180
 * ms alone). Printed as JSON: how long the flooding call took and how it ended, the serving process's CPU time over it
 * (from /proc, Linux), and the second client's count of requests, p50, p99 and longest wait. `--estate <checkout>`
 * runs another checkout's bin/estate.js (built; its fixtures are this checkout's), to compare two builds.
 *
 *   node --import tsx bench/upstream-flood.ts [--transport http|stdio] [--logs 30000] [--comments N] [--empty N]
 *     [--stderr MiB] [--beside list|call] [--estate /work/base]
 */
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { startFixtureHttp } from '../test/fixtures/upstream/fixture-http.ts';
import { percentile } from './lib.ts';
import { cli, waitFor } from './upstream.ts';

// The probe's second client makes thousands of requests on one SDK transport. Node's fetch (undici) adds an abort
// listener to the transport's signal per request and removes it only when the request is garbage-collected, so
// between collections Node warns of "1501 abort listeners" (not a leak: 2,000 fetches on one signal left 710
// listeners on it, and a gc() none). The warning would bury the result.
process.removeAllListeners('warning');

const REPO_ROOT = fileURLToPath(new URL('../', import.meta.url));
const FIXTURES = join(REPO_ROOT, 'test', 'fixtures', 'upstream');
const { values } = parseArgs({
  options: {
    transport: { type: 'string', default: 'http' },
    logs: { type: 'string', default: '30000' },
    comments: { type: 'string', default: '0' },
    empty: { type: 'string', default: '0' },
    stderr: { type: 'string', default: '0' },
    beside: { type: 'string', default: 'list' },
    estate: { type: 'string', default: REPO_ROOT },
  },
});
if (values.transport !== 'http' && values.transport !== 'stdio') throw new Error(`--transport must be http or stdio (got ${values.transport})`);
const counts = { logs: Number(values.logs), comments: Number(values.comments), empty: Number(values.empty), stderr: Number(values.stderr) };
for (const [k, v] of Object.entries(counts)) if (!Number.isInteger(v) || v < 0) throw new Error(`--${k} must be a whole number (got ${String(v)})`);
if (values.transport === 'stdio' && (counts.comments > 0 || counts.empty > 0)) throw new Error('--comments and --empty are event-stream lines: HTTP only');
if (values.transport === 'http' && counts.stderr > 0) throw new Error('--stderr is a stdio child\'s: stdio only');
if (values.beside !== 'list' && values.beside !== 'call') throw new Error(`--beside must be list or call (got ${values.beside})`);
if (values.beside === 'call' && values.transport !== 'http') throw new Error('--beside call streams from the HTTP fixture: HTTP only');
const estate = join(values.estate, 'bin', 'estate.js');

/** User + system CPU time of a process, ms (/proc/<pid>/stat; clock ticks of 10 ms). */
const cpuMs = (pid: number): number => {
  const f = (readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1] ?? '').split(' ');
  return (Number(f[11]) + Number(f[12])) * 10;
};

const dir = mkdtempSync(join(tmpdir(), 'estate-probe-flood-'));
const store = `sqlite:${join(dir, 'e.db')}`;
const children: ChildProcess[] = [];
try {
  let tool: string;
  let args: Record<string, number>;
  if (values.transport === 'http') {
    const { child, url } = await startFixtureHttp();
    children.push(child);
    await cli(['upstream', 'add', 'fx', '--url', url, '--scopes', 'fx.use', '--clearance', 'internal'], store, estate);
    tool = 'fx.flood';
    args = { logs: counts.logs, size: 1, comments: counts.comments, empty: counts.empty };
  } else {
    const spec = join(dir, 'tools.json');
    const tools = [
      { name: 'chatter', description: 'Logs, then answers.', inputSchema: { type: 'object', properties: { logs: { type: 'integer' } } }, annotations: { readOnlyHint: true } },
      { name: 'grumble', description: 'Writes to stderr, then answers.', inputSchema: { type: 'object', properties: { mib: { type: 'integer' } } }, annotations: { readOnlyHint: true } },
    ];
    writeFileSync(spec, JSON.stringify({ tools }));
    const command = `${process.execPath} ${join(FIXTURES, 'fixture-server.mjs')} ${spec} ${join(dir, 'calls.log')}`;
    await cli(['upstream', 'add', 'fx', '--command', command, '--scopes', 'fx.use', '--clearance', 'internal'], store, estate);
    tool = counts.stderr > 0 ? 'fx.grumble' : 'fx.chatter';
    args = counts.stderr > 0 ? { mib: counts.stderr } : { logs: counts.logs };
  }
  await cli(['upstream', 'sync', 'fx'], store, estate);
  await cli(['upstream', 'approve', 'fx', '--all'], store, estate);
  const server = spawn(process.execPath, [estate, 'serve', '--http', '--port', '0', '--store', store, '--scopes', 'fx.use', '--clearance', 'internal', '--upstream-sync-interval', '0'], {
    env: { ...process.env, ESTATE_LOG_LEVEL: 'info' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  children.push(server);
  const ready = JSON.parse(await waitFor(server, 'estate serve ready')) as { url: string };
  const connect = async (name: string): Promise<Client> => {
    const c = new Client({ name, version: '1.0.0' });
    await c.connect(new StreamableHTTPClientTransport(new URL(ready.url)));
    return c;
  };
  const flooded = await connect('probe-flooded');
  const beside = await connect('probe-beside');
  await beside.listTools();
  const pid = server.pid as number;
  const cpu0 = cpuMs(pid);
  const t0 = performance.now();
  let done = false;
  const call = flooded.callTool({ name: tool, arguments: args }, { timeout: 600_000 }).then(
    (r) => (r.isError ? `isError: ${JSON.stringify(r.content).slice(0, 200)}` : 'answered'),
    (e: unknown) => `failed: ${String(e).slice(0, 200)}`,
  );
  void call.finally(() => (done = true));
  const waits: number[] = [];
  while (!done) {
    const t = performance.now();
    if (values.beside === 'list') await beside.listTools();
    else await beside.callTool({ name: 'fx.flood', arguments: { logs: 10, size: 1, everyMs: 20 } }, { timeout: 600_000 });
    waits.push(performance.now() - t);
  }
  const outcome = await call;
  const seconds = (performance.now() - t0) / 1000;
  const cpu = cpuMs(pid) - cpu0;
  waits.sort((a, b) => a - b);
  const ms = (v: number): number => Math.round(v * 10) / 10;
  await flooded.close();
  await beside.close();
  console.log(
    JSON.stringify(
      {
        estate: values.estate,
        transport: values.transport,
        flood: args,
        outcome,
        seconds: ms(seconds),
        serverCpuMs: cpu,
        beside: { [values.beside === 'list' ? 'lists' : 'calls']: waits.length, p50Ms: ms(percentile(waits, 50)), p99Ms: ms(percentile(waits, 99)), slowestMs: waits.slice(-5).map(ms) },
      },
      null,
      2,
    ),
  );
} finally {
  for (const c of children) c.kill();
  rmSync(dir, { recursive: true, force: true });
}
