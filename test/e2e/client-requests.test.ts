/**
 * A handler asks the client mid-call, end to end against the real `estate serve`: over stdio with raw JSON lines (the
 * test answers the server's elicitation/create line itself), and over Streamable HTTP at 2025-11-25 with the official
 * SDK v2 Client, whose registered elicitation and sampling handlers answer on the session.
 */
import { Client, StreamableHTTPClientTransport, type CallToolResult } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTempStore, runCli, startHttpServer, startStdioServer, toolDefinition, type HttpServer, type StdioServer, type TempStore } from './helpers.ts';

const HANDLERS = 'test/fixtures/handlers/test-handlers.ts';
const defs = [
  toolDefinition({ name: 'test.elicit', handler: 'test.elicit', sideEffect: 'non_idempotent', inputSchema: { type: 'object', properties: { text: { type: 'string' } } } }),
  toolDefinition({ name: 'test.sample', handler: 'test.sample', sideEffect: 'non_idempotent', inputSchema: { type: 'object', properties: { text: { type: 'string' } } } }),
];

const publishAll = async (tmp: TempStore): Promise<void> => {
  for (const d of defs) {
    const r = await runCli(['publish', tmp.file(`${String(d.name)}.json`, d), '--store', tmp.store]);
    if (r.code !== 0) throw new Error(`publish failed: ${r.stderr}`);
  }
};

const textOf = (r: CallToolResult): string => r.content.map((c) => (c.type === 'text' ? c.text : `<${c.type}>`)).join('\n');

describe('server-to-client requests over stdio (raw lines)', () => {
  let tmp: TempStore;
  let srv: StdioServer;

  beforeAll(async () => {
    tmp = makeTempStore();
    await publishAll(tmp);
    srv = await startStdioServer(['--store', tmp.store, '--handlers', HANDLERS]);
    const init = await srv.request('initialize', { protocolVersion: '2025-11-25', capabilities: { elicitation: {} }, clientInfo: { name: 'raw', version: '1' } });
    expect(init.result).toMatchObject({ protocolVersion: '2025-11-25' });
    srv.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  }, 60_000);
  afterAll(async () => {
    await srv?.stop();
    tmp?.cleanup();
  });

  it('elicitation/create is a line on stdout; the answer line settles it and the call completes', async () => {
    srv.send({ jsonrpc: '2.0', id: 'call-1', method: 'tools/call', params: { name: 'test.elicit', arguments: { text: 'Name, please' } } });
    const asked = await srv.next((m) => m.method === 'elicitation/create');
    expect(asked.id).toBeDefined();
    expect(asked.params).toEqual({ message: 'Name, please', requestedSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] } });
    srv.send({ jsonrpc: '2.0', id: asked.id, result: { action: 'accept', content: { name: 'Ada' } } });
    const answer = await srv.next((m) => m.id === 'call-1');
    expect(answer.result).toMatchObject({ content: [{ type: 'text', text: 'accept: {"name":"Ada"}' }] });
    expect(answer.result).not.toHaveProperty('isError');
  });

  it('the client answers with an error: an isError result, and nothing answers the response line itself', async () => {
    srv.send({ jsonrpc: '2.0', id: 'call-2', method: 'tools/call', params: { name: 'test.elicit', arguments: {} } });
    const asked = await srv.next((m) => m.method === 'elicitation/create');
    const before = srv.lines.seen.length;
    srv.send({ jsonrpc: '2.0', id: asked.id, error: { code: -1, message: 'User closed the dialog' } });
    const answer = await srv.next((m) => m.id === 'call-2');
    expect(answer.result).toMatchObject({ isError: true, content: [{ type: 'text', text: 'Tool failed: The client answered elicitation/create with an error (-1): User closed the dialog' }] });
    expect(srv.lines.seen.slice(before).map((l) => (JSON.parse(l) as { id?: unknown }).id)).toEqual(['call-2']);
  });

  it('sampling was not declared: refused without asking', async () => {
    const before = srv.lines.seen.length;
    const answer = await srv.request('tools/call', { name: 'test.sample', arguments: {} }, 'call-3');
    expect(answer.result).toMatchObject({ isError: true, content: [{ type: 'text', text: 'Tool failed: sampling/createMessage refused: the client did not declare the sampling capability' }] });
    expect(srv.lines.seen.slice(before)).toHaveLength(1);
  });
});

describe('server-to-client requests over HTTP with the SDK v2 Client at 2025-11-25', () => {
  let tmp: TempStore;
  let http: HttpServer;
  let client: Client;
  const asked: { method: string; params: unknown }[] = [];

  beforeAll(async () => {
    tmp = makeTempStore();
    await publishAll(tmp);
    http = await startHttpServer(['--store', tmp.store, '--handlers', HANDLERS]);
    client = new Client({ name: 'elicit-e2e', version: '1.0.0' }, { capabilities: { elicitation: {}, sampling: {} } });
    client.setRequestHandler('elicitation/create', (request) => {
      asked.push({ method: request.method, params: request.params });
      // The answer names the question, so a mix-up between concurrent calls would show.
      return { action: 'accept', content: { name: `Grace/${request.params.message}` } };
    });
    client.setRequestHandler('sampling/createMessage', (request) => {
      asked.push({ method: request.method, params: request.params });
      return { role: 'assistant', model: 'test-model', content: { type: 'text', text: 'hi there' } };
    });
    await client.connect(new StreamableHTTPClientTransport(new URL(http.url)));
  }, 60_000);
  afterAll(async () => {
    await client?.close().catch(() => undefined);
    await http?.stop();
    tmp?.cleanup();
  });

  it('negotiates a 2025 session', () => {
    expect(client.getNegotiatedProtocolVersion()).toBe('2025-11-25');
  });

  it("elicitation: the client's handler is asked on the call's stream and its answer is the tool's", async () => {
    const r = (await client.callTool({ name: 'test.elicit', arguments: { text: 'Name?' } })) as CallToolResult;
    expect(textOf(r)).toBe('accept: {"name":"Grace/Name?"}');
    expect(asked.at(-1)).toMatchObject({ method: 'elicitation/create', params: { message: 'Name?' } });
  });

  it("sampling: the client's model answers", async () => {
    const r = (await client.callTool({ name: 'test.sample', arguments: { text: 'hello?' } })) as CallToolResult;
    expect(textOf(r)).toBe('test-model said hi there');
    expect(asked.at(-1)).toMatchObject({ method: 'sampling/createMessage', params: { messages: [{ role: 'user', content: { type: 'text', text: 'hello?' } }], maxTokens: 20 } });
  });

  it('two calls asking at once each get their own answer', async () => {
    const [a, b, c] = await Promise.all([
      client.callTool({ name: 'test.elicit', arguments: { text: 'one' } }),
      client.callTool({ name: 'test.elicit', arguments: { text: 'two' } }),
      client.callTool({ name: 'test.sample', arguments: { text: 'three' } }),
    ]);
    expect(textOf(a as CallToolResult)).toBe('accept: {"name":"Grace/one"}');
    expect(textOf(b as CallToolResult)).toBe('accept: {"name":"Grace/two"}');
    expect(textOf(c as CallToolResult)).toBe('test-model said hi there');
  });
});
