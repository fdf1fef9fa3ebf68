/**
 * stdio: newline-delimited JSON, one session per process, lines up to 1 MiB. Thin: it frames, parses and routes;
 * the session and the stateless path decide every answer. Messages are handled concurrently (a long tools/call must
 * not block a `notifications/cancelled` for it); answers go out as they are ready.
 */
import type { Readable } from 'node:stream';
import type { Principal } from '#domain/types';
import { checkEnvelope, failure, isPlainObject, isRequest, parseFrame, PARSE_ERROR, responseBody, type JsonRpcOutbound, type JsonRpcResponse, type RequestId } from './jsonrpc.ts';
import { openListen, type Listen } from './listen.ts';
import type { ServerCore } from './server-core.ts';
import type { BatchLimits } from './batch-limits.ts';
import { Cancellation } from './cancellation.ts';
import { StatefulSession } from './stateful-session.ts';
import { handleStateless, isStatelessMessage } from './stateless.ts';

export const MAX_LINE_BYTES = 1024 * 1024;

export interface StdioOptions {
  core: ServerCore;
  principal: Principal;
  connectionId: string;
  input: Readable;
  /** Writes one protocol frame (the real stdout; everything else printed goes to stderr). */
  write(frame: string): void;
  batchLimits?: BatchLimits;
}

export interface StdioConnection {
  session: StatefulSession;
  /** Resolves when stdin ends and every in-flight message has been answered. */
  closed: Promise<void>;
  close(): void;
}

export const serveStdio = (o: StdioOptions): StdioConnection => {
  // A response whose result carries its JSON bytes (a cached tools/list page: list-cache.ts) is written from them; the
  // result object would parse them again to be serialized.
  const send = (m: JsonRpcOutbound | JsonRpcResponse[]): void => {
    if (Array.isArray(m) || !('result' in m)) return o.write(`${JSON.stringify(m)}\n`);
    const body = responseBody(m);
    o.write(typeof body === 'string' ? `${body}\n` : `${Buffer.concat(body).toString('utf8')}\n`);
  };
  const session = new StatefulSession(o.core, { id: o.connectionId, principal: o.principal, transport: 'stdio', notify: send, sendToClient: send, ...(o.batchLimits ? { batchLimits: o.batchLimits } : {}) });
  // Stateless work on this pipe, by request id: `notifications/cancelled` ends a listen or aborts a call.
  const listens = new Map<RequestId, Listen>();
  const calls = new Map<RequestId, Cancellation>();
  const pending = new Set<Promise<void>>();

  const cancelStateless = (raw: unknown): void => {
    if (!isPlainObject(raw) || raw.method !== 'notifications/cancelled' || !isPlainObject(raw.params)) return;
    const id = raw.params.requestId;
    if (typeof id !== 'string' && typeof id !== 'number') return;
    listens.get(id)?.close();
    listens.delete(id);
    calls.get(id)?.abort();
  };

  const statelessRoute = async (raw: unknown): Promise<void> => {
    const env = checkEnvelope(raw);
    if (!env.ok) return send(env.response);
    const id = isRequest(env.message) ? env.message.id : undefined;
    const ac = new Cancellation();
    if (id !== undefined) calls.set(id, ac);
    try {
      const out = await handleStateless(o.core, env.message, { principal: o.principal, cancel: ac, notify: send });
      if (out.kind === 'response') send(out.response);
      else if (out.kind === 'listen') listens.set(out.request.id, openListen(o.core, o.principal, out.request, out.toolsListChanged, send));
    } finally {
      if (id !== undefined && calls.get(id) === ac) calls.delete(id);
    }
  };

  const route = async (raw: unknown, bytes: number): Promise<void> => {
    cancelStateless(raw);
    if (!Array.isArray(raw) && isStatelessMessage(raw)) return statelessRoute(raw);
    const answer = await session.handleFrame(raw, bytes);
    if (answer !== null) send(answer);
  };

  const onLine = (line: string): void => {
    if (line.trim().length === 0) return;
    const parsed = parseFrame(line);
    if (!parsed.ok) return send(parsed.response);
    const p = route(parsed.value, Buffer.byteLength(line)).catch((e: unknown) => o.core.log.error({ err: e }, 'stdio message failed'));
    pending.add(p);
    void p.finally(() => pending.delete(p));
  };

  let buf = '';
  let discarding = false;
  let resolveClosed: () => void = () => undefined;
  const closed = new Promise<void>((r) => (resolveClosed = r));
  o.input.setEncoding('utf8');
  o.input.on('data', (chunk: string) => {
    let start = 0;
    for (let nl = chunk.indexOf('\n'); nl >= 0; nl = chunk.indexOf('\n', start)) {
      const piece = chunk.slice(start, nl);
      start = nl + 1;
      if (discarding) {
        discarding = false;
        buf = '';
        continue;
      }
      const line = buf + piece;
      buf = '';
      if (Buffer.byteLength(line) > MAX_LINE_BYTES) send(failure(null, PARSE_ERROR, 'Parse error: line exceeds 1 MiB'));
      else onLine(line.endsWith('\r') ? line.slice(0, -1) : line);
    }
    if (discarding) return;
    buf += chunk.slice(start);
    if (buf.length > MAX_LINE_BYTES) {
      // Refuse as soon as the bound is crossed rather than buffering an unbounded line.
      send(failure(null, PARSE_ERROR, 'Parse error: line exceeds 1 MiB'));
      buf = '';
      discarding = true;
    }
  });
  const finish = () => {
    session.clientGone();
    void Promise.allSettled([...pending]).then(() => {
      for (const l of listens.values()) l.close();
      session.close();
      resolveClosed();
    });
  };
  o.input.on('end', finish);
  o.input.on('close', finish);

  return {
    session,
    closed,
    close: () => {
      o.input.pause();
      finish();
    },
  };
};
