/**
 * A probe, not a bench row: what an upstream that never stops changing costs the estate. A stdio upstream (written
 * here, without an SDK) lists `--tools` tools whose descriptions change at every listing and announces list_changed
 * every 100 ms; `estate serve --http --demo` fronts it (its first listing approved). For `--seconds`, a caller makes
 * one local `fx.rates` call every 50 ms. Printed as JSON: the events the store gained, the serving process's CPU share
 * (from /proc, Linux), and the local calls' p50/p99 beside the same calls with the upstream quiet (first half: quiet
 * for `--seconds`, then the flood for as long). `--estate <checkout>` runs another checkout's bin/estate.js (built);
 * `--profile <dir>` has the server write a V8 CPU profile there (bench/cpuprofile-summary.ts reads it).
 *
 *   node --import tsx bench/upstream-drift-flood.ts [--tools 1000] [--seconds 30] [--estate /work/base]
 */
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import Database from 'better-sqlite3';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { percentile } from './lib.ts';
import { cli, waitFor } from './upstream.ts';

const REPO_ROOT = fileURLToPath(new URL('../', import.meta.url));
const { values } = parseArgs({
  options: { tools: { type: 'string', default: '1000' }, seconds: { type: 'string', default: '30' }, estate: { type: 'string', default: REPO_ROOT }, profile: { type: 'string' } },
});
const estate = join(values.estate, 'bin', 'estate.js');
const seconds = Number(values.seconds);

/** The hostile upstream: FLOOD=1 in a file next to it turns the changes and the notices on. */
const upstreamSource = (tools: number, switchFile: string): string => `
const { readFileSync } = require('node:fs');
const send = (m) => process.stdout.write(JSON.stringify(m) + '\\n');
let listing = 0;
const flooding = () => { try { return readFileSync(${JSON.stringify(switchFile)}, 'utf8').trim() === '1'; } catch { return false; } };
setInterval(() => { if (flooding()) send({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' }); }, 100);
require('node:readline').createInterface({ input: process.stdin }).on('line', (line) => {
  const m = JSON.parse(line);
  if (m.id === undefined || m.method === undefined) return;
  if (m.method === 'initialize') return send({ jsonrpc: '2.0', id: m.id, result: { protocolVersion: '2025-11-25', capabilities: { tools: { listChanged: true } }, serverInfo: { name: 'drifter', version: '1' } } });
  if (m.method === 'tools/list') {
    const n = flooding() ? ++listing : 0;
    const tools = Array.from({ length: ${tools} }, (_, i) => ({ name: 't' + i, description: 'Tool ' + i + ', listing ' + n + '.', inputSchema: { type: 'object', properties: { x: { type: 'string' } } }, annotations: { readOnlyHint: true } }));
    return send({ jsonrpc: '2.0', id: m.id, result: { tools } });
  }
  send({ jsonrpc: '2.0', id: m.id, result: {} });
});
`;

const cpuSeconds = (pid: number): number => {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return (Number(f[11]) + Number(f[12])) / 100; // utime + stime, in clock ticks of 10 ms
};

const dir = mkdtempSync(join(tmpdir(), 'estate-probe-drift-'));
const db = join(dir, 'e.db');
const store = `sqlite:${db}`;
const switchFile = join(dir, 'flood');
const children: ChildProcess[] = [];
try {
  writeFileSync(join(dir, 'drifter.cjs'), upstreamSource(Number(values.tools), switchFile));
  writeFileSync(switchFile, '0');
  await cli(['upstream', 'add', 'drift', '--command', `${process.execPath} ${join(dir, 'drifter.cjs')}`, '--scopes', 'd.use', '--clearance', 'internal'], store, estate);
  await cli(['upstream', 'sync', 'drift'], store, estate);
  await cli(['upstream', 'approve', 'drift', '--all'], store, estate);
  const profile = values.profile ? ['--cpu-prof', `--cpu-prof-dir=${values.profile}`] : [];
  const server = spawn(process.execPath, [...profile, estate, 'serve', '--http', '--port', '0', '--store', store, '--demo', '--scopes', 'd.use', '--clearance', 'internal', '--upstream-sync-interval', '0'], {
    env: { ...process.env, ESTATE_LOG_LEVEL: 'info' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  children.push(server);
  const ready = JSON.parse(await waitFor(server, 'estate serve ready')) as { url: string };
  const client = new Client({ name: 'probe-drift', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(ready.url)));
  const events = (): number => {
    const d = new Database(db, { readonly: true });
    try {
      return (d.prepare('SELECT count(*) AS n FROM events').get() as { n: number }).n;
    } finally {
      d.close();
    }
  };
  const pid = server.pid as number;
  /** One local call every 50 ms for `seconds`: latencies, events gained, CPU share. */
  const phase = async () => {
    const [e0, c0, t0] = [events(), cpuSeconds(pid), performance.now()];
    const lat: number[] = [];
    while (performance.now() - t0 < seconds * 1000) {
      const s = performance.now();
      await client.callTool({ name: 'fx.rates', arguments: { base: 'EUR', quote: 'USD' } });
      lat.push(performance.now() - s);
      await new Promise((r) => setTimeout(r, 50));
    }
    const wall = (performance.now() - t0) / 1000;
    return { events: events() - e0, cpu: Math.round(((cpuSeconds(pid) - c0) / wall) * 100) / 100, p50: Math.round(percentile(lat, 50) * 100) / 100, p99: Math.round(percentile(lat, 99) * 100) / 100 };
  };
  const quiet = await phase();
  writeFileSync(switchFile, '1');
  const flood = await phase();
  writeFileSync(switchFile, '0');
  await client.close();
  if (values.profile) {
    server.kill('SIGINT'); // a clean stop writes the profile
    await new Promise((r) => server.once('exit', r));
  }
  console.log(JSON.stringify({ estate: values.estate, tools: Number(values.tools), seconds, quiet, flood }));
} finally {
  for (const c of children) c.kill();
  rmSync(dir, { recursive: true, force: true });
}
