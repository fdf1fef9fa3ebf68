/**
 * The console at 10,000 tools: the catalogue page's server response (a search, and the first page), and Chromium's
 * time to a rendered, searchable list, beside the CLI answering `estate list --json` for the same store (a fresh
 * process: start, catch up, print — what a person at a terminal waits for). One `estate serve --http` child process
 * over a seeded SQLite store; the browser is Debian's Chromium driven by playwright-core (skipped when absent).
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AppendRequest } from '#app/ports';
import { canonicalHash } from '#domain/hash';
import { createSqliteEventStore } from '#store/sqlite-event-store';
import { median, type BenchRow } from './lib.ts';

const TOOLS = Number(process.env.BENCH_CONSOLE_TOOLS ?? 10_000);
const BIN = new URL('../bin/estate.js', import.meta.url).pathname;
const CHROMIUM = '/usr/bin/chromium';

const seed = async (path: string): Promise<void> => {
  const store = createSqliteEventStore({ path });
  let batch: AppendRequest[] = [];
  for (let t = 0; t < TOOLS; t++) {
    const ns = `ns${t % 100}`;
    const def = {
      name: `${ns}.tool${t}`,
      version: '1.0.0',
      title: `Tool ${t}`,
      description: `Synthetic tool ${t}: looks something up by reference.`,
      inputSchema: { type: 'object', properties: { reference: { type: 'string' } }, required: ['reference'], additionalProperties: false },
      access: { requiredScopes: [], tenants: [], classification: (['public', 'internal', 'confidential', 'restricted'] as const)[t % 4] },
      sideEffect: 'none' as const,
      handler: `${ns}.h`,
      timeoutMs: 30_000,
    };
    batch.push({ streamId: `tool-${def.name}`, events: [{ type: 'ToolVersionPublished', data: { definition: def, schemaHash: canonicalHash(def.inputSchema), definitionHash: canonicalHash(def), level: 'initial', reasons: [], by: 'bench', at: '2026-01-01T00:00:00.000Z' } }], expectedRevision: 'no_stream' });
    if (batch.length === 1000) {
      await store.appendMany(batch);
      batch = [];
    }
  }
  if (batch.length) await store.appendMany(batch);
  await store.close();
};

const startServer = (store: string): Promise<{ url: string; stop(): void }> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, 'serve', '--http', '--port', '0', '--store', store], { env: { ...process.env, ESTATE_LOG_LEVEL: 'info' }, stdio: ['ignore', 'ignore', 'pipe'] });
    let buf = '';
    child.stderr.on('data', (c: Buffer) => {
      buf += c.toString();
      const m = /"msg":"estate serve ready"[^\n]*?"url":"([^"]+)"|"url":"([^"]+)"[^\n]*"msg":"estate serve ready"/.exec(buf);
      if (m) resolve({ url: (m[1] ?? m[2]) as string, stop: () => child.kill('SIGTERM') });
    });
    child.once('exit', (code) => reject(new Error(`estate serve exited (${String(code)}): ${buf.slice(-500)}`)));
  });

const timeMs = async (fn: () => Promise<unknown>): Promise<number> => {
  const t0 = performance.now();
  await fn();
  return performance.now() - t0;
};

export const run = async (): Promise<BenchRow[]> => {
  const dir = mkdtempSync(join(tmpdir(), 'estate-bench-console-'));
  const store = `sqlite:${join(dir, 'e.db')}`;
  const rows: BenchRow[] = [];
  try {
    await seed(join(dir, 'e.db'));
    const cli: number[] = [];
    for (let i = 0; i < 3; i++) {
      const t0 = performance.now();
      execFileSync(process.execPath, [BIN, 'list', '--json', '--store', store], { stdio: ['ignore', 'ignore', 'ignore'], maxBuffer: 256 * 1024 * 1024 });
      cli.push(performance.now() - t0);
    }
    const server = await startServer(store);
    try {
      const base = server.url.replace(/\/mcp$/, '/console/');
      for (const [label, query] of [['search (q=tool99, 111 hits)', '?q=tool99'], ['first page, no filter', '']] as const) {
        const samples: number[] = [];
        for (let i = 0; i < 25; i++) samples.push(await timeMs(async () => (await fetch(`${base}${query}`)).text()));
        rows.push({ bench: 'console', case: `catalogue page server response, ${label}, median`, unit: 'ms', estate: Math.round(median(samples.slice(5)) * 10) / 10, peerName: 'estate list --json (fresh process)', peer: Math.round(median(cli)), notes: `${TOOLS} tools; HTTP GET on loopback` });
      }
      if (existsSync(CHROMIUM)) {
        const { chromium } = await import('playwright-core');
        const profile = mkdtempSync(join(tmpdir(), 'estate-bench-chromium-'));
        const context = await chromium.launchPersistentContext(profile, {
          executablePath: CHROMIUM,
          headless: true,
          args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
        });
        try {
          const page = context.pages()[0] ?? (await context.newPage());
          const samples: number[] = [];
          for (let i = 0; i < 6; i++) {
            samples.push(
              await timeMs(async () => {
                await page.goto(`${base}?q=tool99`);
                await page.waitForSelector('html[data-console-ready="1"] #result-count');
              }),
            );
          }
          rows.push({ bench: 'console', case: 'Chromium: navigation to a rendered, searchable list (q=tool99), median', unit: 'ms', estate: Math.round(median(samples.slice(1))), peerName: 'estate list --json (fresh process)', peer: Math.round(median(cli)), notes: `${TOOLS} tools; until the page script is ready` });
        } finally {
          await context.close();
          rmSync(profile, { recursive: true, force: true });
        }
      } else {
        process.stderr.write(`console: no Chromium at ${CHROMIUM}, so the browser row is left out (apt-get install chromium)\n`);
      }
    } finally {
      server.stop();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return rows;
};
