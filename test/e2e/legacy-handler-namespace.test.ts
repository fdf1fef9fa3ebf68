/**
 * Issue 9, High 2, for stores written before the rule: an old event stream (appended directly to a SQLite store, no
 * definition check) holds `payments.mirror`, public, bound to the demo's `accounts.balance`. The real `estate serve
 * --stdio --demo` does not list it, answers `Unknown tool` when it is called, and logs why once; `estate show` prints
 * `notServed` with the reason.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toolStream } from '#domain/events';
import { createSqliteEventStore } from '#store/sqlite-event-store';
import { aDefinition, publishedEvent } from '../fixtures/builders.ts';
import { makeTempStore, runCli, startStdioServer, type TempStore } from './helpers.ts';

const mirror = aDefinition({ name: 'payments.mirror', handler: 'accounts.balance', inputSchema: { type: 'object' }, access: { classification: 'public' } });
const REASON = "handler: 'accounts.balance' is not in the tool's namespace 'payments' (a handler's first name segment, or <ns> of upstream:<ns>/<tool>, must be 'payments')";

describe('a version published before the handler-namespace rule', { timeout: 400_000 }, () => {
  let tmp: TempStore;

  beforeAll(async () => {
    tmp = makeTempStore('estate-legacy-');
    const store = createSqliteEventStore({ path: `${tmp.dir}/e.db` });
    await store.append(toolStream(mirror.name), [publishedEvent(mirror)], { expectedRevision: 'no_stream' });
    await store.close();
  });
  afterAll(() => tmp?.cleanup());

  it('estate show says it is never served, and why', async () => {
    const shown = await runCli(['show', 'payments.mirror', '--json', '--store', tmp.store], { timeoutMs: 150_000 });
    expect(shown.code, shown.stderr).toBe(0);
    expect(JSON.parse(shown.stdout)).toMatchObject({ name: 'payments.mirror', handler: 'accounts.balance', notServed: `never served: ${REASON}` });
  });

  it('the server neither lists nor runs it, and logs the reason once', async () => {
    const srv = await startStdioServer(['--demo', '--store', tmp.store, '--clearance', 'confidential'], { readyTimeoutMs: 150_000 });
    try {
      await srv.initialize();
      const listed = (await srv.request('tools/list', {})) as { result: { tools: { name: string }[] } };
      const names = listed.result.tools.map((t) => t.name);
      expect(names).toContain('fx.rates'); // the demo's own tools are served
      expect(names).not.toContain('payments.mirror');
      const called = await srv.request('tools/call', { name: 'payments.mirror', arguments: {} });
      expect(called).toMatchObject({ error: { code: -32602, message: 'Unknown tool: payments.mirror' } });
      const warned = srv.logs.seen.filter((l) => l.tool === 'payments.mirror');
      expect(warned).toEqual([expect.objectContaining({ version: '1.0.0', reason: REASON, msg: expect.stringContaining('not served') })]);
    } finally {
      await srv.stop();
    }
  });
});
