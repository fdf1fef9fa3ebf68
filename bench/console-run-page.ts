/**
 * A probe, not a bench row: what the console's run pages cost beside a long call log. `--calls` 2026-07-28 stateless
 * tools/calls (16 in flight) against `estate serve --http` on the MCP bench's store and handlers, the first half under
 * one run id (`io.estate/runId`: `long-run`), the rest spread over `--runs` more; then three `GET /console/runs/long-run`
 * and two `GET /console/runs`, 1,000 calls more and one `GET /console/runs` again, each with its size, time and the
 * serving process's RSS after it (from /proc, Linux); then `estate calls` (the recent runs) twice, each with its time.
 * `--estate <checkout>` runs another checkout's bin/estate.js (built), to compare two builds.
 *
 *   node --import tsx bench/console-run-page.ts [--calls 100000] [--runs 20000] [--estate /work/base]
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { rawPost } from './http-raw.ts';
import { publishAll, startEstate, stop } from './mcp-client.ts';
import { TOOL_COUNT, VALID_ARGS, toolName } from './mcp-fixture.ts';

const { values } = parseArgs({ options: { calls: { type: 'string', default: '100000' }, runs: { type: 'string', default: '20000' }, estate: { type: 'string' } } });
const calls = Number(values.calls);
const runs = Number(values.runs);
if (!Number.isInteger(calls) || calls < 1) throw new Error(`--calls must be a positive whole number (got ${values.calls})`);
if (!Number.isInteger(runs) || runs < 1) throw new Error(`--runs must be a positive whole number (got ${values.runs})`);

const dir = mkdtempSync(join(tmpdir(), 'estate-run-page-'));
const children: Parameters<typeof startEstate>[1] = [];
try {
  const store = `sqlite:${join(dir, 'bench.db')}`;
  await publishAll(store);
  const { url, child } = await startEstate(store, children, values.estate ? { root: resolve(values.estate) } : {});
  const rssMiB = (): number => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))?.[1]) / 1024;
  const meta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };
  const callMany = async (from: number, to: number): Promise<void> => {
    let next = from;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (next < to) {
          const i = next++;
          const name = toolName(i % TOOL_COUNT);
          const runId = i < calls / 2 ? 'long-run' : `run-${i % runs}`;
          const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': name };
          const r = await rawPost(url, headers, JSON.stringify({ jsonrpc: '2.0', id: i, method: 'tools/call', params: { name, arguments: VALID_ARGS, _meta: { ...meta, 'io.estate/runId': runId } } }));
          if (r.status !== 200) throw new Error(`tools/call answered ${r.status}: ${r.text.slice(0, 300)}`);
        }
      }),
    );
  };
  await callMany(0, calls);
  const base = url.replace(/\/mcp$/, '');
  const out: Record<string, unknown>[] = [{ calls, rssMiB: Math.round(rssMiB()) }];
  const view = async (path: string, note?: string): Promise<void> => {
    const t0 = performance.now();
    const res = await fetch(`${base}${path}`);
    const body = await res.text();
    out.push({ path, ...(note ? { note } : {}), status: res.status, bytes: body.length, ms: Math.round(performance.now() - t0), rssMiB: Math.round(rssMiB()) });
  };
  for (const [path, times] of [['/console/runs/long-run', 3], ['/console/runs', 2]] as const) {
    for (let k = 0; k < times; k++) await view(path);
  }
  await callMany(calls, calls + 1000);
  await view('/console/runs', 'after 1,000 calls more');
  for (let k = 0; k < 2; k++) {
    const t0 = performance.now();
    const text = execFileSync(process.execPath, [join(values.estate ? resolve(values.estate) : process.cwd(), 'bin', 'estate.js'), 'calls', '--store', store, '--json'], { encoding: 'utf8' });
    out.push({ cli: 'estate calls', runs: (JSON.parse(text) as { runs: unknown[] }).runs.length, ms: Math.round(performance.now() - t0) });
  }
  console.log(JSON.stringify(out, null, 1));
} finally {
  await Promise.all(children.map((c) => stop(c)));
  rmSync(dir, { recursive: true, force: true });
}
