/**
 * Spawn helpers for end-to-end tests: the real `node bin/estate.js` process, a temp SQLite store, raw JSON lines over
 * stdio, and an HTTP server on an ephemeral port. Shared by the raw, stdio, SDK-client, conformance and fuzz suites.
 *
 * The server announces itself with one pino JSON line on stderr: `{"msg":"estate serve ready", "transport", "url"?,
 * "connectionId"?}`. Helpers wait for it instead of sleeping.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const ESTATE_BIN = join(REPO_ROOT, 'bin', 'estate.js');
export const READY_MSG = 'estate serve ready';

export interface TempStore {
  dir: string;
  /** `sqlite:<dir>/e.db`, for `--store`. */
  store: string;
  /** Write a file (e.g. a tool definition) into the temp dir; returns its path. */
  file(name: string, content: string | object): string;
  cleanup(): void;
}

export const makeTempStore = (prefix = 'estate-e2e-'): TempStore => {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return {
    dir,
    store: `sqlite:${join(dir, 'e.db')}`,
    file(name, content) {
      const path = join(dir, name);
      writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content, null, 2));
      return path;
    },
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
};

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Run `estate <args>` to completion. */
export const runCli = (args: string[], options: { env?: NodeJS.ProcessEnv; cwd?: string; timeoutMs?: number } = {}): Promise<CliResult> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [ESTATE_BIN, ...args], {
      cwd: options.cwd ?? REPO_ROOT,
      env: { ...process.env, ESTATE_LOG_LEVEL: 'warn', ...options.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`estate ${args.join(' ')} did not finish in time\n${stderr}`));
    }, options.timeoutMs ?? 30_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });

/** Parse pino JSON lines; non-JSON lines (a handler's stray print) are kept as `{ raw }`. */
const parseLogLine = (line: string): Record<string, unknown> => {
  try {
    const v = JSON.parse(line) as unknown;
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : { raw: line };
  } catch {
    return { raw: line };
  }
};

interface Waiter<T> {
  match: (v: T) => boolean;
  resolve: (v: T) => void;
}

/** A line-oriented reader with "wait for the next line matching X" and a record of everything seen. */
export class LineQueue<T> {
  readonly seen: T[] = [];
  private readonly unread: T[] = [];
  private readonly waiters: Waiter<T>[] = [];

  push(v: T): void {
    this.seen.push(v);
    const i = this.waiters.findIndex((w) => w.match(v));
    if (i >= 0) {
      const [w] = this.waiters.splice(i, 1);
      w?.resolve(v);
    } else this.unread.push(v);
  }

  next(match: (v: T) => boolean = () => true, timeoutMs = 10_000, what = 'line'): Promise<T> {
    const i = this.unread.findIndex(match);
    if (i >= 0) return Promise.resolve(this.unread.splice(i, 1)[0] as T);
    return new Promise((resolve, reject) => {
      const waiter: Waiter<T> = {
        match,
        resolve: (v) => {
          clearTimeout(timer);
          resolve(v);
        },
      };
      const timer = setTimeout(() => {
        const k = this.waiters.indexOf(waiter);
        if (k >= 0) this.waiters.splice(k, 1);
        reject(new Error(`timed out waiting for a ${what}`));
      }, timeoutMs);
      this.waiters.push(waiter);
    });
  }

  /** Unread items (consumes them). */
  drain(): T[] {
    return this.unread.splice(0);
  }
}

const splitLines = (stream: NodeJS.ReadableStream, onLine: (line: string) => void): void => {
  let buf = '';
  stream.on('data', (chunk: Buffer | string) => {
    buf += chunk.toString();
    let nl: number;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      if (line.length > 0) onLine(line);
    }
  });
};

export interface ServerProcess {
  child: ChildProcess;
  /** The ready log line (has `url` for HTTP, `connectionId` for stdio). */
  ready: Record<string, unknown>;
  /** stderr, parsed per line. */
  logs: LineQueue<Record<string, unknown>>;
  /** Stop the process (SIGTERM, then SIGKILL) and wait for it. */
  stop(): Promise<number | null>;
}

export interface StdioServer extends ServerProcess {
  /** Every stdout line, raw. Anything that is not JSON here is a protocol-corruption bug. */
  lines: LineQueue<string>;
  /** Write one raw line (a string as is, anything else JSON-encoded). */
  send(message: unknown): void;
  /** Next stdout message matching a predicate, parsed. */
  next(match?: (m: Record<string, unknown>) => boolean, timeoutMs?: number): Promise<Record<string, unknown>>;
  /** Send a request and wait for the response with its id. */
  request(method: string, params?: unknown, id?: number | string): Promise<Record<string, unknown>>;
  /** initialize + notifications/initialized; returns the initialize response. */
  initialize(protocolVersion?: string, clientInfo?: { name: string; version: string }): Promise<Record<string, unknown>>;
}

export interface ServeOptions {
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  readyTimeoutMs?: number;
  /** Run as this uid/gid (a root test that needs file permissions to hold, e.g. a read-only store). */
  uid?: number;
}

/** ESTATE_PROFILE_SERVE=<dir>: every server a test starts writes a V8 CPU profile there (NODE_OPTIONS refuses --cpu-prof). */
const PROFILE_ARGS = process.env.ESTATE_PROFILE_SERVE ? ['--cpu-prof', `--cpu-prof-dir=${process.env.ESTATE_PROFILE_SERVE}`] : [];

const spawnServe = (args: string[], options: ServeOptions) =>
  spawn(process.execPath, [...PROFILE_ARGS, ESTATE_BIN, 'serve', ...args], {
    cwd: options.cwd ?? REPO_ROOT,
    env: { ...process.env, ESTATE_LOG_LEVEL: 'info', ...options.env },
    stdio: ['pipe', 'pipe', 'pipe'],
    ...(options.uid !== undefined ? { uid: options.uid, gid: options.uid } : {}),
  });

const stopper = (child: ChildProcess) => (): Promise<number | null> =>
  new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve(child.exitCode);
    const kill = setTimeout(() => child.kill('SIGKILL'), 5000);
    child.once('close', (code) => {
      clearTimeout(kill);
      resolve(code);
    });
    child.stdin?.end();
    child.kill('SIGTERM');
  });

const waitReady = async (child: ChildProcess, logs: LineQueue<Record<string, unknown>>, timeoutMs: number): Promise<Record<string, unknown>> => {
  const exited = new Promise<never>((_, reject) =>
    child.once('close', (code) =>
      reject(new Error(`estate serve exited (${String(code)}) before ready:\n${logs.seen.map((l) => JSON.stringify(l)).join('\n')}`)),
    ),
  );
  exited.catch(() => undefined);
  return Promise.race([logs.next((l) => l.msg === READY_MSG, timeoutMs, 'ready log line'), exited]);
};

/** `estate serve --stdio <args>`; resolves once the ready line is logged. */
export const startStdioServer = async (args: string[], options: ServeOptions = {}): Promise<StdioServer> => {
  const child = spawnServe(['--stdio', ...args], options);
  const logs = new LineQueue<Record<string, unknown>>();
  const lines = new LineQueue<string>();
  splitLines(child.stderr as NodeJS.ReadableStream, (l) => logs.push(parseLogLine(l)));
  splitLines(child.stdout as NodeJS.ReadableStream, (l) => lines.push(l));
  const ready = await waitReady(child, logs, options.readyTimeoutMs ?? 30_000);
  // Far above the ids tests choose themselves (the fuzz test numbers its 10,000 messages from 0), so they never collide.
  let nextId = 1_000_000;
  const send = (message: unknown): void => {
    child.stdin?.write(`${typeof message === 'string' ? message : JSON.stringify(message)}\n`);
  };
  const next = async (match: (m: Record<string, unknown>) => boolean = () => true, timeoutMs = 10_000): Promise<Record<string, unknown>> => {
    const line = await lines.next(
      (l) => {
        try {
          return match(JSON.parse(l) as Record<string, unknown>);
        } catch {
          return false;
        }
      },
      timeoutMs,
      'stdout message',
    );
    return JSON.parse(line) as Record<string, unknown>;
  };
  const request = (method: string, params?: unknown, id: number | string = nextId++) => {
    send({ jsonrpc: '2.0', id, method, ...(params !== undefined ? { params } : {}) });
    return next((m) => m.id === id);
  };
  return {
    child,
    ready,
    logs,
    lines,
    send,
    next,
    request,
    async initialize(protocolVersion = '2025-11-25', clientInfo = { name: 'e2e', version: '1.0.0' }) {
      const res = await request('initialize', { protocolVersion, capabilities: {}, clientInfo });
      send({ jsonrpc: '2.0', method: 'notifications/initialized' });
      return res;
    },
    stop: stopper(child),
  };
};

export interface HttpServer extends ServerProcess {
  /** `http://127.0.0.1:<port>/mcp` */
  url: string;
}

/** `estate serve --http --port 0 <args>`; resolves with the bound URL from the ready line. */
export const startHttpServer = async (args: string[], options: ServeOptions = {}): Promise<HttpServer> => {
  const child = spawnServe(['--http', '--port', '0', ...args], options);
  const logs = new LineQueue<Record<string, unknown>>();
  splitLines(child.stderr as NodeJS.ReadableStream, (l) => logs.push(parseLogLine(l)));
  child.stdout?.resume();
  const ready = await waitReady(child, logs, options.readyTimeoutMs ?? 30_000);
  return { child, ready, logs, url: String(ready.url), stop: stopper(child) };
};

/** A minimal valid tool definition for tests; override fields as needed. */
export const toolDefinition = (overrides: Record<string, unknown> = {}): Record<string, unknown> => ({
  name: 'test.echo',
  version: '1.0.0',
  title: 'Echo',
  description: 'Echoes its input.',
  inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'], additionalProperties: false },
  access: { requiredScopes: [], tenants: [], classification: 'public' },
  sideEffect: 'none',
  handler: 'test.echo',
  ...overrides,
});

export interface SseEvent {
  id?: string;
  event?: string;
  data: string;
}

export interface SseStream {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  events: LineQueue<SseEvent>;
  /** Comment lines (`: keepalive`), counted. */
  comments: number;
  close(): void;
}

/** Open an SSE response (GET stream or a POST answered as an event stream) and parse its events as they arrive. */
export const openSse = async (url: string, options: { method?: 'GET' | 'POST'; headers?: Record<string, string>; body?: string }): Promise<SseStream> => {
  const { request } = await import('node:http');
  return new Promise((resolve, reject) => {
    const req = request(url, { method: options.method ?? 'GET', headers: { accept: 'text/event-stream, application/json', ...options.headers } }, (res) => {
      const stream: SseStream = { status: res.statusCode ?? 0, headers: res.headers, events: new LineQueue<SseEvent>(), comments: 0, close: () => req.destroy() };
      let buf = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        buf += chunk;
        let sep: number;
        while ((sep = buf.indexOf('\n\n')) >= 0) {
          const block = buf.slice(0, sep);
          buf = buf.slice(sep + 2);
          const ev: SseEvent = { data: '' };
          let any = false;
          for (const line of block.split('\n')) {
            if (line.startsWith(':')) stream.comments++;
            else if (line.startsWith('id:')) ev.id = line.slice(3).trim();
            else if (line.startsWith('event:')) ev.event = line.slice(6).trim();
            else if (line.startsWith('data:')) {
              ev.data += (any ? '\n' : '') + line.slice(5).trimStart();
              any = true;
            }
          }
          if (any && ev.data.length > 0) stream.events.push(ev);
        }
      });
      resolve(stream);
    });
    req.on('error', (e: NodeJS.ErrnoException) => {
      if (e.code !== 'ECONNRESET') reject(e);
    });
    req.end(options.body);
  });
};

/**
 * A POST answer as JSON-RPC, whether the server sent it as JSON or as an event stream (2025 sessions answer with
 * SSE so that progress and log notifications can precede the result): the response, and what came before it.
 */
export const parseMcpBody = (contentType: string | undefined, body: string): { response: Record<string, unknown> | null; notifications: Record<string, unknown>[] } => {
  if (!(contentType ?? '').includes('text/event-stream')) return { response: body ? (JSON.parse(body) as Record<string, unknown>) : null, notifications: [] };
  const messages = body
    .split('\n')
    .filter((l) => l.startsWith('data:'))
    .map((l) => l.slice(5).trim())
    .filter((d) => d.length > 0)
    .map((d) => JSON.parse(d) as Record<string, unknown>);
  return { response: messages.find((m) => 'id' in m && ('result' in m || 'error' in m)) ?? null, notifications: messages.filter((m) => !('id' in m)) };
};

/** The headers of a Streamable HTTP POST: a JSON body, either kind of answer accepted. */
export const MCP_POST_HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

/** One JSON-RPC POST to `url` (in session `sid` if given): the session id the answer carries, and the response. */
export const rpc = async (url: string, body: unknown, sid?: string): Promise<{ sid: string | undefined; message: Record<string, unknown> | null }> => {
  const r = await fetch(url, { method: 'POST', headers: { ...MCP_POST_HEADERS, ...(sid ? { 'mcp-session-id': sid } : {}) }, body: JSON.stringify(body) });
  return { sid: r.headers.get('mcp-session-id') ?? undefined, message: parseMcpBody(r.headers.get('content-type') ?? undefined, await r.text()).response };
};

/**
 * Poll `probe` until it gives a value (not undefined), or fail after `timeoutMs` naming `what`: for what a serving
 * process does on its own (a sync, a removal heard of), with a deadline and no fixed sleep.
 */
export const eventually = async <T>(what: string, probe: () => Promise<T | undefined> | T | undefined, timeoutMs = 20_000): Promise<T> => {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
};
