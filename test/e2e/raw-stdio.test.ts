/**
 * The real `estate serve --stdio` process driven with raw JSON lines: the pipeline's edge cases, the traced example,
 * invariants 1–3, call records read back with the CLI, and change notifications caused by ANOTHER process.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTempStore, runCli, startStdioServer, toolDefinition, type StdioServer, type TempStore } from './helpers.ts';
import { lookupV1 } from './sdk-fixtures.ts';

const ACME = ['--tenant', 'acme', '--scopes', 'payments.read', '--clearance', 'confidential'];
const isListChanged = (l: string) => l.includes('notifications/tools/list_changed');

describe('estate serve --stdio, raw lines (demo estate)', () => {
  let tmp: TempStore;
  let srv: StdioServer;

  beforeAll(async () => {
    tmp = makeTempStore();
    srv = await startStdioServer(['--demo', '--store', tmp.store, ...ACME], { env: { ESTATE_LOG_LEVEL: 'debug' } });
  });
  afterAll(async () => {
    await srv?.stop();
    tmp?.cleanup();
  });

  it('logs its connection id at start', () => {
    expect(srv.ready.transport).toBe('stdio');
    expect(srv.ready.connectionId).toEqual(expect.any(String));
  });

  it('bad JSON → -32700 with id null', async () => {
    srv.send('{"jsonrpc": "2.0", "id": 1, "method": ');
    expect(await srv.next()).toEqual({ jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error' } });
  });

  it('an invalid envelope → -32600 with its id when readable, else null', async () => {
    srv.send({ jsonrpc: '1.0', id: 'env-1', method: 'ping' });
    expect(await srv.next()).toMatchObject({ id: 'env-1', error: { code: -32600 } });
    srv.send({ jsonrpc: '2.0', id: [1], method: 'ping' });
    expect(await srv.next()).toMatchObject({ id: null, error: { code: -32600 } });
    srv.send('[]');
    expect(await srv.next()).toMatchObject({ id: null, error: { code: -32600 } });
  });

  it('a stateless method named after an Object.prototype member (valueOf, constructor) is -32601, not a silent drop', async () => {
    // Found by fuzz-stdio: the capability table was indexed by the client's method name, so `valueOf` found
    // Object.prototype.valueOf, the check threw, and the request was never answered.
    const meta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': { valueOf: null } };
    for (const method of ['valueOf', 'constructor', 'toString', '__proto__']) {
      srv.send({ jsonrpc: '2.0', id: `proto-${method}`, method, params: { _meta: meta } });
      expect(await srv.next()).toMatchObject({ id: `proto-${method}`, error: { code: -32601 } });
    }
  });

  it('before initialize: ping works, anything else is -32600; a notification and an id-less request get nothing', async () => {
    srv.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    srv.send({ jsonrpc: '2.0', method: 'tools/list' });
    srv.send({ jsonrpc: '2.0', id: 'p0', method: 'ping' });
    // stdout is ordered: had either of the first two been answered, that answer would come before the ping's.
    expect(await srv.next()).toEqual({ jsonrpc: '2.0', id: 'p0', result: {} });
    srv.send({ jsonrpc: '2.0', id: 'early', method: 'tools/list' });
    expect(await srv.next()).toEqual({ jsonrpc: '2.0', id: 'early', error: { code: -32600, message: 'Invalid Request: the session is not initialized' } });
  });

  it('initialize negotiates; a batch is refused on 2025-11-25; ping still works', async () => {
    const init = await srv.initialize('2025-11-25');
    expect(init).toMatchObject({ result: { protocolVersion: '2025-11-25', capabilities: { tools: { listChanged: true } } } });
    // stderr and stdout are separate pipes: the log line may arrive after the answer
    await srv.logs.next((l) => l.msg === 'session initialized' && l.protocolVersion === '2025-11-25', 5000);
    srv.send([{ jsonrpc: '2.0', id: 'b1', method: 'ping' }]);
    expect(await srv.next()).toMatchObject({ id: null, error: { code: -32600 } });
    expect(await srv.request('ping', undefined, 'p1')).toEqual({ jsonrpc: '2.0', id: 'p1', result: {} });
  });

  it('the traced example: exactly the two errors left after repair, nothing recorded', async () => {
    const r = await srv.request('tools/call', {
      name: 'payments.lookup',
      arguments: { reference: 'PMT771', include_legs: 'yes', urgent: true },
      _meta: { 'io.estate/runId': 'run-traced-invalid' },
    });
    const result = r.result as { content: { text: string }[]; isError: boolean; _meta: Record<string, unknown> };
    expect(result.isError).toBe(true);
    expect(result._meta['io.estate/repairs']).toEqual([{ path: '$.urgent', action: 'dropped' }]);
    expect(result.content[0]?.text.split('\n')).toEqual([
      '$.include_legs: expected type boolean, got string',
      "$.reference: does not match pattern '^PMT-\\d{3,}$'",
    ]);
    const calls = await runCli(['calls', 'run-traced-invalid', '--json', '--store', tmp.store]);
    expect(calls.code).toBe(4); // invariant 2: a schema violation records nothing
  });

  it('a successful call is recorded with version and schemaHash before it is answered', async () => {
    const r = await srv.request('tools/call', { name: 'payments.lookup', arguments: { reference: 'PMT-771', include_legs: true } });
    const result = r.result as { content: { text: string }[]; _meta: Record<string, string> };
    expect(result.content[0]?.text).toMatch(/^PMT-771: HELD, 250000 AED/);
    const runId = result._meta['io.estate/runId'] as string;
    expect(runId).toBe(srv.ready.connectionId);
    const show = await runCli(['show', 'payments.lookup', '--json', '--store', tmp.store]);
    const schemaHash = (JSON.parse(show.stdout) as { schemaHash: string }).schemaHash;
    const out = await runCli(['calls', runId, '--json', '--store', tmp.store]);
    expect(out.code).toBe(0);
    const { calls } = JSON.parse(out.stdout) as { calls: Record<string, unknown>[] };
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({ tool: 'payments.lookup', version: '1.0.0', schemaHash, outcome: 'ok', repaired: false, tenant: 'acme' });
  });

  it('an unentitled tool and an unknown tool give the same error', async () => {
    const unentitled = await srv.request('tools/call', { name: 'payments.transfer', arguments: {} }, 'same');
    const unknown = await srv.request('tools/call', { name: 'payments.nonexistent', arguments: {} }, 'same');
    expect(unentitled).toEqual({ jsonrpc: '2.0', id: 'same', error: { code: -32602, message: 'Unknown tool: payments.transfer' } });
    expect(JSON.stringify(unknown).replace('payments.nonexistent', 'payments.transfer')).toBe(JSON.stringify(unentitled));
  });

  it('a publish from another process reaches this session as list_changed', async () => {
    await srv.request('tools/list', undefined, 'list-before');
    const file = tmp.file('fx.history.json', toolDefinition({ name: 'fx.history', handler: 'fx.rates', access: { requiredScopes: [], tenants: ['acme'], classification: 'public' } }));
    const pub = await runCli(['publish', file, '--json', '--store', tmp.store]);
    expect(JSON.parse(pub.stdout)).toMatchObject({ result: 'published' });
    const note = await srv.lines.next(isListChanged, 15_000, 'list_changed');
    expect(JSON.parse(note)).toEqual({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' });
    const listed = await srv.request('tools/list');
    expect((listed.result as { tools: { name: string }[] }).tools.map((t) => t.name)).toContain('fx.history');
  });

  it('stdout carried nothing but JSON-RPC', () => {
    for (const line of srv.lines.seen) expect((JSON.parse(line) as { jsonrpc: string }).jsonrpc).toBe('2.0');
  });
});

describe('estate serve --stdio, a second process on the same store', () => {
  let tmp: TempStore;
  let acme: StdioServer;
  let globex: StdioServer;

  beforeAll(async () => {
    tmp = makeTempStore();
    const seed = await startStdioServer(['--demo', '--store', tmp.store]);
    await seed.stop();
    const env = { ESTATE_LOG_LEVEL: 'debug' };
    acme = await startStdioServer(['--demo', '--store', tmp.store, ...ACME], { env });
    globex = await startStdioServer(['--demo', '--store', tmp.store, '--tenant', 'globex', '--scopes', 'payments.read', '--clearance', 'confidential'], { env });
  });
  afterAll(async () => {
    await acme?.stop();
    await globex?.stop();
    tmp?.cleanup();
  });

  it('a session whose view did not change is not told', async () => {
    await acme.initialize();
    await globex.initialize();
    await acme.request('tools/list');
    await globex.request('tools/list');
    const file = tmp.file('acme.only.json', toolDefinition({ name: 'fx.acme_only', handler: 'fx.rates', access: { requiredScopes: [], tenants: ['acme'], classification: 'public' } }));
    expect((await runCli(['publish', file, '--store', tmp.store])).code).toBe(0);
    await acme.lines.next(isListChanged, 15_000, 'list_changed');
    // globex's process has applied the event once it logs it; anything it sent because of it is already on stdout.
    await globex.logs.next((l) => l.msg === 'catalogue updated' && Array.isArray(l.tools) && l.tools.includes('fx.acme_only'), 15_000);
    await globex.request('ping', undefined, 'after-update');
    expect(globex.lines.seen.some(isListChanged)).toBe(false);
  });

  it('batches are answered per message on a 2025-03-26 session', async () => {
    const tmp2 = makeTempStore();
    const old = await startStdioServer(['--store', tmp2.store, '--handlers', 'test/fixtures/handlers/test-handlers.ts']);
    try {
      await old.initialize('2025-03-26');
      old.send([
        { jsonrpc: '2.0', id: 1, method: 'ping' },
        { jsonrpc: '2.0', method: 'notifications/initialized' },
        { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'payments.transfer', arguments: {} } },
      ]);
      const batch = await old.lines.next((l) => l.startsWith('['));
      expect(JSON.parse(batch)).toEqual([
        { jsonrpc: '2.0', id: 1, result: {} },
        // an empty store: the name is unknown here — byte-identical to the unentitled answer above
        { jsonrpc: '2.0', id: 2, error: { code: -32602, message: 'Unknown tool: payments.transfer' } },
      ]);
    } finally {
      await old.stop();
      tmp2.cleanup();
    }
  });
});

describe('estate serve --stdio without principal flags: the default principal', () => {
  // SPEC §5: stdio default is tenant "default", no scopes, clearance public.
  let tmp: TempStore;
  let srv: StdioServer;
  const FIXTURES = new URL('./sdk-fixtures.ts', import.meta.url).pathname;
  const tool = (name: string, access: Record<string, unknown>) => ({ ...lookupV1, name, access: { requiredScopes: [], tenants: [], classification: 'public', ...access } });
  const tools = [
    tool('payments.open', {}),
    tool('payments.home', { tenants: ['default'] }),
    tool('payments.acme', { tenants: ['acme'] }),
    tool('payments.scoped', { requiredScopes: ['payments.read'] }),
    tool('payments.internal', { classification: 'internal' }),
  ];

  beforeAll(async () => {
    tmp = makeTempStore();
    for (const t of tools) {
      const r = await runCli(['publish', tmp.file(`${t.name}.json`, t), '--store', tmp.store]);
      if (r.code !== 0) throw new Error(r.stderr);
    }
    srv = await startStdioServer(['--store', tmp.store, '--handlers', FIXTURES]);
  }, 60_000);
  afterAll(async () => {
    await srv?.stop();
    tmp?.cleanup();
  });

  it('sees only what tenant "default", no scopes and clearance public may see, and is recorded as tenant default', async () => {
    await srv.initialize();
    const list = await srv.request('tools/list');
    expect(((list.result as { tools: { name: string }[] }).tools).map((t) => t.name)).toEqual(['payments.home', 'payments.open']);
    const hidden = await srv.request('tools/call', { name: 'payments.internal', arguments: { reference: 'PMT-771' } });
    expect(hidden.error).toEqual({ code: -32602, message: 'Unknown tool: payments.internal' });
    const ok = await srv.request('tools/call', { name: 'payments.home', arguments: { reference: 'PMT-771' }, _meta: { 'io.estate/runId': 'default-principal-run' } });
    expect((ok.result as { isError?: boolean }).isError).toBeUndefined();
    const calls = await runCli(['calls', 'default-principal-run', '--json', '--store', tmp.store]);
    expect(calls.code, calls.stderr).toBe(0);
    expect((JSON.parse(calls.stdout) as { calls: { tenant: string; tool: string }[] }).calls).toEqual([expect.objectContaining({ tool: 'payments.home', tenant: 'default' })]);
  });
});
