/**
 * Checks done on an HTTP request before any MCP code (ours or the SDK's) sees it: Host and Origin against allow
 * lists (DNS rebinding), the JSON content type, and the 1 MiB body bound.
 */
import { IncomingMessage, type ServerResponse } from 'node:http';

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
 * The bytes of request bodies being read at once, in total and from one remote address (docs/security.md): each
 * body is held whole until it ends, so a client that sends most of a 1 MiB body on many connections and never the
 * rest would otherwise hold gigabytes. A body that would pass either bound is refused with a 503 (`busy`).
 */
export interface BodyBudget {
  /** Takes `bytes` for a body from `peer`; false, taking nothing, when that would pass the total or the peer's share. */
  take(peer: string, bytes: number): boolean;
  give(peer: string, bytes: number): void;
  /** What bodies hold now, in bytes. */
  held(): number;
  /** Bodies refused since start (a `take` that returned false). */
  refused(): number;
  /** The refusal's message, naming the bound. */
  readonly refusal: string;
}

/** `onRefused`: told of each refusal, with the address (the listener logs it, throttled). */
export const createBodyBudget = (o: { max: number; perPeer: number; onRefused?: (peer: string) => void }): BodyBudget => {
  let held = 0;
  let refused = 0;
  const byPeer = new Map<string, number>();
  return {
    take(peer, bytes) {
      const mine = byPeer.get(peer) ?? 0;
      if (held + bytes > o.max || mine + bytes > o.perPeer) {
        refused++;
        o.onRefused?.(peer);
        return false;
      }
      held += bytes;
      byPeer.set(peer, mine + bytes);
      return true;
    },
    give(peer, bytes) {
      held -= bytes;
      const left = (byPeer.get(peer) ?? bytes) - bytes;
      if (left <= 0) byPeer.delete(peer);
      else byPeer.set(peer, left);
    },
    held: () => held,
    refused: () => refused,
    refusal:
      `Service Unavailable: request bodies being read hold their maximum (${o.max} bytes in all, ${o.perPeer} from one address; ` +
      'ESTATE_MAX_BODY_BUFFER_BYTES); send the body at once or try again later',
  };
};

/**
 * The requests of a listener that bounds its bodies (src/compose/http-listener.ts creates its requests as these):
 * readBody takes from the budget they carry, whichever route reads the body.
 */
export const budgetedRequests = (budget: BodyBudget): typeof IncomingMessage =>
  class BudgetedRequest extends IncomingMessage {
    readonly bodyBudget = budget;
  };

const budgetOf = (req: IncomingMessage): BodyBudget | undefined => (req as { bodyBudget?: BodyBudget }).bodyBudget;

/**
 * The whole body, or `tooLarge` as soon as it is known to exceed `limit` (a declared Content-Length, or the bytes read
 * so far): the caller then answers with `refuseTooLarge`, which drains the rest. On a listener with a body budget,
 * `busy` when taking the next chunk would pass it: the caller answers 503 with `refuseBody`.
 */
export const readBody = (req: IncomingMessage, limit = MAX_BODY_BYTES): Promise<BodyRead> =>
  new Promise((resolve, reject) => {
    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && declared > limit) return resolve({ ok: false, tooLarge: true });
    const budget = budgetOf(req);
    const peer = req.socket.remoteAddress ?? '';
    const chunks: Buffer[] = [];
    let size = 0;
    let taken = 0;
    const giveBack = () => {
      budget?.give(peer, taken);
      taken = 0;
    };
    const stop = (read: BodyRead) => {
      chunks.length = 0;
      giveBack();
      req.off('data', onData).off('end', onEnd).off('error', onError).off('close', onClose).pause();
      resolve(read);
    };
    const onData = (c: Buffer) => {
      size += c.length;
      if (size > limit) return stop({ ok: false, tooLarge: true });
      if (budget) {
        if (!budget.take(peer, c.length)) return stop({ ok: false, busy: budget.refusal });
        taken += c.length;
      }
      chunks.push(c);
    };
    const onEnd = () => {
      giveBack();
      req.off('close', onClose);
      resolve({ ok: true, text: Buffer.concat(chunks).toString('utf8') });
    };
    const onError = (e: Error) => {
      giveBack();
      reject(e);
    };
    // A client that goes away mid-body: what it held is given back (the promise stays pending: nobody is left to answer).
    const onClose = () => {
      if (!req.complete) giveBack();
    };
    req.on('data', onData).on('end', onEnd).on('error', onError).on('close', onClose);
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
export const refuseBody = (
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
