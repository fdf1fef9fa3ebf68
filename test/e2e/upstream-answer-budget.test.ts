/**
 * An upstream that answers too much at once cannot take the server's memory, nor another upstream's room: `estate
 * serve --http` fronts two HTTP upstreams (test/fixtures/upstream/fixture-http.mjs) with
 * ESTATE_MAX_UPSTREAM_BUFFER_BYTES at 128 MiB (so one upstream's share is 64 MiB). The hostile one holds a 40 MiB
 * answer almost whole; a second 40 MiB answer of the same upstream is dropped part-way and its caller told why
 * (upstream_unavailable, naming the bound), while the other upstream's 30 MiB answer goes through; released, the first
 * call ends with its whole answer, and /metrics shows what was held, what was refused and that both upstreams are up.
 * A listing is bounded the same way: an upstream whose tools/list pages grow past its share fails its sync, in the
 * serving process and in `estate upstream sync`, naming the bound; and so does one that lists more tools than a sync
 * takes (MAX_UPSTREAM_TOOLS). A stdio upstream's listing is charged the same way (src/upstream/stdio-answers.ts).
 */
import { Client, StreamableHTTPClientTransport, type CallToolResult } from '@modelcontextprotocol/client';
import type { ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_UPSTREAM_TOOLS } from '#upstream/candidate';
import { startFixtureHttp } from '../fixtures/upstream/fixture-http.ts';
import { makeTempStore, runCli, startHttpServer, type HttpServer, type TempStore } from './helpers.ts';

const MiB = 1024 * 1024;
const STDIO_FIXTURE = fileURLToPath(new URL('../fixtures/upstream/fixture-server.mjs', import.meta.url));
const LIMIT = { ESTATE_MAX_UPSTREAM_BUFFER_BYTES: String(128 * MiB) };
const PRINCIPAL = ['--tenant', 'acme', '--scopes', 'bulk.use', '--clearance', 'internal', '--subject', 'budget-e2e'];

const textOf = (r: CallToolResult): string => r.content.map((c) => (c.type === 'text' ? c.text : `<${c.type}>`)).join('\n');

describe('upstream answers held at once are bounded, per upstream and in total', () => {
  let store: TempStore;
  const fixtures: { child: ChildProcess; url: string }[] = [];
  let front: HttpServer;
  let client: Client;

  const metrics = async (): Promise<string> => (await fetch(new URL('/metrics', front.url))).text();
  const metric = async (series: string): Promise<number | undefined> => {
    const line = (await metrics()).split('\n').find((l) => l.startsWith(`${series} `));
    return line === undefined ? undefined : Number(line.slice(series.length + 1));
  };

  beforeAll(async () => {
    store = makeTempStore('estate-answer-budget-');
    const cli = async (args: string[]) => {
      const r = await runCli([...args, '--store', store.store, '--json']);
      expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(0);
    };
    for (const ns of ['hostile', 'calm']) {
      const f = await startFixtureHttp();
      fixtures.push(f);
      await cli(['upstream', 'add', ns, '--url', f.url, '--scopes', 'bulk.use', '--clearance', 'internal']);
      await cli(['upstream', 'sync', ns]);
      await cli(['upstream', 'approve', ns, '--all']);
    }
    // Registered, never synced: three pages of 30 MiB each, past a 64 MiB share.
    const lister = await startFixtureHttp(1, { FIXTURE_LIST_PAGES: '3', FIXTURE_LIST_MIB: '30' });
    fixtures.push(lister);
    await cli(['upstream', 'add', 'lister', '--url', lister.url, '--scopes', 'bulk.use', '--clearance', 'internal']);
    front = await startHttpServer(['--store', store.store, ...PRINCIPAL, '--upstream-sync-interval', '0'], { env: LIMIT });
    client = new Client({ name: 'budget-e2e', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(front.url)));
  }, 180_000);

  afterAll(async () => {
    await client?.close();
    await front?.stop();
    for (const f of fixtures) f.child.kill();
    store?.cleanup();
  });

  it('drops the answer past one upstream\'s share and says why; the other upstream and the held call go through', { timeout: 120_000 }, async () => {
    const call = (name: string, args: Record<string, unknown>) => client.callTool({ name, arguments: args }, { timeout: 100_000 });

    // Held almost whole by the upstream: charged to its call, which has not ended.
    const first = call('hostile.bulk', { mib: 40, hold: true });
    await expect.poll(() => metric('estate_upstream_answer_bytes_held'), { timeout: 30_000 }).toBeGreaterThanOrEqual(40 * MiB);

    const second = await call('hostile.bulk', { mib: 40, hold: true });
    expect(second.isError).toBe(true);
    expect(textOf(second)).toBe(`upstream hostile unavailable: upstream hostile's answers held at once would pass ${64 * MiB} bytes (its share of ESTATE_MAX_UPSTREAM_BUFFER_BYTES)`);

    // Another upstream has the rest of the total.
    const calm = await call('calm.bulk', { mib: 30 });
    expect(calm.isError ?? false).toBe(false);
    expect(textOf(calm)).toHaveLength(30 * MiB);

    expect(textOf(await call('hostile.release', {}))).toBe('released 1');
    const whole = await first;
    expect(whole.isError ?? false).toBe(false);
    expect(textOf(whole)).toHaveLength(40 * MiB);

    await expect.poll(() => metric('estate_upstream_answer_bytes_held'), { timeout: 30_000 }).toBe(0);
    const after = await metrics();
    expect(after).toMatch(/^estate_upstream_answers_refused_total\{namespace="hostile"\} 1$/m);
    expect(after).not.toMatch(/^estate_upstream_answers_refused_total\{namespace="calm"\}/m);
    expect(after).toMatch(/^estate_tool_calls_total\{tool="hostile\.bulk",version="[^"]+",outcome="upstream_unavailable"\} 1$/m);
    // The refusal is the process's, not the upstream's health: its breaker stays closed, and it is up.
    expect(after).toMatch(/^estate_upstream_up\{namespace="hostile"\} 1$/m);
    expect(after).toMatch(/^estate_upstream_up\{namespace="calm"\} 1$/m);
    expect(after).toMatch(/^estate_upstream_pending_drift\{namespace="hostile"\} 0$/m);
    expect(after).toMatch(/^estate_upstream_changes_waiting\{namespace="hostile"\} 0$/m);
  });

  it('a listing past the share fails its sync, in the serving process and in the CLI, naming the bound', { timeout: 60_000 }, async () => {
    const bound = `upstream lister's answers held at once would pass ${64 * MiB} bytes (its share of ESTATE_MAX_UPSTREAM_BUFFER_BYTES)`;
    const failed = await front.logs.next((l) => l.msg === 'upstream sync failed' && l.upstream === 'lister', 30_000, 'sync failure');
    expect(failed.error).toBe(bound);
    const cli = await runCli(['upstream', 'sync', 'lister', '--store', store.store], { env: LIMIT });
    expect(cli.code).not.toBe(0);
    expect(cli.stderr).toContain(`upstream lister: tools/list failed: ${bound}`);
    // Nothing of the listing was recorded.
    const drift = await runCli(['upstream', 'drift', 'lister', '--store', store.store, '--json']);
    expect(JSON.parse(drift.stdout)).toMatchObject({ pending: [] });
  });

  it('a stdio upstream\'s listing is charged too: past the share its sync fails, naming the bound', { timeout: 60_000 }, async () => {
    // Nine pages of 9 MiB each (under the SDK's 10 MiB a message), 81 MiB in all, past a 64 MiB share.
    const spec = join(store.dir, 'stdio-lister.json');
    writeFileSync(spec, JSON.stringify({ tools: [], listPages: 9, listMiB: 9 }));
    const command = `${process.execPath} ${STDIO_FIXTURE} ${spec} ${join(store.dir, 'stdio-lister.log')}`;
    expect((await runCli(['upstream', 'add', 'piped', '--command', command, '--scopes', 'bulk.use', '--clearance', 'internal', '--store', store.store])).code).toBe(0);
    const r = await runCli(['upstream', 'sync', 'piped', '--store', store.store], { env: LIMIT });
    expect([r.code, r.stderr.trim()]).toEqual([1, `estate: error: upstream piped: tools/list failed: upstream piped's answers held at once would pass ${64 * MiB} bytes (its share of ESTATE_MAX_UPSTREAM_BUFFER_BYTES)`]);
    const drift = await runCli(['upstream', 'drift', 'piped', '--store', store.store, '--json']);
    expect(JSON.parse(drift.stdout)).toMatchObject({ pending: [] });
    // Within the share, the same listing is read whole: the bound, not the reading, refused it. Each of its tools (a
    // 9 MiB description) then reaches the definition rules, which refuse it as larger than a definition may be.
    writeFileSync(spec, JSON.stringify({ tools: [], listPages: 6, listMiB: 9 }));
    const ok = await runCli(['upstream', 'sync', 'piped', '--store', store.store, '--json'], { env: LIMIT });
    expect(ok.code, ok.stderr).toBe(0);
    const synced = JSON.parse(ok.stdout) as { listed: number; refused: { code: string }[] };
    expect([synced.listed, synced.refused.map((x) => x.code)]).toEqual([6, Array(6).fill('too-large')]);
  });

  it('a listing sent as event streams is refused as soon as it passes the share, not at the listing\'s deadline', { timeout: 60_000 }, async () => {
    const streamer = await startFixtureHttp(1, { FIXTURE_LIST_PAGES: '3', FIXTURE_LIST_MIB: '30', FIXTURE_LIST_SSE: '1' });
    fixtures.push(streamer);
    expect((await runCli(['upstream', 'add', 'streamer', '--url', streamer.url, '--scopes', 'bulk.use', '--clearance', 'internal', '--store', store.store])).code).toBe(0);
    const r = await runCli(['upstream', 'sync', 'streamer', '--store', store.store], { env: LIMIT });
    expect([r.code, r.stderr.trim()]).toEqual([1, `estate: error: upstream streamer: tools/list failed: upstream streamer's answers held at once would pass ${64 * MiB} bytes (its share of ESTATE_MAX_UPSTREAM_BUFFER_BYTES)`]);
  });

  it('a listing of more tools than a sync takes is refused whole, and nothing of it recorded', { timeout: 60_000 }, async () => {
    const crowd = await startFixtureHttp(1, { FIXTURE_LIST_TOOLS: String(MAX_UPSTREAM_TOOLS + 1) });
    fixtures.push(crowd);
    expect((await runCli(['upstream', 'add', 'crowd', '--url', crowd.url, '--scopes', 'bulk.use', '--clearance', 'internal', '--store', store.store])).code).toBe(0);
    const r = await runCli(['upstream', 'sync', 'crowd', '--store', store.store]);
    expect([r.code, r.stderr.trim()]).toEqual([1, `estate: error: upstream crowd: tools/list failed: upstream crowd lists ${MAX_UPSTREAM_TOOLS + 1} tools or more, past the ${MAX_UPSTREAM_TOOLS} a sync takes: nothing of its listing is recorded`]);
    const drift = await runCli(['upstream', 'drift', 'crowd', '--store', store.store, '--json']);
    expect(JSON.parse(drift.stdout)).toMatchObject({ pending: [] });
  });
});
