/**
 * Checks done on an HTTP request before any MCP code (ours or the SDK's) sees it: Host and Origin against allow
 * lists (DNS rebinding), the JSON content type, and the 1 MiB body bound.
 */
import { ServerResponse, type IncomingMessage } from 'node:http';

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
  const head = { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(text)), ...headers, connection: 'close' };
  if (req.complete) {
    res.writeHead(status, head);
    res.end(text);
    return;
  }
  // Read from before the head is written: the listener's bound on refused, unread bodies (refusalBoundedResponse) is for
  // bodies nobody reads; this drain has its own, larger bound.
  const drained = drainBody(req, o.drainLimit ?? DRAIN_LIMIT_BYTES, o.timeoutMs ?? DRAIN_TIMEOUT_MS);
  res.writeHead(status, head);
  res.write(text);
  void drained.then((whole) => {
    if (whole) res.end();
  });
};

/**
 * How long a connection cut for its body stays open, read no more, before it is destroyed: time for the client to read
 * the answer already sent. Destroyed at once, the socket's unread input made the kernel reset the connection, and a
 * client that had not yet read the answer (still writing its body, or short of CPU) lost it to ECONNRESET.
 */
export const CUT_GRACE_MS = 2_000;

/**
 * Reads and discards the rest of `req`'s body: true once it has ended; false when it passed `limit` bytes or took
 * longer than `timeoutMs`, or the connection went first. Cut for either bound, the connection reads nothing more, is
 * ended after the answer written so far, and is destroyed `graceMs` (CUT_GRACE_MS) later.
 */
const drainBody = (req: IncomingMessage, limit: number, timeoutMs: number, graceMs = CUT_GRACE_MS): Promise<boolean> =>
  new Promise((resolve) => {
    let drained = 0;
    const finish = (whole: boolean) => {
      clearTimeout(timer);
      req.off('data', onData).off('end', onEnd).off('close', onClose);
      resolve(whole);
    };
    const cut = () => {
      finish(false);
      // Paused, the request's buffer fills and stops the socket's reads: the client's body waits in the kernel's
      // buffers, costing no work here, while the answer and then the end of the connection reach the client.
      req.pause();
      const socket = req.socket;
      socket.end();
      setTimeout(() => socket.destroy(), graceMs).unref();
    };
    const onData = (c: Buffer) => {
      drained += c.length;
      if (drained > limit) cut();
    };
    const onEnd = () => finish(true);
    const onClose = () => finish(req.complete);
    const timer = setTimeout(cut, timeoutMs);
    timer.unref();
    req.on('data', onData).once('end', onEnd).once('close', onClose);
    req.resume();
  });

/** A refusal sent before its request's body was read: how much of the body is read and thrown away, at most ... */
export const REFUSED_DRAIN_BYTES = MAX_BODY_BYTES;
/** ... and for how long, before the connection is cut hard. */
export const REFUSED_DRAIN_MS = 10_000;

/** The request announces a body (a length above 0, or chunks). */
const announcesBody = (req: IncomingMessage): boolean =>
  req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;

/** Something reads the body, or has read it whole (readBody, refuseBody). */
const bodyRead = (req: IncomingMessage): boolean => req.readableEnded || req.listenerCount('data') > 0;

export interface RefusedDrain {
  drainLimit?: number;
  timeoutMs?: number;
  /** How long a connection cut for either bound stays open, reading nothing, before it goes (CUT_GRACE_MS). */
  cutGraceMs?: number;
}

/**
 * The one place every answer sent before its request's body was read goes through: the listener's responses are of
 * this class (`createServer({ ServerResponse })`), so every head written, routes' and the SDK's alike (and Node's own
 * implicit one, which calls `writeHead` too), passes here. A response whose head is written while the request's body
 * is unread (a 401 for a missing token, a 403 for a Host, a 404, a 405, a 415, or a 200 from a route that takes no
 * body: /healthz, /metrics, a console page) carries
 * `Connection: close`; the body still coming is read and thrown away up to `drainLimit` bytes and `timeoutMs`, the
 * answer ended when it has ended (so that closing does not reset the connection under an answer the client has not
 * read yet), and past either bound the connection is cut. Node otherwise reads a refused request's body to its end to
 * keep the connection: an endless one for as long as the request may take, an unauthenticated client making the server
 * swallow hundreds of MB a second on each connection. A request without a body, or whose body its route reads, is
 * left as it is. A class rather than wrappers set on each response: a tools/call's response keeps the shape every
 * other has, and nothing is made per request but what a refusal needs.
 */
export const refusalBoundedResponse = (o: RefusedDrain = {}): typeof ServerResponse => {
  const drainLimit = o.drainLimit ?? REFUSED_DRAIN_BYTES;
  const timeoutMs = o.timeoutMs ?? REFUSED_DRAIN_MS;
  const cutGraceMs = o.cutGraceMs ?? CUT_GRACE_MS;
  class RefusalBoundedResponse extends ServerResponse {
    /** Set once the head has been looked at; a promise while a refused body is being drained. */
    private refusal: boolean | Promise<boolean> = false;

    private decide(): void {
      if (this.refusal !== false) return;
      this.refusal = true;
      const req = this.req;
      // Whatever the status: a 200 from a route that reads no body (/healthz, a console page) left Node reading an
      // endless one to its end to keep the connection, up to the request timeout, as a refusal's did.
      if (!announcesBody(req) || bodyRead(req)) return;
      this.setHeader('connection', 'close');
      if (!req.complete) this.refusal = drainBody(req, drainLimit, timeoutMs, cutGraceMs);
    }
  }
  const proto = RefusalBoundedResponse.prototype as unknown as ServerResponse & { decide(): void; refusal: boolean | Promise<boolean> };
  const { writeHead, end } = ServerResponse.prototype;
  proto.writeHead = function (this: typeof proto, ...args: unknown[]) {
    this.decide();
    return (writeHead as (...a: unknown[]) => ServerResponse).apply(this, args);
  } as typeof proto.writeHead;
  proto.end = function (this: typeof proto, ...args: unknown[]) {
    if (!this.headersSent) this.decide();
    const drained = this.refusal;
    if (typeof drained === 'boolean') return (end as (...a: unknown[]) => ServerResponse).apply(this, args);
    // The answer goes out now; its end (and with it the connection's) waits for the body's.
    const callback = args.find((a) => typeof a === 'function') as (() => void) | undefined;
    const chunk = typeof args[0] === 'function' ? undefined : (args[0] as string | Buffer | undefined | null);
    const encoding = typeof args[1] === 'string' ? (args[1] as BufferEncoding) : 'utf8';
    if (chunk !== undefined && chunk !== null) {
      if (!this.headersSent && !this.hasHeader('content-length')) this.setHeader('content-length', String(Buffer.byteLength(chunk, encoding)));
      this.write(chunk, encoding);
    }
    void drained.then((whole) => {
      if (whole) (end as (cb?: () => void) => ServerResponse).call(this, callback);
    });
    return this;
  } as typeof proto.end;
  return RefusalBoundedResponse as unknown as typeof ServerResponse;
};
