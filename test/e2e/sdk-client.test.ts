/**
 * The real `estate serve` process driven by the OFFICIAL MCP SDK v2 Client (@modelcontextprotocol/client), over stdio
 * and Streamable HTTP, at 2026-07-28 (stateless: the client pins it and probes with server/discover) and 2025-11-25
 * (initialize handshake). Each combination gets its own SQLite store, published through the CLI.
 */
import { Client, StreamableHTTPClientTransport, type CallToolResult, type Transport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ESTATE_BIN, makeTempStore, REPO_ROOT, runCli, startHttpServer, type HttpServer, type TempStore } from './helpers.ts';
import { hiddenTools, lookupV1, lookupV11, PRINCIPAL_FLAGS, statusTool } from './sdk-fixtures.ts';

const FIXTURES = fileURLToPath(new URL('./sdk-fixtures.ts', import.meta.url));
const TRACED_ERRORS = "$.include_legs: expected type boolean, got string\n$.reference: does not match pattern '^PMT-\\d{3,}$'";
const LIST_CHANGE_WAIT_MS = 8000;

type Revision = '2026-07-28' | '2025-11-25';
type Kind = 'stdio' | 'http';

const publish = async (store: TempStore, def: Record<string, unknown>): Promise<void> => {
  const file = store.file(`${String(def.name)}@${String(def.version)}.json`, def);
  const r = await runCli(['publish', file, '--store', store.store, '--by', 'sdk-e2e']);
  if (r.code !== 0) throw new Error(`publish ${file} failed (${String(r.code)}): ${r.stderr}`);
};

const textOf = (r: CallToolResult): string => r.content.map((c) => (c.type === 'text' ? c.text : `<${c.type}>`)).join('\n');

const within = <T>(p: Promise<T>, ms: number, what: string): Promise<T> =>
  Promise.race([p, new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`${what}: nothing within ${ms} ms`)), ms))]);

for (const kind of ['stdio', 'http'] as const satisfies readonly Kind[]) {
  for (const revision of ['2026-07-28', '2025-11-25'] as const satisfies readonly Revision[]) {
    describe(`SDK v2 Client over ${kind} at ${revision}`, () => {
      let store: TempStore;
      let http: HttpServer | undefined;
      let client: Client;
      let transport: Transport;

      beforeAll(async () => {
        store = makeTempStore('estate-sdk-');
        await publish(store, lookupV1);
        await Promise.all([publish(store, lookupV11), ...hiddenTools.map((d) => publish(store, d))]);
        const serveArgs = ['--store', store.store, '--handlers', FIXTURES, ...PRINCIPAL_FLAGS];
        if (kind === 'stdio') {
          transport = new StdioClientTransport({
            command: process.execPath,
            args: [ESTATE_BIN, 'serve', '--stdio', ...serveArgs],
            cwd: REPO_ROOT,
            env: { ...(process.env as Record<string, string>), ESTATE_LOG_LEVEL: 'warn' },
            stderr: 'ignore',
          });
        } else {
          http = await startHttpServer(serveArgs, { env: { ESTATE_LOG_LEVEL: 'info' } });
          transport = new StreamableHTTPClientTransport(new URL(http.url));
        }
        client = new Client(
          { name: 'estate-sdk-e2e', version: '1.0.0' },
          revision === '2026-07-28' ? { versionNegotiation: { mode: { pin: '2026-07-28' } } } : {},
        );
        await client.connect(transport);
      }, 90_000);

      afterAll(async () => {
        await client?.close().catch(() => undefined);
        await http?.stop();
        store?.cleanup();
      });

      it('negotiates the revision and advertises tools', () => {
        expect(client.getNegotiatedProtocolVersion()).toBe(revision);
        expect(client.getServerCapabilities()?.tools).toBeDefined();
        // 2026-07-28 is stateless: no session; a 2025 client over HTTP gets one.
        if (transport instanceof StreamableHTTPClientTransport) expect(transport.sessionId !== undefined).toBe(revision === '2025-11-25');
      });

      it("lists the principal's view only: the newest visible version, no access fields", async () => {
        const { tools } = await client.listTools();
        expect(tools.map((t) => t.name)).toEqual(['payments.lookup']);
        const [lookup] = tools;
        expect(lookup?._meta?.['io.estate/version']).toBe('1.1.0');
        expect(lookup?.inputSchema).toMatchObject({ type: 'object', required: ['reference'] });
        expect(JSON.stringify(tools)).not.toMatch(/requiredScopes|classification|tenants/);
      });

      it('calls the newest version with valid arguments', async () => {
        const r = (await client.callTool({ name: 'payments.lookup', arguments: { reference: 'PMT-771', include_legs: true } })) as CallToolResult;
        expect(r.isError ?? false).toBe(false);
        expect(textOf(r)).toBe('PMT-771: HELD, 250000 AED (served by payments.lookup@1.1.0)');
        expect(r._meta?.['io.estate/version']).toBe('1.1.0');
        const runId = r._meta?.['io.estate/runId'];
        expect(typeof runId).toBe('string');
        // The call record is committed before the result is returned, so another process sees it at once.
        const calls = await runCli(['calls', String(runId), '--store', store.store, '--json']);
        expect(calls.code, calls.stderr).toBe(0);
        const recorded = (JSON.parse(calls.stdout) as { calls: { tool: string; version: string; outcome: string }[] }).calls;
        expect(recorded.filter((c) => c.tool === 'payments.lookup' && c.version === '1.1.0' && c.outcome === 'ok').length).toBeGreaterThanOrEqual(1);
      });

      it('answers the traced example with exactly the two sorted error lines, as an isError result', async () => {
        const r = (await client.callTool({ name: 'payments.lookup', arguments: { reference: 'PMT771', include_legs: 'yes', urgent: true } })) as CallToolResult;
        expect(r.isError).toBe(true);
        expect(textOf(r)).toBe(TRACED_ERRORS);
      });

      it('runs a pinned version when _meta io.estate/version names it', async () => {
        const r = (await client.callTool({ name: 'payments.lookup', arguments: { reference: 'PMT-100' }, _meta: { 'io.estate/version': '1.0.0' } })) as CallToolResult;
        expect(r.isError ?? false).toBe(false);
        expect(textOf(r)).toContain('payments.lookup@1.0.0');
        expect(r._meta?.['io.estate/version']).toBe('1.0.0');
      });

      it('refuses an invisible tool exactly like an unknown one', async () => {
        const call = (name: string) => client.callTool({ name, arguments: { reference: 'PMT-100' } }).then(
          () => 'resolved',
          (e: unknown) => (e instanceof Error ? e.message : String(e)),
        );
        const [hidden, unknown] = await Promise.all([call('payments.refund'), call('no.such.tool')]);
        expect(hidden).toMatch(/Unknown tool: payments\.refund/);
        expect(unknown).toMatch(/Unknown tool: no\.such\.tool/);
      });

      it('is told its list changed after `estate publish` from another process, and sees the new tool', async () => {
        const changed = new Promise<void>((resolve) => client.setNotificationHandler('notifications/tools/list_changed', () => resolve()));
        const subscription = revision === '2026-07-28' ? await client.listen({ toolsListChanged: true }) : undefined;
        try {
          await publish(store, statusTool);
          await within(changed, LIST_CHANGE_WAIT_MS, 'notifications/tools/list_changed');
          const { tools } = await client.listTools(undefined, { cacheMode: 'refresh' });
          expect(tools.map((t) => t.name)).toEqual(['payments.lookup', 'payments.status']);
        } finally {
          await subscription?.close().catch(() => undefined);
        }
      }, 30_000);
    });
  }
}
