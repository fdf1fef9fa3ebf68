/**
 * A probe, not a bench row: what many large upstream answers at once cost a serving process. `estate serve --http`
 * fronts one HTTP upstream (test/fixtures/upstream/fixture-http.mjs, its `bulk` tool) and `--calls` callers ask it at
 * once for `--mib` MiB each; the server's resident memory is sampled every 20 ms from /proc (Linux). Printed as JSON:
 * the RSS before and at its peak, how many calls got their whole answer and how many were refused (and why), and the
 * wall time. `--estate <checkout>` runs another checkout's bin/estate.js (built) against the same fixture, for an A/B;
 * extra environment for the server: `--env NAME=VALUE`.
 *
 *   node --import tsx bench/upstream-answers.ts [--calls 8] [--mib 60] [--estate /work/base] [--env ESTATE_...=...]
 */
import { Client, StreamableHTTPClientTransport, type CallToolResult } from '@modelcontextprotocol/client';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { startFixtureHttp } from '../test/fixtures/upstream/fixture-http.ts';
import { cli, waitFor } from './upstream.ts';

const REPO_ROOT = fileURLToPath(new URL('../', import.meta.url));
const MiB = 1024 * 1024;

const { values } = parseArgs({
  options: {
    calls: { type: 'string', default: '8' },
    mib: { type: 'string', default: '60' },
    estate: { type: 'string', default: REPO_ROOT },
    env: { type: 'string', multiple: true, default: [] },
  },
});
const calls = Number(values.calls);
const mib = Number(values.mib);
const estate = join(values.estate, 'bin', 'estate.js');
const env = Object.fromEntries(values.env.map((e) => [e.slice(0, e.indexOf('=')), e.slice(e.indexOf('=') + 1)]));

const rssMiB = (pid: number): number => {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
};

const dir = mkdtempSync(join(tmpdir(), 'estate-probe-answers-'));
const store = `sqlite:${join(dir, 'e.db')}`;
const children: ChildProcess[] = [];
try {
  const { child, url } = await startFixtureHttp();
  children.push(child);
  await cli(['upstream', 'add', 'big', '--url', url, '--scopes', 'big.use', '--clearance', 'internal'], store, estate);
  await cli(['upstream', 'sync', 'big'], store, estate);
  await cli(['upstream', 'approve', 'big', '--all'], store, estate);
  const server = spawn(process.execPath, [estate, 'serve', '--http', '--port', '0', '--store', store, '--scopes', 'big.use', '--clearance', 'internal', '--upstream-sync-interval', '0'], {
    env: { ...process.env, ESTATE_LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  children.push(server);
  const ready = JSON.parse(await waitFor(server, 'estate serve ready')) as { url: string };
  const client = new Client({ name: 'probe-answers', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(ready.url)));
  await client.callTool({ name: 'big.bulk', arguments: { mib: 1 } }); // warm: connected, validators compiled
  const pid = server.pid as number;
  const before = rssMiB(pid);
  let peak = before;
  const sampler = setInterval(() => (peak = Math.max(peak, rssMiB(pid))), 20);
  const t0 = performance.now();
  const results = await Promise.all(
    Array.from({ length: calls }, () =>
      client.callTool({ name: 'big.bulk', arguments: { mib } }, { timeout: 600_000 }).then(
        (r) => r as CallToolResult,
        (e: unknown) => ({ isError: true, content: [{ type: 'text' as const, text: `client error: ${String(e)}` }] }) as CallToolResult,
      ),
    ),
  );
  const seconds = (performance.now() - t0) / 1000;
  clearInterval(sampler);
  const text = (r: CallToolResult): string => r.content.map((c) => (c.type === 'text' ? c.text : '')).join('');
  const whole = results.filter((r) => !r.isError && text(r).length === mib * MiB).length;
  const refusals = [...new Set(results.filter((r) => r.isError).map(text))];
  await client.close();
  console.log(JSON.stringify({ estate: values.estate, calls, mib, rssBeforeMiB: Math.round(before), rssPeakMiB: Math.round(peak), whole, refused: calls - whole, refusals, seconds: Math.round(seconds * 10) / 10 }, null, 2));
} finally {
  for (const c of children) c.kill();
  rmSync(dir, { recursive: true, force: true });
}
