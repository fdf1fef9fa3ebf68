/**
 * `boundedFetch`: a `fetch` for the official SDK's `StreamableHTTPClientTransport` (its `fetch` option) that bounds the
 * bytes of one message a server sends. The SDK reads a message whole before anything above it sees a byte of it (a
 * JSON body with `response.json()`, an event of an event stream in its parser), so a page of a tools list can only be
 * bounded in bytes here, at the transport, not by the tools cache (`maxTools` counts tools once a page is parsed).
 *
 * - A body read whole (every type but `text/event-stream`: a JSON answer, an error page, a redirect's body) may hold
 *   `maxMessageBytes`. A declared Content-Length past it is refused before a byte of the body is read (when the body
 *   is not content-encoded: then the decoded bytes are what is counted); a body that passes it is cut where it does.
 * - An event stream (a POST's answer, the standalone GET stream, a `subscriptions/listen` stream) is bounded per event,
 *   not in all (a GET stream stays open as long as the session): one event (its lines up to and with the empty line
 *   that ends it, comment lines too) may hold `maxMessageBytes`. Its bytes pass unchanged, each event once it has ended (the
 *   SDK's parser does nothing with an event before), so what an event holds is held here rather than in the parser.
 *
 * Past a bound the response is cut: nothing more of it is read, and its connection is closed. A body read whole then
 * fails with a MessageTooLargeError, and so does the request it answered. An event stream that answers requests ends
 * instead with a JSON-RPC error made here for each of them (the SDK leaves a request whose stream failed waiting for its
 * timeout): code -32603, the MessageTooLargeError's message, `data["io.estate/messageTooLarge"]`;
 * `MessageTooLargeError.from(error)` turns it back into one. Any other stream (the standalone GET stream) fails with the
 * MessageTooLargeError: the SDK reports it to the transport's `onerror` and opens the stream again.
 *
 * The SDK opens a cut GET stream again about once a second (or as often as the server's `retry:` field asks), without
 * end, so a server that sends an event past the bound on every stream would have the client read `maxMessageBytes` a
 * second. The reopening is paced here: after n GET event streams to one URL (origin and path) cut in a row, the next
 * GET to it waits `min(1 s · 2^(n-1), maxReopenDelayMs)` before it is sent (exponentialBackoff, app/backoff.ts); the
 * wait ends at once, nothing sent, when the request's signal aborts (the transport closed). POSTs and other URLs never
 * wait. The count starts again only once a GET stream to the URL has stayed open `maxReopenDelayMs` (5 min) without a
 * cut: a rule in events (one whole event passed) would let a server send a small event before each huge one and keep
 * the pace at its fastest, while a stream held open as long as the longest wait earns a fresh series of short waits
 * (1 s, 2 s, 4 s ...) at most once per `maxReopenDelayMs`. The state is the `boundedFetch()`'s own: one per transport.
 */
import { randomUUID } from 'node:crypto';
import { exponentialBackoff } from '#app/backoff';
import { systemTimer, type Timer } from '#app/ports';
import { SseEventEnds } from './sse-event-ends.ts';

/** The fetch the SDK's transports take (`FetchLike`). */
export type FetchLike = (url: string | URL, init?: RequestInit) => Promise<Response>;

export interface BoundedFetchOptions {
  /**
   * At most this many bytes in one message: a body read whole, or one event of an event stream (default
   * DEFAULT_MAX_MESSAGE_BYTES, 16 MiB).
   */
  maxMessageBytes?: number;
  /**
   * The longest wait before a GET event stream is opened again after its streams were cut by the bound (the waits
   * double from 1 s up to it), and how long a GET stream must stay open without a cut for the waits to start again at
   * 1 s (default DEFAULT_MAX_REOPEN_DELAY_MS, 5 min; 0: no wait).
   */
  maxReopenDelayMs?: number;
  /** The fetch to bound (default: the global `fetch`): e.g. one with middleware of its own. */
  fetch?: FetchLike;
}

/** 16 MiB: a page of some ten thousand tools with sizeable schemas. */
export const DEFAULT_MAX_MESSAGE_BYTES = 16 * 1024 * 1024;

/** 5 min: a hostile GET stream costs a client at most `maxMessageBytes` per 5 minutes once its waits reach it. */
export const DEFAULT_MAX_REOPEN_DELAY_MS = 5 * 60 * 1000;

/** The first wait before a cut GET stream is opened again (the SDK's own first reconnection delay). */
const FIRST_REOPEN_DELAY_MS = 1000;

/** Where a message passed the bound: its declared Content-Length, a body read whole, one event of an event stream. */
export type MessageBound = 'content-length' | 'body' | 'event';

const DATA_KEY = 'io.estate/messageTooLarge';
/**
 * Marks the JSON-RPC errors this process made, so `MessageTooLargeError.from` knows them from a server's look-alike:
 * the server never sees it.
 */
const ORIGIN = randomUUID();
const INTERNAL_ERROR = -32603;

/** A response cut (or refused) by `boundedFetch`: its message passed `maxMessageBytes`. */
export class MessageTooLargeError extends Error {
  constructor(
    /** `maxMessageBytes`. */
    readonly limit: number,
    /** The declared Content-Length, or the bytes of the body or the event read when it was cut. */
    readonly size: number,
    /** The request: its method, origin and path (no query: it may hold a secret). */
    readonly url: string,
    readonly where: MessageBound,
  ) {
    super(
      where === 'content-length'
        ? `response refused: Content-Length ${size} is more than maxMessageBytes (${limit}) bytes (${url}); nothing of it read, the connection closed`
        : where === 'body'
          ? `response refused: a body of more than maxMessageBytes (${limit}) bytes (${url}): cut after ${size} bytes, the connection closed`
          : `response refused: an event of more than maxMessageBytes (${limit}) bytes on the event stream of ${url}: cut after ${size} bytes of it, the connection closed`,
    );
    this.name = 'MessageTooLargeError';
  }

  /**
   * `error` as a MessageTooLargeError, if it is one: the error itself (or its `cause`), or the JSON-RPC error (the
   * SDK's ProtocolError) that `boundedFetch` made for a request whose event stream it cut.
   */
  static from(error: unknown): MessageTooLargeError | undefined {
    for (let e = error, depth = 0; typeof e === 'object' && e !== null && depth < 8; e = (e as { cause?: unknown }).cause, depth += 1) {
      if (e instanceof MessageTooLargeError) return e;
      const d = (e as { data?: Record<string, unknown> }).data?.[DATA_KEY] as Record<string, unknown> | undefined;
      if (d?.origin === ORIGIN && typeof d.limit === 'number' && typeof d.size === 'number' && typeof d.url === 'string') {
        return new MessageTooLargeError(d.limit, d.size, d.url, d.where === 'content-length' || d.where === 'body' ? d.where : 'event');
      }
    }
    return undefined;
  }
}

/** A request's method, origin and path, for an error. */
const requestName = (url: string | URL, init: RequestInit | undefined): string => {
  const method = (init?.method ?? 'GET').toUpperCase();
  try {
    const u = new URL(url);
    return `${method} ${u.origin}${u.pathname}`;
  } catch {
    return `${method} (an unreadable URL)`;
  }
};

/** The ids of the requests in a JSON-RPC body (one message or a batch): the requests an event stream answers. */
const requestIds = (body: RequestInit['body']): Array<string | number> => {
  if (typeof body !== 'string') return [];
  try {
    const parsed = JSON.parse(body) as unknown;
    return (Array.isArray(parsed) ? parsed : [parsed]).flatMap((m: unknown) => {
      const { method, id } = (typeof m === 'object' && m !== null ? m : {}) as { method?: unknown; id?: unknown };
      return typeof method === 'string' && (typeof id === 'string' || typeof id === 'number') ? [id] : [];
    });
  } catch {
    return [];
  }
};

/** Bytes read as they come, the body failing with `refuse(bytes read)` (the rest not read) once they pass `limit`. */
const boundedBody = (body: ReadableStream<Uint8Array>, limit: number, refuse: (size: number) => MessageTooLargeError): ReadableStream<Uint8Array> => {
  const reader = body.getReader();
  let read = 0;
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        const { done, value } = await reader.read();
        if (done) return controller.close();
        read += value.byteLength;
        if (read > limit) {
          const error = refuse(read);
          controller.error(error);
          // Cancelling a fetch's body aborts its request: the connection is closed, not drained.
          await reader.cancel(error).catch(() => undefined);
          return;
        }
        controller.enqueue(value);
      },
      cancel: (reason) => reader.cancel(reason),
    },
    { highWaterMark: 0 },
  );
};

/**
 * An event stream whose events may hold `limit` bytes each. An event is held until it ends (an empty line, CRLF, LF or
 * CR ended: ./sse-event-ends.ts), then passed on as it came, with its empty line's line end. Past the bound, the event
 * is dropped and the stream ends with `end(bytes of the event read)`: the events it returns (then the stream closes),
 * or an error (then the stream fails).
 */
const boundedEvents = (
  body: ReadableStream<Uint8Array>,
  limit: number,
  end: (size: number) => Uint8Array | MessageTooLargeError,
  /** Called once when the stream ends, fails or is cancelled without a cut. */
  uncut: () => void = () => undefined,
): ReadableStream<Uint8Array> => {
  const reader = body.getReader();
  const ends = new SseEventEnds();
  /** The bytes of the event not ended yet. */
  let held: Uint8Array[] = [];
  let heldBytes = 0;
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        for (;;) {
          const { done, value } = await reader.read().catch((error: unknown) => {
            uncut();
            throw error;
          });
          if (done) {
            uncut();
            // An event not ended is dropped by the parser anyway; it is passed on as it came.
            for (const h of held) controller.enqueue(h);
            held = [];
            return controller.close();
          }
          const n = value.byteLength;
          /** Where the event under way began in this chunk (-1: before it), and its bytes before that (held). */
          let start = -1;
          let before = heldBytes;
          /** The size of an event past the bound, if one is. */
          let past = 0;
          ends.scan(value, (at) => {
            if (past > 0) return;
            const size = before + at - Math.max(start, 0);
            if (size > limit) past = size;
            else {
              start = at;
              before = 0;
            }
          });
          if (past === 0 && before + n - Math.max(start, 0) > limit) past = before + n - Math.max(start, 0);
          if (past > 0) {
            // The events that ended before this one are passed on; this one is dropped, and the stream ends.
            if (start >= 0) {
              for (const h of held) controller.enqueue(h);
              if (start > 0) controller.enqueue(value.subarray(0, start));
            }
            held = [];
            const last = end(past);
            if (last instanceof MessageTooLargeError) controller.error(last);
            else {
              controller.enqueue(last);
              controller.close();
            }
            // Cancelling a fetch's body aborts its request: the connection is closed, not drained.
            await reader.cancel(last instanceof MessageTooLargeError ? last : new Error('an event past maxMessageBytes')).catch(() => undefined);
            return;
          }
          if (start < 0 || (start === 0 && heldBytes === 0)) {
            // No event ended in this chunk (nor any bytes to pass on): read on.
            held.push(value);
            heldBytes += n;
            continue;
          }
          for (const h of held) controller.enqueue(h);
          if (start > 0) controller.enqueue(value.subarray(0, start));
          held = start < n ? [value.subarray(start)] : [];
          heldBytes = n - start;
          return;
        }
      },
      cancel: (reason) => {
        uncut();
        return reader.cancel(reason);
      },
    },
    { highWaterMark: 0 },
  );
};

/** The statuses whose response has no body (`new Response` refuses one). */
const NULL_BODY = new Set([101, 103, 204, 205, 304]);

/** `response` with `body` instead of its own; what the SDK reads of a response besides (url, type) kept. */
const withBody = (response: Response, body: ReadableStream<Uint8Array>): Response => {
  const replaced = new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
  for (const key of ['url', 'redirected', 'type'] as const) Object.defineProperty(replaced, key, { value: response[key] });
  return replaced;
};

/** A URL's origin and path: what the pacing of cut GET streams goes by (a query may differ per request). */
const streamKey = (url: string | URL): string | undefined => {
  try {
    const u = new URL(url);
    return `${u.origin}${u.pathname}`;
  } catch {
    return undefined;
  }
};

/**
 * A fetch for `new StreamableHTTPClientTransport(url, { fetch: boundedFetch() })` that bounds the bytes of one
 * message the server sends (see the module comment): a body read whole, or one event of an event stream, at most
 * `maxMessageBytes`; and that paces the reopening of a GET event stream cut by the bound.
 */
export const boundedFetch = (options: BoundedFetchOptions = {}): FetchLike => boundedFetchWith(options, systemTimer);

/** `boundedFetch` on `clock` (the pacing's time and waits): for tests (not exported by the package). */
export const boundedFetchWith = (options: BoundedFetchOptions, clock: Timer): FetchLike => {
  const limit = options.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES;
  if (!(Number.isSafeInteger(limit) && limit >= 1)) throw new RangeError(`maxMessageBytes must be an integer >= 1, got ${String(options.maxMessageBytes)}`);
  const maxReopen = options.maxReopenDelayMs ?? DEFAULT_MAX_REOPEN_DELAY_MS;
  if (!(Number.isSafeInteger(maxReopen) && maxReopen >= 0)) throw new RangeError(`maxReopenDelayMs must be an integer >= 0, got ${String(options.maxReopenDelayMs)}`);
  const reopenDelay = exponentialBackoff({ initialMs: FIRST_REOPEN_DELAY_MS, maxMs: maxReopen });
  /** Per URL (origin and path): its GET event streams cut by the bound in a row. This instance's own. */
  const cuts = new Map<string, number>();
  const inner = options.fetch ?? ((url, init) => fetch(url, init));
  return async (url, init) => {
    const key = (init?.method ?? 'GET').toUpperCase() === 'GET' ? streamKey(url) : undefined;
    const cutInARow = key === undefined ? 0 : (cuts.get(key) ?? 0);
    if (cutInARow > 0 && maxReopen > 0) {
      // A Timer's wait ends early, without failing, when the signal aborts: then nothing is sent, whatever `inner` does
      // with an aborted signal.
      await clock.sleep(reopenDelay(cutInARow), init?.signal ?? undefined);
      init?.signal?.throwIfAborted();
    }
    const response = await inner(url, init);
    if (response.body === null || NULL_BODY.has(response.status)) return response;
    const what = requestName(url, init);
    const type = response.headers.get('content-type')?.split(';')[0]?.trim().toLowerCase();
    if (type === 'text/event-stream') {
      const ids = requestIds(init?.body);
      const encoder = new TextEncoder();
      const opened = clock.now();
      let settled = false;
      /**
       * How a GET stream went, noted once: cut, one more cut in a row (the first, if it had stayed open
       * `maxReopenDelayMs` before); ended, failed or cancelled uncut after that long, none.
       */
      const settle = (cut: boolean): void => {
        if (key === undefined || settled) return;
        settled = true;
        const heldLongEnough = clock.now() - opened >= maxReopen;
        if (cut) cuts.set(key, heldLongEnough ? 1 : (cuts.get(key) ?? 0) + 1);
        else if (heldLongEnough) cuts.delete(key);
      };
      return withBody(
        response,
        boundedEvents(response.body, limit, (size) => {
          settle(true);
          const error = new MessageTooLargeError(limit, size, what, 'event');
          if (ids.length === 0) return error;
          const data = { [DATA_KEY]: { limit, size, url: what, where: 'event', origin: ORIGIN } };
          const events = ids.map((id) => `data: ${JSON.stringify({ jsonrpc: '2.0', id, error: { code: INTERNAL_ERROR, message: error.message, data } })}\n\n`);
          return encoder.encode(events.join(''));
        }, () => settle(false)),
      );
    }
    const encoding = response.headers.get('content-encoding')?.trim().toLowerCase();
    const declared = Number(response.headers.get('content-length') ?? Number.NaN);
    if ((encoding === undefined || encoding === '' || encoding === 'identity') && declared > limit) {
      const error = new MessageTooLargeError(limit, declared, what, 'content-length');
      await response.body.cancel(error).catch(() => undefined);
      throw error;
    }
    return withBody(response, boundedBody(response.body, limit, (size) => new MessageTooLargeError(limit, size, what, 'body')));
  };
};
