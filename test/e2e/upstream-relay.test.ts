/**
 * Several callers, one upstream link: an upstream's log lines and elicitation requests reach the caller whose call
 * they belong to, and no other. Two SDK v2 clients call through `estate serve --http` at once; the fixture upstream
 * (test/fixtures/upstream/fixture-http.mjs, Streamable HTTP 2025-11-25) holds each call until both are in flight, then
 * logs and asks a question on each call's own response stream. Each client must get exactly its own log line and its
 * own question, and its own answer must come back in its own result.
 */
import { Client, StreamableHTTPClientTransport, type CallToolResult } from '@modelcontextprotocol/client';
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTempStore, runCli, startHttpServer, type HttpServer, type TempStore } from './helpers.ts';

const FIXTURE = fileURLToPath(new URL('../fixtures/upstream/fixture-http.mjs', import.meta.url));
const PRINCIPAL = ['--tenant', 'acme', '--scopes', 'rl.use', '--clearance', 'internal', '--subject', 'relay-e2e'];

const textOf = (r: CallToolResult): string => r.content.map((c) => (c.type === 'text' ? c.text : `<${c.type}>`)).join('\n');

/** The fixture on a free port, holding each `ask` until `gather` calls are in flight. */
const startFixture = async (gather: number): Promise<{ child: ChildProcess; url: string }> => {
  const child = spawn(process.execPath, [FIXTURE, '0', String(gather)], { stdio: ['ignore', 'pipe', 'inherit'] });
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout?.on('data', (c: Buffer) => {
      out += c.toString();
      const m = /listening (\S+)/.exec(out);
      if (m?.[1]) resolve(m[1]);
    });
    child.once('exit', (code) => reject(new Error(`fixture-http exited ${String(code)}`)));
  });
  return { child, url };
};

interface Caller {
  client: Client;
  questions: string[];
  logs: string[];
}

describe('upstream messages reach only the caller they belong to', () => {
  let store: TempStore;
  let fixture: { child: ChildProcess; url: string };
  let front: HttpServer;

  beforeAll(async () => {
    store = makeTempStore('estate-relay-');
    fixture = await startFixture(2);
    const cli = async (args: string[]) => {
      const r = await runCli([...args, '--store', store.store, '--json']);
      expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(0);
    };
    await cli(['upstream', 'add', 'rl', '--url', fixture.url, '--scopes', 'rl.use', '--clearance', 'internal']);
    await cli(['upstream', 'sync', 'rl']);
    await cli(['upstream', 'approve', 'rl', '--all']);
    front = await startHttpServer(['--store', store.store, ...PRINCIPAL, '--upstream-sync-interval', '0']);
  }, 180_000);

  afterAll(async () => {
    await front?.stop();
    fixture?.child.kill();
    store?.cleanup();
  });

  const caller = async (name: string): Promise<Caller> => {
    const c: Caller = { client: new Client({ name, version: '1.0.0' }, { capabilities: { elicitation: {} } }), questions: [], logs: [] };
    c.client.setRequestHandler('elicitation/create', async (req) => {
      c.questions.push(String(req.params.message));
      return { action: 'accept', content: { answer: name } };
    });
    c.client.setNotificationHandler('notifications/message', (n) => {
      const d = n.params.data as { message?: unknown } | string;
      c.logs.push(typeof d === 'string' ? d : String(d.message));
    });
    await c.client.connect(new StreamableHTTPClientTransport(new URL(front.url)));
    await c.client.setLoggingLevel('debug');
    return c;
  };

  it('two calls in flight on one HTTP upstream: each client gets its own log line, its own question, its own answer', { timeout: 60_000 }, async () => {
    const a = await caller('client-a');
    const b = await caller('client-b');
    try {
      const [ra, rb] = await Promise.all([
        a.client.callTool({ name: 'rl.ask', arguments: { tag: 'A' } }),
        b.client.callTool({ name: 'rl.ask', arguments: { tag: 'B' } }),
      ]);
      expect([ra.isError ?? false, textOf(ra)]).toEqual([false, 'A got {"action":"accept","content":{"answer":"client-a"}}']);
      expect([rb.isError ?? false, textOf(rb)]).toEqual([false, 'B got {"action":"accept","content":{"answer":"client-b"}}']);
      expect(a.questions).toEqual(['question for A']);
      expect(b.questions).toEqual(['question for B']);
      expect(a.logs.filter((l) => l.startsWith('log for'))).toEqual(['log for A']);
      expect(b.logs.filter((l) => l.startsWith('log for'))).toEqual(['log for B']);
    } finally {
      await a.client.close();
      await b.client.close();
    }
  });
});
