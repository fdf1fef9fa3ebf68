/**
 * The SDK's Streamable HTTP transport (2025 sessions; 2026-07-28 event streams), loaded on first use: ~110 ms of
 * modules that a server's start need not wait for. `estate serve --http` loads it right after its ready line; a request
 * that needs it before then waits for the load.
 *
 * Estate uses the SDK's web-standard transport (`WebStandardStreamableHTTPServerTransport`: a web Request in, a web
 * Response out) and bridges it to node:http itself (`serveOverNode`), not through `@modelcontextprotocol/node`, whose
 * bridge (@hono/node-server) reads a streamed body ahead before writing the head: when the second piece is not there at
 * once (an event stream's priming event is, the answer of a call that commits a record is not), it waits a timer turn
 * (≥ 1 ms) and tries again: 1.6–2.2 ms instead of 0.4–1.0 ms for a call over loopback (docs/benchmarks-history.md, "the
 * event-stream answer"). Here the head and each piece go out as they come. What goes through it: a session's
 * initialize, notifications, GET stream and DELETE, and the 2026-07-28 event streams; a session's calls are answered
 * past it (session-json.ts, session-stream.ts).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ReadableStreamDefaultReader, ReadableStreamReadResult } from 'node:stream/web';
import { sendJson } from '#http/send-json';
import { dropWhenNotTaken, STALL_MS, type UntakenOwners } from '#http/unsent';
import { failure, INTERNAL_ERROR } from './jsonrpc.ts';

type SdkServer = typeof import('@modelcontextprotocol/server');
export type SdkTransport = InstanceType<SdkServer['WebStandardStreamableHTTPServerTransport']>;
export type SdkTransportOptions = NonNullable<ConstructorParameters<SdkServer['WebStandardStreamableHTTPServerTransport']>[0]>;

let loaded: SdkServer | undefined;
let loading: Promise<SdkServer> | undefined;

export const loadSdkTransport = (): Promise<SdkServer> => {
  if (loaded) return Promise.resolve(loaded);
  loading ??= import('@modelcontextprotocol/server').then(
    (m) => (loaded = m),
    (e: unknown) => {
      loading = undefined;
      throw e;
    },
  );
  return loading;
};

/** A new SDK transport; only after `loadSdkTransport()` has resolved. */
export const createSdkTransport = (options: SdkTransportOptions): SdkTransport => {
  if (!loaded) throw new Error('the SDK transport is used before it was loaded (await loadSdkTransport() first)');
  return new loaded.WebStandardStreamableHTTPServerTransport(options);
};

/**
 * What the transport reads of a request: its method and `headers.get` (SDK 2.4.0, pinned; its tests here would fail
 * on a version that reads more). Not a web Request: building one (URL, Headers, an AbortSignal) cost more than the
 * rest of the bridge. The body is never read: POSTs come with Estate's already-checked message as `parsedBody`.
 */
const requestOf = (req: IncomingMessage): Request => {
  const h = req.headers;
  const get = (name: string): string | null => {
    const key = name.toLowerCase();
    const v = Object.hasOwn(h, key) ? h[key] : undefined;
    return v === undefined ? null : Array.isArray(v) ? v.join(', ') : v;
  };
  return { method: req.method ?? 'GET', headers: { get, has: (name: string) => get(name) !== null } } as unknown as Request;
};

const internalError = (res: ServerResponse): void => {
  if (res.headersSent) res.destroy();
  else sendJson(res, 500, failure(null, INTERNAL_ERROR, 'Internal error'));
};

/**
 * Hands one node:http request to the transport and writes its answer; resolves once the answer has ended (an event
 * stream: when the transport closes it or the client goes away, which cancels it). `parsedBody`: the POST's message, as
 * Estate already read and checked it (the transport then does not read the body).
 */
export interface ServeOverNodeOptions {
  /**
   * How long an event stream may wait for its client to read (drain) before it is dropped; STALL_MS by default. While
   * it waits, the transport holds what is sent to that stream (its web stream's queue, unbounded).
   */
  stallMs?: number;
  /** Counts the bytes of the answer written to the response, as they are (what the transport holds is what is not). */
  written?: { bytes: number };
  /** Whom a last write left untaken is charged to (#http/unsent). */
  owners?: UntakenOwners;
}

export const serveOverNode = async (transport: SdkTransport, req: IncomingMessage, res: ServerResponse, parsedBody?: unknown, o: ServeOverNodeOptions = {}): Promise<void> => {
  let response: Response;
  try {
    response = await transport.handleRequest(requestOf(req), parsedBody === undefined ? {} : { parsedBody });
  } catch (e) {
    transport.onerror?.(e instanceof Error ? e : new Error(String(e)));
    return internalError(res);
  }
  try {
    await writeResponse(response, res, o);
  } catch (e) {
    transport.onerror?.(e instanceof Error ? e : new Error(String(e)));
    internalError(res);
  }
};

/** Resolves when the client has read what was written (drain), or went away, or read nothing for `stallMs` (dropped). */
const drained = (res: ServerResponse, stallMs: number): Promise<void> =>
  new Promise<void>((resume) => {
    const go = (): void => {
      clearTimeout(stalled);
      res.off('drain', go);
      res.off('close', go);
      resume();
    };
    const stalled = setTimeout(() => {
      res.destroy();
      go();
    }, stallMs);
    res.on('drain', go);
    res.on('close', go);
  });

const writeResponse = async (response: Response, res: ServerResponse, o: ServeOverNodeOptions): Promise<void> => {
  const written = o.written ?? { bytes: 0 };
  const head: Record<string, string | string[]> = {};
  response.headers.forEach((value, name) => {
    head[name] = value;
  });
  const cookies = response.headers.getSetCookie();
  if (cookies.length > 0) head['set-cookie'] = cookies;
  if (!response.body) {
    res.writeHead(response.status, head).end();
    return;
  }
  if (!(response.headers.get('content-type') ?? '').includes('text/event-stream')) {
    // One JSON answer (202s, errors, a JSON response mode): whole, with its length.
    const bytes = Buffer.from(await response.arrayBuffer());
    head['content-length'] = String(bytes.length);
    res.writeHead(response.status, head).end(bytes);
    return;
  }
  res.writeHead(response.status, head);
  const reader = response.body.getReader();
  const cancel = (): void => void reader.cancel().catch(() => undefined);
  // The client went away before the stream ended: cancelling it tells the transport (it drops the stream).
  const onClose = (): void => {
    if (!res.writableFinished) cancel();
  };
  if (res.destroyed) return cancel();
  res.once('close', onClose);
  try {
    const first = readSoon(reader);
    // Nothing to send yet (a GET stream may stay quiet until a keep-alive comment): the head goes out at once, so the
    // client sees its stream open. Otherwise it leaves with the first piece.
    if ((await nowOrNull(first)) === null) res.flushHeaders();
    let piece = await first;
    while (!piece.done) {
      if (res.destroyed) return cancel();
      const next = readSoon(reader);
      const ready = await nowOrNull(next);
      written.bytes += piece.value.length;
      // The last piece and the end of the stream in one write.
      if (ready?.done) {
        res.end(piece.value);
        return dropWhenNotTaken(res, o.stallMs ?? STALL_MS, o.owners);
      }
      // A slow reader: wait for the socket to drain (or go away, or stall) before taking more from the transport.
      if (!res.write(piece.value)) await drained(res, o.stallMs ?? STALL_MS);
      piece = ready ?? (await next);
    }
    if (!res.destroyed) res.end();
  } catch {
    // The stream failed (the transport errored it) or the client went away: nothing more can be sent.
    if (!res.destroyed) res.destroy();
  } finally {
    res.off('close', onClose);
  }
};

type Piece = ReadableStreamReadResult<Uint8Array>;

/** The next piece; awaited later, so a failed stream is not an unhandled rejection meanwhile. */
const readSoon = (reader: ReadableStreamDefaultReader<Uint8Array>): Promise<Piece> => {
  const read = reader.read();
  read.catch(() => undefined);
  return read;
};

/** The piece if it is already there (settled within this microtask turn), else null. */
const nowOrNull = (read: Promise<Piece>): Promise<Piece | null> => Promise.race([read, Promise.resolve(null)]);
