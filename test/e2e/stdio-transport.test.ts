/**
 * The stdio transport itself: stdout carries protocol only (a handler that prints lands on stderr), lines over
 * 1 MiB are refused without killing the session, and stateless messages (with a listen stream) share the pipe.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTempStore, runCli, startStdioServer, toolDefinition, type StdioServer, type TempStore } from './helpers.ts';

const META = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };

describe('estate serve --stdio transport', () => {
  let tmp: TempStore;
  let srv: StdioServer;

  beforeAll(async () => {
    tmp = makeTempStore();
    const file = tmp.file('echo.json', toolDefinition());
    expect((await runCli(['publish', file, '--store', tmp.store])).code).toBe(0);
    srv = await startStdioServer(['--store', tmp.store, '--handlers', 'test/fixtures/handlers/test-handlers.ts'], { env: { ESTATE_LOG_LEVEL: 'debug' } });
    await srv.initialize();
  });
  afterAll(async () => {
    await srv?.stop();
    tmp?.cleanup();
  });

  it('what a handler prints goes to stderr; stdout stays protocol', async () => {
    const r = await srv.request('tools/call', { name: 'test.echo', arguments: { text: 'hello' } });
    expect((r.result as { content: { text: string }[] }).content[0]?.text).toBe('hello');
    await srv.logs.next((l) => l.raw === 'test.echo handler printing to stdout', 5000);
    await srv.logs.next((l) => l.raw === 'and writing to process.stdout directly', 5000);
    await srv.logs.next((l) => l.msg === 'echo called' && l.component === 'handler', 5000);
    for (const line of srv.lines.seen) expect(() => JSON.parse(line) as unknown).not.toThrow();
  });

  it('a line over 1 MiB is refused with -32700 and the session carries on', async () => {
    srv.send({ jsonrpc: '2.0', id: 'big', method: 'tools/call', params: { name: 'test.echo', arguments: { text: 'x'.repeat(1024 * 1024 + 1) } } });
    expect(await srv.next()).toMatchObject({ id: null, error: { code: -32700 } });
    expect(await srv.request('ping', undefined, 'after-big')).toEqual({ jsonrpc: '2.0', id: 'after-big', result: {} });
  });

  it('arguments over the limits are an isError result, not a protocol error', async () => {
    let deep: unknown = 'leaf';
    for (let i = 0; i < 70; i++) deep = { d: deep };
    const r = await srv.request('tools/call', { name: 'test.echo', arguments: { text: 'x', deep } });
    expect(r.result).toMatchObject({ isError: true });
  });

  it('a stateless listen shares the pipe: acknowledged, then told with its subscription id', async () => {
    srv.send({ jsonrpc: '2.0', id: 'sub-9', method: 'subscriptions/listen', params: { notifications: { toolsListChanged: true }, _meta: META } });
    expect(await srv.next((m) => m.method === 'notifications/subscriptions/acknowledged')).toEqual({
      jsonrpc: '2.0',
      method: 'notifications/subscriptions/acknowledged',
      params: { notifications: { toolsListChanged: true }, _meta: { 'io.modelcontextprotocol/subscriptionId': 'sub-9' } },
    });
    const list = await srv.request('tools/list', { _meta: META }, 'sl-1');
    expect(list.result).toMatchObject({ resultType: 'complete', cacheScope: 'private', tools: [{ name: 'test.echo' }] });
    const file = tmp.file('echo2.json', toolDefinition({ name: 'test.echo2', handler: 'test.echo' }));
    expect((await runCli(['publish', file, '--store', tmp.store])).code).toBe(0);
    const note = await srv.next((m) => m.method === 'notifications/tools/list_changed' && m.params !== undefined, 15_000);
    expect(note).toEqual({ jsonrpc: '2.0', method: 'notifications/tools/list_changed', params: { _meta: { 'io.modelcontextprotocol/subscriptionId': 'sub-9' } } });
  });

  it('notifications/cancelled ends a listen: a later change is not announced on it', async () => {
    const announced = () => srv.lines.seen.filter((l) => l.includes('"io.modelcontextprotocol/subscriptionId":"sub-9"') && l.includes('list_changed')).length;
    const before = announced();
    srv.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'sub-9' } });
    await srv.request('ping', undefined, 'after-cancel');
    const file = tmp.file('echo3.json', toolDefinition({ name: 'test.echo3', handler: 'test.echo' }));
    expect((await runCli(['publish', file, '--store', tmp.store])).code).toBe(0);
    await srv.logs.next((l) => l.msg === 'catalogue updated' && Array.isArray(l.tools) && l.tools.includes('test.echo3'), 15_000);
    await srv.request('ping', undefined, 'after-publish');
    expect(announced()).toBe(before);
  });

  it('ends cleanly when stdin closes', async () => {
    srv.child.stdin?.end();
    const code = await new Promise<number | null>((resolve) => srv.child.once('close', resolve));
    expect(code).toBe(0);
  });
});
