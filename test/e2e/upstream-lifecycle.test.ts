/**
 * An upstream removed and registered again while `estate serve` runs (SPEC §7: `estate upstream remove <ns>` retires
 * every version of its tools; clients call only the approved snapshot). The serving process follows the registrations
 * in the store: the removal, made by another process (the CLI), ends the old child; the new registration, at another
 * target, is connected to afresh. A call after the re-approval reaches only the new child, never the old one.
 */
import { Client, StreamableHTTPClientTransport, type CallToolResult } from '@modelcontextprotocol/client';
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, makeTempStore, runCli, startHttpServer, type HttpServer, type TempStore } from './helpers.ts';

const FIXTURE = fileURLToPath(new URL('../fixtures/upstream/fixture-server.mjs', import.meta.url));
const PRINCIPAL = ['--tenant', 'acme', '--scopes', 'fx.read', '--clearance', 'internal', '--subject', 'lifecycle-e2e'];

const echoTool = (description: string) => ({
  name: 'echo',
  title: 'Echo',
  description,
  inputSchema: { type: 'object', properties: { message: { type: 'string' } }, required: ['message'] },
  annotations: { readOnlyHint: true },
});

const textOf = (r: CallToolResult): string => r.content.map((c) => (c.type === 'text' ? c.text : `<${c.type}>`)).join('\n');

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
};

describe('an upstream removed and registered again under a running estate serve', () => {
  let store: TempStore;
  let http: HttpServer;
  let client: Client;
  let oldSpec: string;
  let oldLog: string;
  let newSpec: string;
  let newLog: string;
  const cli = async (args: string[]) => {
    const r = await runCli([...args, '--store', store.store]);
    expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(0);
    return r;
  };
  const callsIn = (file: string): { tool: string; arguments: { message?: string } | null; pid: number }[] =>
    readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as { tool: string; arguments: { message?: string } | null; pid: number });
  const echoDescription = async (): Promise<string | undefined> => (await client.listTools()).tools.find((t) => t.name === 'am.echo')?.description;

  beforeAll(async () => {
    store = makeTempStore('estate-up-lifecycle-');
    oldSpec = store.file('am.json', { tools: [echoTool('Echoes the message back.')] });
    oldLog = store.file('am.log', '');
    newSpec = store.file('am2.json', { tools: [echoTool('Echoes the message back (second registration).')] });
    newLog = store.file('am2.log', '');
    await cli(['upstream', 'add', 'am', '--command', `${process.execPath} ${FIXTURE} ${oldSpec} ${oldLog}`, '--scopes', 'fx.read', '--clearance', 'internal']);
    await cli(['upstream', 'sync', 'am']);
    await cli(['upstream', 'approve', 'am.echo']);
    http = await startHttpServer(['--store', store.store, ...PRINCIPAL]);
    client = new Client({ name: 'lifecycle-e2e', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(http.url)));
  }, 60_000);

  afterAll(async () => {
    await client?.close().catch(() => undefined);
    await http?.stop();
    store?.cleanup();
  });

  it('the removal ends the old child; the new registration is served by a new child at its own target', async () => {
    const first = await client.callTool({ name: 'am.echo', arguments: { message: 'before' } });
    expect(textOf(first)).toBe('echo: before');
    const oldPid = callsIn(oldLog).find((c) => c.arguments?.message === 'before')?.pid;
    expect(oldPid).toBeTypeOf('number');
    expect(alive(oldPid as number)).toBe(true);

    await cli(['upstream', 'remove', 'am', '--reason', 'done']);
    // The serving process hears of the removal from the store and closes the link: the child exits.
    await eventually('the old child exited after the removal', () => (alive(oldPid as number) ? undefined : true));
    await eventually('the retired tool left the catalogue', async () => ((await echoDescription()) === undefined ? true : undefined));

    await cli(['upstream', 'add', 'am', '--command', `${process.execPath} ${FIXTURE} ${newSpec} ${newLog}`, '--scopes', 'fx.read', '--clearance', 'internal']);
    await cli(['upstream', 'sync', 'am']);
    await cli(['upstream', 'approve', 'am.echo']);
    await eventually('the new registration\'s echo is served', async () =>
      (await echoDescription()) === 'Echoes the message back (second registration).' ? true : undefined,
    );

    const oldCalls = callsIn(oldLog).length;
    const r = await client.callTool({ name: 'am.echo', arguments: { message: 'after' } });
    expect([r.isError ?? false, textOf(r)]).toEqual([false, 'echo: after']);
    const reached = callsIn(newLog).filter((c) => c.arguments?.message === 'after');
    expect(reached).toHaveLength(1);
    expect(reached[0]?.pid).not.toBe(oldPid);
    expect(callsIn(oldLog)).toHaveLength(oldCalls);
    expect(callsIn(oldLog).some((c) => c.arguments?.message === 'after')).toBe(false);
    expect(alive(oldPid as number)).toBe(false);
  }, 120_000);

  it('a namespace registered while the server runs is synced by it at once, and its change notices are heard', async () => {
    const spec = store.file('bn.json', { tools: [echoTool('Echoes, from bn.')] });
    const log = store.file('bn.log', '');
    await cli(['upstream', 'add', 'bn', '--command', `${process.execPath} ${FIXTURE} ${spec} ${log}`, '--scopes', 'fx.read', '--clearance', 'internal']);
    // No `upstream sync` from anyone: the serving process lists it itself (the interval is ten minutes).
    const pending = async (): Promise<{ tool: string; level: string; reasons: { rule: string }[] }[]> =>
      (JSON.parse((await cli(['upstream', 'drift', 'bn', '--json'])).stdout) as { pending: { tool: string; level: string; reasons: { rule: string }[] }[] }).pending;
    expect(await eventually('the server synced the new upstream', async () => ((await pending()).length > 0 ? await pending() : undefined))).toMatchObject([{ tool: 'bn.echo', level: 'initial' }]);
    await cli(['upstream', 'approve', 'bn.echo']);
    // The server's connection hears the upstream's list_changed: the change is recorded without anyone syncing.
    writeFileSync(spec, JSON.stringify({ tools: [echoTool('Echoes, from bn, changed.')] }));
    const drift = await eventually('the change recorded by the server', async () => (await pending()).find((p) => p.tool === 'bn.echo'));
    expect(drift.reasons.map((r) => r.rule)).toContain('description-changed');
  }, 120_000);
});
