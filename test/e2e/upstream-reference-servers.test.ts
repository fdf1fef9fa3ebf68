/**
 * Estate in front of the reference MCP servers from the npm registry (exact-pinned devDependencies, run offline):
 * server-everything over stdio AND over Streamable HTTP, server-filesystem on a temp directory, server-memory. Each is
 * added, synced and approved through the CLI; `estate serve --http` fronts them; the official SDK v2 Client calls
 * through Estate at 2025-11-25 and at 2026-07-28. Progress, sampling and elicitation go through the proxy (2025).
 * Then the HTTP upstream goes down: `upstream evh unavailable`, and once the breaker is open calls fail fast.
 */
import { Client, StreamableHTTPClientTransport, type CallToolResult } from '@modelcontextprotocol/client';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTempStore, runCli, startHttpServer, type HttpServer, type TempStore } from './helpers.ts';

const pkg = (name: string, file: string) => fileURLToPath(new URL(`../../node_modules/@modelcontextprotocol/${name}/dist/${file}`, import.meta.url));
const EVERYTHING = pkg('server-everything', 'index.js');
const FILESYSTEM = pkg('server-filesystem', 'index.js');
const MEMORY = pkg('server-memory', 'index.js');
const SCOPES = 'ref.use';
const PRINCIPAL = ['--tenant', 'acme', '--scopes', SCOPES, '--clearance', 'internal', '--subject', 'ref-e2e'];

const textOf = (r: CallToolResult): string => r.content.map((c) => (c.type === 'text' ? c.text : `<${c.type}>`)).join('\n');

const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });

/** server-everything's Streamable HTTP transport on a free port; resolves once it listens. */
const startEverythingHttp = async (): Promise<{ child: ChildProcess; url: string }> => {
  const port = await freePort();
  const child = spawn(process.execPath, [EVERYTHING, 'streamableHttp'], { env: { ...process.env, PORT: String(port) }, stdio: ['ignore', 'ignore', 'pipe'] });
  await new Promise<void>((resolve, reject) => {
    let err = '';
    child.stderr?.on('data', (c: Buffer) => {
      err += c.toString();
      if (err.includes('listening on port')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`server-everything (HTTP) exited ${String(code)}: ${err}`)));
  });
  return { child, url: `http://127.0.0.1:${port}/mcp` };
};

describe('Estate in front of the reference MCP servers', () => {
  let store: TempStore;
  let http: HttpServer;
  let everythingHttp: { child: ChildProcess; url: string };
  const env = { MEM_PATH: '' };
  const cli = async (args: string[]) => {
    const r = await runCli([...args, '--store', store.store], { env, timeoutMs: 60_000 });
    return { ...r, json: r.stdout.trim().startsWith('{') ? (JSON.parse(r.stdout) as Record<string, unknown>) : null };
  };
  const mustCli = async (args: string[]) => {
    const r = await cli(args);
    expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(0);
    return r.json as Record<string, unknown>;
  };
  const connect = async (revision: '2025-11-25' | '2026-07-28', handlers = false): Promise<Client> => {
    const client = new Client(
      { name: `ref-e2e-${revision}`, version: '1.0.0' },
      { ...(revision === '2026-07-28' ? { versionNegotiation: { mode: { pin: '2026-07-28' as const } } } : {}), capabilities: handlers ? { sampling: {}, elicitation: {} } : {} },
    );
    if (handlers) {
      client.setRequestHandler('sampling/createMessage', async () => ({ role: 'assistant', content: { type: 'text', text: 'sampled by the test client' }, model: 'test-model' }));
      client.setRequestHandler('elicitation/create', async () => ({ action: 'accept', content: { name: 'Ada Lovelace', check: true } }));
    }
    await client.connect(new StreamableHTTPClientTransport(new URL(http.url)));
    return client;
  };

  beforeAll(async () => {
    store = makeTempStore('estate-ref-');
    const root = join(store.dir, 'files');
    mkdirSync(root);
    writeFileSync(join(root, 'hello.txt'), 'hello from the filesystem server\n');
    env.MEM_PATH = join(store.dir, 'memory.jsonl');
    everythingHttp = await startEverythingHttp();
    const access = ['--scopes', SCOPES, '--clearance', 'internal'];
    await mustCli(['upstream', 'add', 'ev', '--command', `${process.execPath} ${EVERYTHING} stdio`, ...access]);
    await mustCli(['upstream', 'add', 'evh', '--url', everythingHttp.url, ...access]);
    await mustCli(['upstream', 'add', 'fs', '--command', `${process.execPath} ${FILESYSTEM} ${root}`, ...access]);
    await mustCli(['upstream', 'add', 'mem', '--command', `${process.execPath} ${MEMORY}`, '--env', 'MEMORY_FILE_PATH=env:MEM_PATH', ...access]);
    for (const ns of ['ev', 'evh', 'fs', 'mem']) {
      const sync = await mustCli(['upstream', 'sync', ns, '--json']);
      expect((sync.drift as unknown[]).length, ns).toBeGreaterThan(3);
      await mustCli(['upstream', 'approve', ns, '--all', '--json']);
    }
    http = await startHttpServer(['--store', store.store, ...PRINCIPAL, '--upstream-sync-interval', '0'], { env, readyTimeoutMs: 60_000 });
  }, 180_000);

  afterAll(async () => {
    await http?.stop();
    everythingHttp?.child.kill('SIGKILL');
    store?.cleanup();
  });

  it('reports the reference servers\' refused candidates with reasons (destructive yet idempotent)', async () => {
    const list = await mustCli(['upstream', 'list', '--json']);
    const rows = list.upstreams as { ns: string; tools: number; pending: number; status: string }[];
    expect(rows.map((r) => [r.ns, r.status, r.pending])).toEqual([
      ['ev', 'active', 0],
      ['evh', 'active', 0],
      ['fs', 'active', 0],
      ['mem', 'active', 0],
    ]);
    const sync = await mustCli(['upstream', 'sync', 'mem', '--json']);
    expect((sync.refused as { upstreamTool: string; code: string }[]).map((r) => [r.upstreamTool, r.code])).toEqual([
      ['delete_entities', 'annotation-contradiction'],
      ['delete_observations', 'annotation-contradiction'],
      ['delete_relations', 'annotation-contradiction'],
    ]);
  });

  it('lists the mirrored tools only to a principal entitled to them', async () => {
    const entitled = await mustCli(['list', '--tenant', 'acme', '--scopes', SCOPES, '--clearance', 'internal', '--json']);
    const names = (entitled.tools as { name: string }[]).map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(['ev.echo', 'evh.echo', 'fs.read_text_file', 'mem.read_graph']));
    const other = await mustCli(['list', '--tenant', 'acme', '--scopes', 'something.else', '--clearance', 'restricted', '--json']);
    expect(other.tools).toEqual([]);
  });

  for (const revision of ['2025-11-25', '2026-07-28'] as const) {
    it(`calls every upstream through Estate at ${revision}, validated and repaired against the pinned schema`, async () => {
      const client = await connect(revision);
      try {
        const { tools } = await client.listTools();
        expect(tools.find((t) => t.name === 'ev.echo')?._meta?.['io.estate/version']).toBe('1.0.0');
        expect(textOf(await client.callTool({ name: 'ev.echo', arguments: { message: 'via stdio' } }))).toBe('Echo: via stdio');
        expect(textOf(await client.callTool({ name: 'evh.echo', arguments: { message: 'via http' } }))).toBe('Echo: via http');
        // "2" is repaired to 2 by the pinned schema before the upstream sees it.
        const sum = await client.callTool({ name: 'ev.get-sum', arguments: { a: 1, b: '2' } });
        expect(textOf(sum)).toContain('is 3');
        // Invalid arguments: Estate's own error lines, not the upstream's.
        const bad = await client.callTool({ name: 'ev.get-sum', arguments: { a: 'x', b: 2 } });
        expect([bad.isError, textOf(bad)]).toEqual([true, '$.a: expected type number, got string']);
        expect(textOf(await client.callTool({ name: 'fs.read_text_file', arguments: { path: join(store.dir, 'files', 'hello.txt') } }))).toContain('hello from the filesystem server');
        await client.callTool({ name: 'mem.create_entities', arguments: { entities: [{ name: `Ada-${revision}`, entityType: 'person', observations: ['wrote the first program'] }] } });
        expect(textOf(await client.callTool({ name: 'mem.read_graph', arguments: {} }))).toContain(`Ada-${revision}`);
      } finally {
        await client.close();
      }
    });
  }

  it('forwards progress, and relays sampling and elicitation to the caller (2025 session)', async () => {
    const client = await connect('2025-11-25', true);
    try {
      const progress: number[] = [];
      const long = await client.callTool(
        { name: 'ev.trigger-long-running-operation', arguments: { duration: 0.2, steps: 2 } },
        { onprogress: (p) => progress.push(p.progress) },
      );
      expect(textOf(long)).toContain('Long running operation completed');
      // The upstream's last progress notification and its result race inside the SDK client: at least the first is relayed.
      expect(progress[0]).toBe(1);
      const sampled = await client.callTool({ name: 'ev.trigger-sampling-request', arguments: { prompt: 'hi', maxTokens: 10 } });
      expect(textOf(sampled)).toContain('sampled by the test client');
      const elicited = await client.callTool({ name: 'ev.trigger-elicitation-request', arguments: {} });
      expect(textOf(elicited)).toContain('Ada Lovelace');
    } finally {
      await client.close();
    }
  });

  it('refuses, in words, the upstream\'s elicitation and sampling on a 2026-07-28 call to a non_idempotent tool: answering would send it twice', async () => {
    // The reference server's trigger tools carry no readOnly/idempotent hint, so they are non_idempotent here. A 2026
    // caller answers a question by sending the call again; for a proxied call that means a second upstream execution,
    // which a non_idempotent tool must never get. (Read-only proxied tools do get rounds: upstream-input-rounds.test.ts.)
    const client = await connect('2026-07-28', true);
    try {
      const elicited = await client.callTool({ name: 'ev.trigger-elicitation-request', arguments: {} });
      expect(elicited.isError).toBe(true);
      expect(textOf(elicited)).toContain('a non_idempotent call is never sent twice');
      const sampled = await client.callTool({ name: 'ev.trigger-sampling-request', arguments: { prompt: 'hi', maxTokens: 10 } });
      expect(sampled.isError).toBe(true);
      expect(textOf(sampled)).toContain('a non_idempotent call is never sent twice');
    } finally {
      await client.close();
    }
  });

  it('an HTTP upstream that is down: "upstream evh unavailable"; after 5 failures nothing more is sent (breaker open)', async () => {
    everythingHttp.child.kill('SIGKILL');
    await new Promise((r) => everythingHttp.child.once('exit', r));
    const client = await connect('2025-11-25');
    try {
      const runId = `ref-down-${Date.now()}`;
      for (let i = 0; i < 3; i++) {
        const r = await client.callTool({ name: 'evh.echo', arguments: { message: 'anyone?' }, _meta: { 'io.estate/runId': runId } });
        expect([r.isError, textOf(r)]).toEqual([true, 'upstream evh unavailable']);
      }
      const calls = await mustCli(['calls', runId, '--json']);
      const rows = calls.calls as { outcome: string; attempts?: number }[];
      expect(rows.map((c) => c.outcome)).toEqual(['upstream_unavailable', 'upstream_unavailable', 'upstream_unavailable']);
      // 3 calls of a read-only tool could make 9 attempts; the breaker lets exactly 5 go out, then fails fast.
      const sent = http.logs.seen.filter((l) => (l.msg === 'upstream call failed' || l.msg === 'upstream connect failed') && l.upstream === 'evh');
      expect(sent).toHaveLength(5);
      // ev (stdio) is another upstream, with its own breaker: unaffected.
      expect(textOf(await client.callTool({ name: 'ev.echo', arguments: { message: 'still here' } }))).toBe('Echo: still here');
    } finally {
      await client.close();
    }
  });
});
