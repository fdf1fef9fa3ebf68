/**
 * A lock held on the SQLite file by another process (a backup tool, `sqlite3` in `BEGIN EXCLUSIVE`, another Estate's
 * long write) must stall only the calls that need the store, never the server: better-sqlite3 is synchronous, and a
 * busy wait inside SQLite (busy_timeout) froze the event loop, so one tools/call held every session's `ping` for its
 * whole 30 s. Here the lock is held from this process; one call waits for it (its record cannot be committed, so it
 * must not answer yet), and meanwhile another session's ping and /healthz answer. Then the lock is released, the call
 * answers ok, and its record is on file.
 */
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { aRawDefinition } from '../fixtures/builders.ts';
import { makeTempStore, REPO_ROOT, rpc, runCli, startHttpServer, type HttpServer, type TempStore } from './helpers.ts';


let srv: HttpServer | undefined;
let tmp: TempStore | undefined;
let lock: Database.Database | undefined;
afterEach(async () => {
  if (lock?.open) {
    if (lock.inTransaction) lock.exec('ROLLBACK');
    lock.close();
  }
  lock = undefined;
  await srv?.stop();
  srv = undefined;
  tmp?.cleanup();
});

const openSession = async (url: string): Promise<string> => {
  const init = await rpc(url, { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'lock-wait', version: '1' } } });
  expect(init.sid).toBeTypeOf('string');
  await rpc(url, { jsonrpc: '2.0', method: 'notifications/initialized' }, init.sid);
  return init.sid!;
};

describe('a SQLite store locked by another process', () => {
  it('makes the call that needs it wait, while other sessions are answered; the call completes once the lock is gone', { timeout: 120_000 }, async () => {
    tmp = makeTempStore('estate-lock-');
    const published = await runCli(['publish', tmp.file('lookup.json', aRawDefinition()), '--store', tmp.store]);
    expect(published.code, published.stderr).toBe(0);
    srv = await startHttpServer([
      '--store', tmp.store,
      '--handlers', join(REPO_ROOT, 'examples', 'lookup-handlers.mjs'),
      '--tenant', 'acme', '--scopes', 'payments.read', '--clearance', 'confidential',
    ]);
    const base = srv.url.replace(/\/mcp$/, '');
    const caller = await openSession(srv.url);
    const other = await openSession(srv.url);

    // WAL: readers go on, every writer (the server's call recorder) finds the database locked.
    lock = new Database(join(tmp.dir, 'e.db'));
    lock.exec('BEGIN EXCLUSIVE');

    const runId = 'lock-wait-run';
    let settled = false;
    const call = rpc(
      srv.url,
      { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'payments.lookup', arguments: { reference: 'PMT-771' }, _meta: { 'io.estate/runId': runId } } },
      caller,
    ).finally(() => (settled = true));
    // The handler ran; its record is next, and it cannot be committed while the lock is held.
    await srv.logs.next((l) => l.msg === 'payment looked up', 20_000, 'handler log line');

    const pong = await rpc(srv.url, { jsonrpc: '2.0', id: 8, method: 'ping' }, other);
    expect(pong.message).toEqual({ jsonrpc: '2.0', id: 8, result: {} });
    expect(settled, 'the ping must be answered while the call still waits for the lock').toBe(false);
    const health = await fetch(`${base}/healthz`);
    expect(health.status).toBe(200);
    expect(settled, 'the call must wait for the lock, not answer').toBe(false);
    expect(lock.inTransaction).toBe(true);

    lock.exec('COMMIT');
    lock.close();
    const answered = await call;
    expect(answered.message).toMatchObject({ jsonrpc: '2.0', id: 7, result: { content: [{ type: 'text', text: 'PMT-771: HELD, 250000 AED' }] } });
    expect((answered.message?.result as { isError?: boolean }).isError).not.toBe(true);

    const calls = await runCli(['calls', runId, '--json', '--store', tmp.store]);
    expect(calls.code, calls.stderr).toBe(0);
    expect(JSON.parse(calls.stdout)).toMatchObject({ runId, calls: [{ tool: 'payments.lookup', tenant: 'acme', outcome: 'ok' }] });
  });
});
