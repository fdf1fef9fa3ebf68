/**
 * `estate/client`'s tools cache beside the bare SDK v2 Client, against a real `estate serve --http` (temp SQLite store,
 * TOOL_COUNT tools published with `estate publish --module`): an agent loop that lists before every call, as agents
 * do. Round trips are counted at the HTTP layer (the transport's fetch), time per iteration is the median. Also: how
 * long from `estate publish` (a separate process) until the cache's next `list()` shows the new version.
 *
 * Runnable alone: `node --import tsx bench/client-cache.ts`. The same file is the server's handler module.
 */
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { createToolsCache } from '#lib/client';
import { median, type BenchRow } from './lib.ts';

const TOOL_COUNT = 20;
const ITERATIONS = 150;
const WARMUP = 20;
const REPO_ROOT = fileURLToPath(new URL('../', import.meta.url));
const THIS_FILE = fileURLToPath(import.meta.url);
const BIN = join(REPO_ROOT, 'bin', 'estate.js');
const run = promisify(execFile);

/** The handler module export (`--handlers bench/client-cache.ts`). */
export const handlers = { 'bench.echo': async (args: Record<string, unknown>) => ({ content: [{ type: 'text' as const, text: String(args.text) }] }) };

const toolModule = (dir: string, version: string, count: number): string => {
  const zod = pathToFileURL(createRequire(import.meta.url).resolve('zod')).href;
  const file = join(dir, `tools-${version}.mjs`);
  writeFileSync(
    file,
    `import { z } from ${JSON.stringify(zod)};\nexport const tools = Array.from({ length: ${count} }, (_, i) => ({ name: 'bench.tool_' + String(i).padStart(2, '0'), version: ${JSON.stringify(version)}, description: 'Echoes (bench tool ' + i + ').', input: z.object({ text: z.string(), ${version === '1.0.0' ? '' : 'note: z.string().optional(), '}}), access: { requiredScopes: [], tenants: [], classification: 'public' }, sideEffect: 'none', handler: 'bench.echo' }));\n`,
  );
  return file;
};

const startServe = async (store: string): Promise<{ url: string; stop: () => void }> => {
  const child = spawn(process.execPath, [BIN, 'serve', '--http', '--port', '0', '--store', store, '--handlers', THIS_FILE], { cwd: REPO_ROOT, env: { ...process.env, ESTATE_LOG_LEVEL: 'info' }, stdio: ['ignore', 'ignore', 'pipe'] });
  const url = await new Promise<string>((resolve, reject) => {
    let buf = '';
    child.stderr.on('data', (c: Buffer) => {
      buf += c.toString('utf8');
      const m = /"url":"(http:[^"]+)"/.exec(buf);
      if (m?.[1]) resolve(m[1]);
      if (buf.length > 65536) buf = buf.slice(-4096);
    });
    child.on('exit', (code) => reject(new Error(`estate serve exited (${String(code)})`)));
  });
  child.stderr.resume();
  return { url, stop: () => child.kill('SIGTERM') };
};

const connect = async (url: string, revision: string): Promise<{ client: Client; requests: () => number }> => {
  let n = 0;
  const counting: typeof fetch = (input, init) => {
    n += 1;
    return fetch(input, init);
  };
  const client = new Client({ name: 'bench-agent', version: '1.0.0' }, revision === '2026-07-28' ? { versionNegotiation: { mode: { pin: '2026-07-28' } } } : {});
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { fetch: counting }));
  return { client, requests: () => n };
};

const loop = async (step: (i: number) => Promise<void>, requests: () => number): Promise<{ msPerIter: number; tripsPerIter: number }> => {
  for (let i = 0; i < WARMUP; i += 1) await step(i);
  const before = requests();
  const times: number[] = [];
  for (let i = 0; i < ITERATIONS; i += 1) {
    const t0 = process.hrtime.bigint();
    await step(i);
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  return { msPerIter: median(times), tripsPerIter: (requests() - before) / ITERATIONS };
};

const round = (x: number, d = 3): number => Math.round(x * 10 ** d) / 10 ** d;

export const run_ = async (): Promise<BenchRow[]> => {
  const dir = mkdtempSync(join(tmpdir(), 'estate-bench-cache-'));
  const store = `sqlite:${join(dir, 'estate.db')}`;
  const rows: BenchRow[] = [];
  await run(process.execPath, [BIN, 'publish', '--module', toolModule(dir, '1.0.0', TOOL_COUNT), '--store', store], { cwd: REPO_ROOT });
  const serve = await startServe(store);
  try {
    for (const revision of ['2026-07-28', '2025-11-25']) {
      const bare = await connect(serve.url, revision);
      const plain = await loop(async (i) => {
        const { tools } = await bare.client.listTools(undefined, { cacheMode: 'bypass' });
        await bare.client.callTool({ name: tools[i % tools.length]?.name ?? '', arguments: { text: 'x' } });
      }, bare.requests);
      await bare.client.close();
      const cached = await connect(serve.url, revision);
      const cache = createToolsCache(cached.client);
      const viaCache = await loop(async (i) => {
        const tools = await cache.list();
        await cache.call(tools[i % tools.length]?.name ?? '', { text: 'x' });
      }, cached.requests);
      await cache.close();
      await cached.client.close();
      const notes = `${TOOL_COUNT} tools, ${ITERATIONS} iterations after ${WARMUP} warm-up; bare = listTools({cacheMode:'bypass'}) + callTool each iteration`;
      rows.push({ bench: 'client-cache', case: `agent loop list+call, ${revision}: time per iteration (median)`, unit: 'ms/iter', estate: round(viaCache.msPerIter), peerName: 'bare SDK v2 Client', peer: round(plain.msPerIter), notes: `ratio ${round(plain.msPerIter / viaCache.msPerIter, 2)}x; ${notes}` });
      rows.push({ bench: 'client-cache', case: `agent loop list+call, ${revision}: HTTP round trips per iteration`, unit: 'requests/iter', estate: round(viaCache.tripsPerIter, 2), peerName: 'bare SDK v2 Client', peer: round(plain.tripsPerIter, 2), notes });
    }
    // Publish a new version from another process; how long until the cache's next list() shows it (2026: listen).
    const { client } = await connect(serve.url, '2026-07-28');
    let told: () => void = () => undefined;
    const cache = createToolsCache(client, { onListChanged: () => told() });
    await cache.list();
    const heard = new Promise<void>((resolve) => (told = resolve));
    const t0 = Date.now();
    const published = run(process.execPath, [BIN, 'publish', '--module', toolModule(dir, '1.1.0', 1), '--store', store], { cwd: REPO_ROOT }).then(() => Date.now());
    await heard;
    const tools = await cache.list();
    const t1 = Date.now();
    const exited = await published;
    if (tools.find((t) => t.name === 'bench.tool_00')?._meta?.['io.estate/version'] !== '1.1.0') throw new Error('the new version was not listed');
    rows.push({ bench: 'client-cache', case: "publish (a separate estate process) → cache's next list() shows the new version, 2026-07-28", unit: 'ms', estate: t1 - t0, notes: `includes the publishing CLI's start-up; that process exited ${exited - t0} ms after it started` });
    await cache.close();
    await client.close();
  } finally {
    serve.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  return rows;
};

export { run_ as run };

if (process.argv[1] === THIS_FILE) {
  const { printRows } = await import('./print.ts');
  printRows(await run_());
}
