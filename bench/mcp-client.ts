/**
 * The MCP serving bench's client side and processes (bench/mcp.ts, bench/mcp-profile.ts): raw POSTs over Streamable
 * HTTP as one 2025-11-25 session or as 2026-07-28 stateless requests (no client library in the measured path), the
 * loops that time them, and starting/stopping `estate serve --http` on a store of the fixture's tools.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { Agent, request } from 'node:http';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { rawPost } from './http-raw.ts';
import { TOOL_COUNT, VALID_ARGS, definition, toolName } from './mcp-fixture.ts';

export const PROTOCOL = '2025-11-25';
export const REPO_ROOT = fileURLToPath(new URL('../', import.meta.url));
const HANDLERS = fileURLToPath(new URL('./mcp-handlers.ts', import.meta.url));

export interface Session {
  post(message: Record<string, unknown>): Promise<{ text: string; body: Record<string, unknown> }>;
}

interface Reply {
  status: number;
  contentType: string;
  sessionId: string | undefined;
  text: string;
}

/**
 * One POST. By default on the bench's raw keep-alive client (bench/http-raw.ts: its own CPU per request is a fraction
 * of node:http's, which on two cores took a third of the machine at 16 in flight); `BENCH_HTTP_CLIENT=node` uses
 * node:http on a keep-alive agent instead, as the bench did before 2026-12-03. Not fetch: its web streams cost the
 * load generator more per request than a server spends answering (the SDK peer did 2,800 calls/s under fetch and
 * 5,000 under node:http on the same machine).
 */
const NODE_CLIENT = process.env.BENCH_HTTP_CLIENT === 'node';
const agent = new Agent({ keepAlive: true, maxSockets: 256 });
const nodePost = (url: string, headers: Record<string, string>, body: string): Promise<Reply> =>
  new Promise((resolve, reject) => {
    const u = new URL(url);
    const req = request(
      { host: u.hostname, port: u.port, path: u.pathname, method: 'POST', agent, headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => {
          const sid = res.headers['mcp-session-id'];
          resolve({ status: res.statusCode ?? 0, contentType: res.headers['content-type'] ?? '', sessionId: typeof sid === 'string' ? sid : undefined, text });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
const post = NODE_CLIENT
  ? nodePost
  : async (url: string, headers: Record<string, string>, body: string): Promise<Reply> => {
      const r = await rawPost(url, headers, body);
      return { status: r.status, contentType: r.headers['content-type'] ?? '', sessionId: r.headers['mcp-session-id'], text: r.text };
    };

/** Which load generator drove the requests (the bench's notes say so). */
export const HTTP_CLIENT = NODE_CLIENT ? 'node:http client (keep-alive agent)' : 'raw keep-alive sockets (bench/http-raw.ts)';

/** A response is JSON, or SSE whose `data:` lines carry the JSON-RPC response; either is accepted. */
const readResponse = (res: Reply, id: unknown): { text: string; body: Record<string, unknown> } => {
  const raw = res.text;
  if (!res.contentType.includes('text/event-stream')) return { text: raw, body: JSON.parse(raw) as Record<string, unknown> };
  for (const line of raw.split('\n')) {
    if (!line.startsWith('data:')) continue;
    const data = line.slice(5).trim();
    if (!data) continue;
    const msg = JSON.parse(data) as Record<string, unknown>;
    if (msg.id === id) return { text: data, body: msg };
  }
  throw new Error(`no response with id ${String(id)} in SSE body: ${raw.slice(0, 300)}`);
};

/** `capabilities`: what the client declares; a client that can be asked (elicitation) gets event streams from Estate. */
export const openSession = async (url: string, capabilities: Record<string, unknown> = {}): Promise<Session> => {
  const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
  const init = await post(url, headers, JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: PROTOCOL, capabilities, clientInfo: { name: 'bench', version: '1.0.0' } } }));
  const sid = init.sessionId;
  const initBody = readResponse(init, 0);
  if (init.status !== 200 || !sid || !initBody.body.result) throw new Error(`initialize failed at ${url}: HTTP ${init.status} ${initBody.text.slice(0, 300)}`);
  const sessionHeaders = { ...headers, 'mcp-session-id': sid, 'mcp-protocol-version': PROTOCOL };
  await post(url, sessionHeaders, JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }));
  return {
    async post(message) {
      return readResponse(await post(url, sessionHeaders, JSON.stringify(message)), message.id);
    },
  };
};

/** Estate's 2026-07-28 path: no session; every request carries its revision in `_meta` and the routing headers. */
export const openStateless = async (url: string): Promise<Session> => {
  const meta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };
  return {
    async post(message) {
      const params: Record<string, unknown> = { ...((message.params as Record<string, unknown> | undefined) ?? {}), _meta: meta };
      const headers: Record<string, string> = {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2026-07-28',
        'mcp-method': String(message.method),
        ...(message.method === 'tools/call' ? { 'mcp-name': String(params.name) } : {}),
      };
      return readResponse(await post(url, headers, JSON.stringify({ ...message, params })), message.id);
    },
  };
};

let nextId = 1;
export const callMessage = (i: number, args: Record<string, unknown> = VALID_ARGS) => ({
  jsonrpc: '2.0',
  id: nextId++,
  method: 'tools/call',
  params: { name: toolName(i % TOOL_COUNT), arguments: args },
});

export const callOnce = async (s: Session, i: number): Promise<string> => {
  const { body, text } = await s.post(callMessage(i));
  const result = body.result as { isError?: boolean } | undefined;
  if (!result || result.isError) throw new Error(`tools/call did not succeed: ${text.slice(0, 300)}`);
  return text;
};

/** A call the schema refuses: an `isError` result with the error lines, nothing run or recorded. */
export const invalidCallOnce = async (s: Session, i: number, args: Record<string, unknown>): Promise<string> => {
  const { body, text } = await s.post(callMessage(i, args));
  const result = body.result as { isError?: boolean } | undefined;
  if (!result?.isError) throw new Error(`tools/call with invalid arguments was not refused: ${text.slice(0, 300)}`);
  return text;
};

/** Every page of tools/list; returns the tools seen and each page's response text. */
export const listAll = async (s: Session): Promise<{ count: number; text: string; pages: string[] }> => {
  let cursor: string | undefined;
  let count = 0;
  const pages: string[] = [];
  do {
    const r = await s.post({ jsonrpc: '2.0', id: nextId++, method: 'tools/list', params: cursor ? { cursor } : {} });
    pages.push(r.text);
    const result = r.body.result as { tools?: unknown[]; nextCursor?: string } | undefined;
    if (!result?.tools) throw new Error(`tools/list failed: ${r.text.slice(0, 300)}`);
    count += result.tools.length;
    cursor = result.nextCursor;
  } while (cursor);
  return { count, text: pages[pages.length - 1] ?? '', pages };
};

export const timeAsync = async (n: number, fn: (i: number) => Promise<unknown>): Promise<number[]> => {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = process.hrtime.bigint();
    await fn(i);
    out.push(Number(process.hrtime.bigint() - t0) / 1000);
  }
  return out;
};

/** `total` calls with `concurrency` in flight; returns calls per second. */
export const throughput = async (s: Session, total: number, concurrency: number): Promise<number> => {
  let next = 0;
  const t0 = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < total) await callOnce(s, next++);
    }),
  );
  return total / (Number(process.hrtime.bigint() - t0) / 1e9);
};

// ---------------------------------------------------------------------------------------------------------------
// Processes.

export const waitForJsonLine = (child: ChildProcess, stream: 'stdout' | 'stderr', match: (v: Record<string, unknown>) => boolean, what: string): Promise<Record<string, unknown>> =>
  new Promise((resolve, reject) => {
    let buf = '';
    const seen: string[] = [];
    const timer = setTimeout(() => reject(new Error(`${what}: not ready in 120 s\n${seen.slice(-20).join('\n')}`)), 120_000);
    child[stream]?.on('data', (c: Buffer) => {
      buf += c.toString();
      let nl: number;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        seen.push(line);
        try {
          const v = JSON.parse(line) as Record<string, unknown>;
          if (match(v)) {
            clearTimeout(timer);
            resolve(v);
          }
        } catch {
          // not JSON: keep it for the error message
        }
      }
    });
    child.once('close', (code) => {
      clearTimeout(timer);
      reject(new Error(`${what} exited (${String(code)}) before it was ready\n${seen.slice(-20).join('\n')}`));
    });
  });

export const stop = (child: ChildProcess): Promise<void> =>
  new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    const kill = setTimeout(() => child.kill('SIGKILL'), 5000);
    child.once('close', () => (clearTimeout(kill), resolve()));
    child.kill('SIGTERM');
  });

/** The fixture's first `count` tools, published through the command handler into `store`. */
export const publishAll = async (store: string, count = TOOL_COUNT): Promise<void> => {
  const { loadConfig } = await import('#config');
  const { openEstate } = await import('#compose/estate');
  const { validateDefinition } = await import('#domain/tool-definition');
  const estate = await openEstate(loadConfig({ store }));
  try {
    for (let i = 0; i < count; i++) await estate.commands.publish(validateDefinition(definition(i), estate.compiler), 'bench');
  } finally {
    await estate.close();
  }
};

export interface StartOptions {
  /** The checkout whose bin/estate.js serves (default: this one); the profile compares two checkouts. */
  root?: string;
  /** Node flags before the script, e.g. `--cpu-prof`. */
  nodeArgs?: readonly string[];
  /** More environment for the server (bench/mcp-ab.ts: a prototype behind a variable on one side only). */
  env?: Readonly<Record<string, string>>;
}

export const startEstate = async (store: string, children: ChildProcess[], o: StartOptions = {}): Promise<{ url: string; child: ChildProcess }> => {
  const root = o.root ?? REPO_ROOT;
  const child = spawn(process.execPath, [...(o.nodeArgs ?? []), join(root, 'bin', 'estate.js'), 'serve', '--http', '--port', '0', '--store', store, '--handlers', HANDLERS], {
    cwd: root,
    env: { ...process.env, ...o.env, ESTATE_LOG_LEVEL: 'info' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  children.push(child);
  const ready = await waitForJsonLine(child, 'stderr', (v) => v.msg === 'estate serve ready', 'estate serve');
  // Past the ready line only warnings matter; drain so the pipe never blocks the server.
  child.stderr?.resume();
  return { url: String(ready.url), child };
};
