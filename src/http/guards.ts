/**
 * Checks done on an HTTP request before any MCP code (ours or the SDK's) sees it: Host and Origin against allow
 * lists (DNS rebinding), the JSON content type, and the 1 MiB body bound.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

export const MAX_BODY_BYTES = 1024 * 1024;
export const LOOPBACK_NAMES = ['localhost', '127.0.0.1', '[::1]'];

/** `host:port` or `[v6]:port` → the host name as listed (`[::1]` keeps its brackets). */
export const hostnameOf = (hostHeader: string): string => {
  const h = hostHeader.trim().toLowerCase();
  if (h.startsWith('[')) return h.slice(0, h.indexOf(']') + 1);
  const colon = h.lastIndexOf(':');
  return colon >= 0 ? h.slice(0, colon) : h;
};

export const hostAllowed = (hostHeader: string | undefined, allowed: readonly string[]): boolean =>
  hostHeader !== undefined && allowed.includes(hostnameOf(hostHeader));

/** A request without Origin (not a browser) passes; a present one must parse and be listed. */
export const originAllowed = (origin: string | undefined, allowed: readonly string[]): boolean => {
  if (origin === undefined) return true;
  try {
    const u = new URL(origin);
    return allowed.includes(u.hostname.toLowerCase()) || allowed.includes(origin.toLowerCase());
  } catch {
    return false;
  }
};

export const isJsonContentType = (ct: string | undefined): boolean => {
  if (!ct) return false;
  const type = ct.split(';')[0]?.trim().toLowerCase();
  return type === 'application/json';
};

export type BodyRead = { ok: true; text: string } | { ok: false; tooLarge: true } | { ok: false; busy: string };

/**
 * What the bodies read on one connection may hold: the listener's bound on the bytes of request bodies being read at
 * once, in total and from the connection's address (src/http/connection-limits.ts, docs/security.md). Each body is
 * held whole until it ends, so a client that sends most of a 1 MiB body on many connections and never the rest would
 * otherwise hold gigabytes.
 */
export interface BodyAccount {
  /** Takes `bytes`; false, taking nothing, when that would pass either bound. */
  take(bytes: number): boolean;
  give(bytes: number): void;
  /** The refusal's message, naming the bound. */
  readonly refusal: string;
}

const accounts = new WeakMap<object, BodyAccount>();

/** The listener charges each connection it admits to its address's account; readBody takes from it. */
export const chargeBodiesTo = (socket: object, account: BodyAccount): void => {
  accounts.set(socket, account);
};

/**
 * The whole body, or `tooLarge` as soon as it is known to exceed `limit` (a declared Content-Length, or the bytes read
 * so far): the caller then answers with `refuseTooLarge`, which drains the rest. On a connection the listener charged
 * to an account, `busy` when taking the next chunk from it would pass a bound: the caller answers with `refuseBusy`.
 */
export const readBody = (req: IncomingMessage, limit = MAX_BODY_BYTES): Promise<BodyRead> =>
  new Promise((resolve, reject) => {
    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && declared > limit) return resolve({ ok: false, tooLarge: true });
    const account = accounts.get(req.socket);
    const chunks: Buffer[] = [];
    let size = 0;
    let taken = 0;
    const giveBack = () => {
      if (taken > 0) account?.give(taken);
      taken = 0;
    };
    const stop = (read: BodyRead) => {
      chunks.length = 0;
      giveBack();
      req.off('data', onData).off('end', onEnd).off('error', onError).pause();
      resolve(read);
    };
    const onData = (c: Buffer) => {
      size += c.length;
      if (size > limit) return stop({ ok: false, tooLarge: true });
      if (account) {
        if (!account.take(c.length)) return stop({ ok: false, busy: account.refusal });
        taken += c.length;
      }
      chunks.push(c);
    };
    const onEnd = () => {
      giveBack();
      resolve({ ok: true, text: Buffer.concat(chunks).toString('utf8') });
    };
    // Also how a client that goes away mid-body ends the read (node destroys the request with 'aborted').
    const onError = (e: Error) => {
      giveBack();
      reject(e);
    };
    req.on('data', onData).on('end', onEnd).on('error', onError);
  });

/** After a 413, how much more of the body is read and thrown away before the connection is cut hard. */
export const DRAIN_LIMIT_BYTES = 16 * MAX_BODY_BYTES;
/** ... and for how long. */
export const DRAIN_TIMEOUT_MS = 30_000;

/**
 * Answers 413 with `body` at once, then reads and discards the rest of the request before closing the connection.
 * Closing while the client is still sending makes the kernel reset the connection, and a reset can destroy the 413
 * before the client has read it (`EPIPE`/`fetch failed` instead of an answer). The response carries its whole body
 * (Content-Length) and `Connection: close` straight away, but is ended only once the request has been read to its end;
 * past `drainLimit` bytes or `timeoutMs` the connection is cut hard.
 */
export const refuseTooLarge = (
  req: IncomingMessage,
  res: ServerResponse,
  body: unknown,
  headers: Record<string, string> = {},
  o: { drainLimit?: number; timeoutMs?: number } = {},
): void => refuseBody(req, res, 413, body, headers, o);

/** A body refused because the listener's body budget is spent: 503 with Retry-After, the rest drained as for a 413. */
export const refuseBusy = (req: IncomingMessage, res: ServerResponse, body: unknown, headers: Record<string, string> = {}): void =>
  refuseBody(req, res, 503, body, { 'retry-after': '1', ...headers });

/** `refuseTooLarge` with another status. */
const refuseBody = (
  req: IncomingMessage,
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
  o: { drainLimit?: number; timeoutMs?: number } = {},
): void => {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(text)), ...headers, connection: 'close' });
  if (req.complete) {
    res.end(text);
    return;
  }
  res.write(text);
  const limit = o.drainLimit ?? DRAIN_LIMIT_BYTES;
  let drained = 0;
  const finish = () => {
    clearTimeout(timer);
    req.off('data', onData);
  };
  const cut = () => {
    finish();
    req.socket.destroy();
  };
  const onData = (c: Buffer) => {
    drained += c.length;
    if (drained > limit) cut();
  };
  const timer = setTimeout(cut, o.timeoutMs ?? DRAIN_TIMEOUT_MS);
  timer.unref();
  req.on('data', onData);
  req.once('end', () => {
    finish();
    res.end();
  });
  req.once('close', finish);
  req.resume();
};
