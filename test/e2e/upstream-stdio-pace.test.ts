/**
 * A stdio upstream whose output is read at a pace (src/upstream/stdio-answers.ts, src/upstream/event-pace.ts): the
 * fixture (test/fixtures/upstream/fixture-server.mjs) writes 36,000 log notifications as fast as its pipe takes them,
 * within one call. Before, each cost the serving thread ~40 µs, read as fast as they came (another client's tools/list
 * waited up to ~0.5 s), and past 20,000 in a clock second the connection was closed. Now the child's output is read
 * at 6,000 lines a second (its pipe pushing back): the log says the upstream is paced, the call gets its answer from
 * the same child (nothing dropped, no restart), and another client is served meanwhile. Its stderr (only ever logged)
 * is read at most 1 MiB a second, the rest of that second dropped and the child made to wait.
 */
import { Client, StreamableHTTPClientTransport, type CallToolResult } from '@modelcontextprotocol/client';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { STDERR_BYTES_PER_SECOND } from '#upstream/connection';
import { MAX_EVENT_LINES_PER_SECOND } from '#upstream/event-pace';
import { makeTempStore, runCli, startHttpServer, type HttpServer, type TempStore } from './helpers.ts';

const FIXTURE = fileURLToPath(new URL('../fixtures/upstream/fixture-server.mjs', import.meta.url));
const PRINCIPAL = ['--tenant', 'acme', '--scopes', 'fx.use', '--clearance', 'internal', '--subject', 'pace-e2e'];
const PACED = 'upstream paced: it sends more lines a second than are read';

const textOf = (r: CallToolResult): string => r.content.map((c) => (c.type === 'text' ? c.text : `<${c.type}>`)).join('\n');

describe('a stdio upstream read at a pace', () => {
  let store: TempStore;
  let calls: string;
  let http: HttpServer;
  const clients: Client[] = [];

  beforeAll(async () => {
    store = makeTempStore('estate-stdio-pace-');
    const spec = store.file('tools.json', {
      tools: [
        { name: 'chatter', description: 'Logs, then answers.', inputSchema: { type: 'object', properties: { logs: { type: 'integer' } } }, annotations: { readOnlyHint: true } },
        { name: 'echo', description: 'Echoes.', inputSchema: { type: 'object', properties: { message: { type: 'string' } } }, annotations: { readOnlyHint: true } },
        { name: 'grumble', description: 'Writes to stderr, then answers.', inputSchema: { type: 'object', properties: { mib: { type: 'integer' } } }, annotations: { readOnlyHint: true } },
      ],
    });
    calls = store.file('calls.log', '');
    for (const args of [
      ['upstream', 'add', 'fx', '--command', `${process.execPath} ${FIXTURE} ${spec} ${calls}`, '--scopes', 'fx.use', '--clearance', 'internal'],
      ['upstream', 'sync', 'fx'],
      ['upstream', 'approve', 'fx', '--all'],
    ]) {
      const r = await runCli([...args, '--store', store.store, '--json']);
      expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(0);
    }
    http = await startHttpServer(['--store', store.store, ...PRINCIPAL, '--upstream-sync-interval', '0']);
  }, 120_000);

  afterAll(async () => {
    for (const c of clients) await c.close();
    await http?.stop();
    store?.cleanup();
  });

  const connect = async (name: string): Promise<Client> => {
    const c = new Client({ name, version: '1.0.0' });
    await c.connect(new StreamableHTTPClientTransport(new URL(http.url)));
    clients.push(c);
    return c;
  };

  it('a flood of notifications is read at the pace, the call answered by the same child, another client served meanwhile', { timeout: 60_000 }, async () => {
    const flooded = await connect('flooded');
    const beside = await connect('beside');
    const pids = (): number[] => readFileSync(calls, 'utf8').split('\n').filter(Boolean).map((l) => (JSON.parse(l) as { pid: number }).pid);
    let answered = false;
    // 36,000 lines at 6,000 a second: ~6 s from the first pause to the answer, however loaded the machine (the pace is
    // the clock's), so the checks below come well inside it.
    const call = flooded.callTool({ name: 'fx.chatter', arguments: { logs: 36_000 } }, { timeout: 55_000 }).finally(() => (answered = true));
    const paced = await vi.waitFor(
      () => {
        const line = http.logs.seen.find((l) => l.msg === PACED);
        expect(line, 'the pace warning').toBeDefined();
        return line;
      },
      { timeout: 30_000, interval: 50 },
    );
    expect(paced).toMatchObject({ upstream: 'fx', linesPerSecond: MAX_EVENT_LINES_PER_SECOND });
    // Another client is answered while the flooding call is still being read.
    expect((await beside.listTools()).tools.map((t) => t.name)).toContain('fx.echo');
    expect(answered).toBe(false);
    expect(textOf(await call)).toBe('chattered');
    // Nothing closed the connection: the next call goes to the same child.
    expect(textOf(await beside.callTool({ name: 'fx.echo', arguments: { message: 'after' } }))).toBe('echo: after');
    expect(new Set(pids()).size).toBe(1);
    expect(http.logs.seen.filter((l) => l.msg === 'upstream connection error')).toEqual([]);
  });

  it('a child flooding its stderr is read 1 MiB a second: the rest of each second dropped unread, the child made to wait', { timeout: 60_000 }, async () => {
    const flooded = await connect('grumbled-at');
    const beside = await connect('beside-grumble');
    let answered = false;
    // 8 MiB of one-character lines: read whole, ~0.1 s of this server's thread each MiB; bounded, the child waits some
    // 6 s (1 MiB a clock second), so the checks below come well inside it.
    const call = flooded.callTool({ name: 'fx.grumble', arguments: { mib: 8 } }, { timeout: 55_000 }).finally(() => (answered = true));
    const dropped = await vi.waitFor(
      () => {
        const line = http.logs.seen.find((l) => l.msg === 'upstream stderr dropped: the child writes more to stderr than is read a second');
        expect(line, 'the stderr warning').toBeDefined();
        return line;
      },
      { timeout: 30_000, interval: 50 },
    );
    expect(dropped).toMatchObject({ upstream: 'fx', bytesPerSecond: STDERR_BYTES_PER_SECOND });
    expect((await beside.listTools()).tools.map((t) => t.name)).toContain('fx.grumble');
    expect(answered).toBe(false); // the child is still waiting to write the rest
    expect(textOf(await call)).toBe('grumbled');
  });
});
