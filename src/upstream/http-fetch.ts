/**
 * The `fetch` an HTTP upstream's SDK transport (StreamableHTTPClientTransport) is given: POSTs go over node:http with
 * kept-alive connections, and an answer sent as an event stream that holds nothing but the response (the usual
 * tools/call answer) is handed to the SDK as the JSON body it would parse from that stream anyway. The SDK then takes
 * its JSON path instead of piping the body through two web-stream transforms, and the proxy's own hop costs less than
 * the SDK client's (bench/upstream.ts). Everything else is what the SDK would see from the global fetch:
 * - an event stream that carries anything before its response (a log line, a progress notification, a question for
 *   the caller), or stays open after it, is handed over as that stream, every byte in order, as soon as that is known;
 * - a stream that fails before its response is handed over as far as it came, then fails (the SDK resumes it);
 * - GET and DELETE, and any request this does not recognise, go to the global fetch (an event stream it answers, the
 *   standalone GET stream, with each event bounded as a POST's stream is).
 * A request that fails on a kept-alive connection the upstream had closed before reading it is sent again on another
 * (a busy process can take such a connection from the pool before it sees the close): a reply to an upstream's
 * question lost that way left the upstream waiting until the call's deadline. A tools/call is sent again only if it
 * was never written; otherwise it fails, and the side-effect policy decides whether the call is repeated.
 * What is held is bounded (MAX_UPSTREAM_BODY_BYTES for a body read whole, SNIFF_BYTES of a stream before it is handed
 * over): an upstream is not trusted to send a sane amount. And what every answer holds is charged to the account of
 * the call or sync it belongs to (./answer-budget.ts), found when the request starts: a refused charge drops the
 * answer and tells the account, which ends the call (a stream that fails before its response would otherwise leave
 * the SDK's request waiting for its deadline). Nor how fast: a stream handed over as a stream, and the standalone GET
 * stream, are read at the pace of ./event-pace.ts (lines a second per upstream endpoint, shared fairly by its streams).
 */
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { Transformer } from 'node:stream/web';
import { SseEventEnds } from '#lib/sse-event-ends';
import { currentAnswerAccount, MAX_UPSTREAM_BODY_BYTES } from './answer-budget.ts';
import { EndpointPaces, lineEnds, type StreamPace } from './event-pace.ts';
/**
 * Most bytes of an event stream read before deciding: past it (a large result, or an event that never ends) the
 * stream is handed over as it is, so what is searched for event boundaries stays small.
 */
const SNIFF_BYTES = 1024 * 1024;
const EVENT_TEXT = new TextDecoder();
/** How long a stream that has sent its response may stay open before it is handed over as a stream (default). */
const END_AFTER_RESPONSE_MS = 25;
/**
 * Events without data (priming events, comments) read before deciding: an upstream may send one or two before its
 * response; past this many the stream is handed over as a stream, and read at its pace, instead of searched event by
 * event here (up to a MiB of them: 350,000).
 */
const MAX_EVENTS_WITHOUT_DATA = 64;

/**
 * How long a kept-alive connection may sit idle in the pool. With a timeout of its own, Node's agent also honours an
 * upstream's `Keep-Alive: timeout=N` hint: an idle connection is dropped a second before the upstream would drop it.
 * On a connection in use the timeout only emits an event: a quiet stream is not cut.
 */
const IDLE_TIMEOUT_MS = 30_000;
/** Connections to one upstream endpoint's host at once (node's pool limit per host and port). */
const MAX_SOCKETS = 256;
type Pool = { http: HttpAgent; https: HttpsAgent };
const newPool = (): Pool => ({
  http: new HttpAgent({ keepAlive: true, maxSockets: MAX_SOCKETS, timeout: IDLE_TIMEOUT_MS }),
  https: new HttpsAgent({ keepAlive: true, maxSockets: MAX_SOCKETS, timeout: IDLE_TIMEOUT_MS }),
});
const agents = newPool();
const pools = new Map<string, Pool>();

/**
 * The kept-alive connections of one upstream (by namespace): several upstreams behind one gateway (one host and port)
 * shared node's 256 connections a host, and one upstream holding its requests open took them from the others.
 */
export const poolFor = (ns: string): Pool => {
  let p = pools.get(ns);
  if (!p) pools.set(ns, (p = newPool()));
  return p;
};
/** How a request fails on a connection its upstream had already closed; and how often it is sent again on another. */
const STALE_CONNECTION = new Set(['ECONNRESET', 'EPIPE']);
const STALE_RETRIES = 3;

/**
 * Whether a body carries a tools/call (or cannot be read as JSON-RPC): once written, such a request may have reached
 * the upstream, and whether it may be sent again is the side-effect policy's to decide (RETRYABLE, run-handler), not
 * this transport's. Read only when a request has failed.
 */
const mayHaveActed = (body: string): boolean => {
  try {
    const m = JSON.parse(body) as unknown;
    return (Array.isArray(m) ? m : [m]).some((x) => typeof x !== 'object' || x === null || (x as { method?: unknown }).method === 'tools/call');
  } catch {
    return true;
  }
};

/** Whether a POST's body holds a JSON-RPC request (a method and an id): read only when its call is abandoned. */
const carriesRequest = (body: string): boolean => {
  try {
    const m = JSON.parse(body) as unknown;
    return (Array.isArray(m) ? m : [m]).some((x) => typeof x === 'object' && x !== null && 'method' in x && 'id' in x);
  } catch {
    return false;
  }
};

type Fetch = typeof fetch;

const abortError = (signal: AbortSignal): unknown =>
  signal.reason instanceof Error ? signal.reason : new DOMException('This operation was aborted', 'AbortError');

const headersOf = (res: IncomingMessage, contentType?: string): Headers => {
  const h = new Headers();
  for (const [name, value] of Object.entries(res.headers)) {
    if (value === undefined) continue;
    for (const v of Array.isArray(value) ? value : [value]) h.append(name, v);
  }
  if (contentType !== undefined) {
    h.set('content-type', contentType);
    h.delete('content-length');
  }
  return h;
};

/** A JSON-RPC response (not a request or notification): what ends a POST's stream. */
const isResponse = (data: string): boolean => {
  try {
    const m = JSON.parse(data) as unknown;
    return typeof m === 'object' && m !== null && !Array.isArray(m) && 'id' in m && ('result' in m || 'error' in m) && !('method' in m);
  } catch {
    return false;
  }
};

/**
 * Reads an event stream's events as they complete (an empty line, whatever its line ends: #lib/sse-event-ends, as the
 * SDK's parser reads them, else two events could be read here as one response); says what they hold so far: only
 * events without data (a priming event's id, comments, retry), or one response and nothing else.
 */
class StreamSniffer {
  /** The bytes after the last complete event (the caller stops at SNIFF_BYTES). */
  private pending: Buffer[] = [];
  private readonly ends = new SseEventEnds();
  private withoutData = 0;
  response: string | undefined;
  other = false;

  push(chunk: Buffer): void {
    let start = 0;
    this.ends.scan(chunk, (end) => {
      const bytes = chunk.subarray(start, end);
      // An event ends at a line end, never inside a UTF-8 sequence: each event's bytes decode on their own.
      this.event(EVENT_TEXT.decode(this.pending.length === 0 ? bytes : Buffer.concat([...this.pending, bytes])));
      this.pending = [];
      start = end;
    });
    if (start < chunk.length) this.pending.push(chunk.subarray(start));
  }

  private event(block: string): void {
    const data: string[] = [];
    let type = 'message';
    for (const line of block.split(/\r\n|\n|\r/)) {
      if (line === '' || line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
      if (field === 'data') data.push(value);
      else if (field === 'event') type = value;
    }
    const joined = data.join('\n');
    if (joined === '') {
      // A priming event (its id only): the SDK skips events without data too. Many of them are not a priming.
      if (++this.withoutData > MAX_EVENTS_WITHOUT_DATA) this.other = true;
      return;
    }
    // Only a first event with data may be the response; any other event with data is something else.
    if (type === 'message' && this.response === undefined && !this.other && isResponse(joined)) this.response = joined;
    else this.other = true;
  }
}

/**
 * The size of the event an event stream is in the middle of, chunk by chunk: what the SDK holds until the event ends,
 * so what one event may not grow past. An event ends at an empty line, whatever its line ends (CRLF, LF or CR, mixed
 * as they come: #lib/sse-event-ends), a CRLF split between two chunks counted as one.
 */
export class EventSize {
  /**
   * Read on from an unknown place when something came before (`since`, bytes of an event under way): a line end seen
   * first is not taken for an empty line.
   */
  private readonly ends: SseEventEnds;

  constructor(private since = 0) {
    this.ends = new SseEventEnds(since === 0);
  }

  /** Bytes of the unfinished event once `c` is read. */
  push(c: Buffer): number {
    const end = this.ends.scan(c);
    this.since = end < 0 ? this.since + c.length : c.length - end;
    return this.since;
  }
}

/** Which upstream a request goes to, for its pace: its origin and path (an unreadable address: its text). */
const endpointOf = (input: Parameters<Fetch>[0]): string => {
  const href = input instanceof Request ? input.url : String(input);
  try {
    const u = new URL(href);
    return `${u.origin}${u.pathname}`;
  } catch {
    return href;
  }
};

/**
 * An event stream the fallback fetched (the standalone GET stream), with its events bounded as a POST's stream is:
 * one event past MAX_UPSTREAM_BODY_BYTES fails the stream, nothing more read. The SDK's parser holds an event until it
 * ends, and an upstream is not trusted to end it. And read at its share of its upstream's pace (`pace`: a share for
 * it, which says how long to wait after a chunk of so many lines): the pipe takes nothing more meanwhile, so the
 * socket pushes back.
 */
const boundedEvents = (r: Response, pace: () => StreamPace): Response => {
  const type = r.headers.get('content-type')?.split(';')[0]?.trim().toLowerCase();
  if (r.body === null || type !== 'text/event-stream') return r;
  const paced = pace();
  const size = new EventSize();
  // `cancel` is Node's (20 and later) but not yet in TypeScript's Transformer type.
  const transformer: Transformer<Uint8Array, Uint8Array> & { cancel: () => void } = {
    transform(chunk, controller) {
      if (size.push(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength)) > MAX_UPSTREAM_BODY_BYTES) {
        return controller.error(new Error(`upstream event larger than ${MAX_UPSTREAM_BODY_BYTES} bytes`));
      }
      controller.enqueue(chunk);
      const ms = paced.take(lineEnds(chunk));
      if (ms > 0) return new Promise<void>((resolve) => setTimeout(resolve, ms).unref());
    },
    // Ended or cancelled: it no longer counts among its upstream's streams.
    flush: () => paced.close(),
    cancel: () => paced.close(),
  };
  const bounded = r.body.pipeThrough(new TransformStream<Uint8Array, Uint8Array>(transformer));
  return new Response(bounded, { status: r.status, statusText: r.statusText, headers: r.headers });
};

/**
 * `fallback`: for what this does not handle itself. `lingerMs`: how long a stream may stay open after its response
 * before it is handed over as a stream. `pool`: the kept-alive connections (shared by every upstream by default).
 * `pace`: how fast the streams of each upstream are read (./event-pace.ts: shared by every fetch given the same), and
 * who is told when a stream waits for it.
 */
export const createUpstreamFetch = (
  fallback: Fetch = globalThis.fetch,
  lingerMs = END_AFTER_RESPONSE_MS,
  pool: Pool = agents,
  pace: { paces?: EndpointPaces; onPaced?: (ms: number) => void } = {},
): Fetch => {
  const shared = pace.paces ?? new EndpointPaces();
  /** A new stream's share of its endpoint's pace: how long to wait after a chunk of so many lines; who is told. */
  const paced = (endpoint: string): StreamPace => {
    const share = shared.stream(endpoint);
    return {
      take: (lines) => {
        const ms = share.take(lines);
        if (ms > 0) pace.onPaced?.(ms);
        return ms;
      },
      close: () => share.close(),
    };
  };
  const upstreamFetch = (input: Parameters<Fetch>[0], init?: RequestInit): Promise<Response> => {
    const url = typeof input === 'string' ? new URL(input) : input instanceof URL ? input : undefined;
    if (url === undefined || init?.method !== 'POST' || typeof init.body !== 'string' || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
      const endpoint = endpointOf(input);
      return fallback(input, init).then((r) => boundedEvents(r, () => paced(endpoint)));
    }
    const endpoint = `${url.origin}${url.pathname}`;
    const signal = init.signal ?? undefined;
    if (signal?.aborted) return Promise.reject(abortError(signal));
    const account = currentAnswerAccount();
    const headers: Record<string, string> = {};
    new Headers(init.headers).forEach((value, name) => (headers[name] = value));
    headers['content-length'] = String(Buffer.byteLength(init.body));
    // node:http does not decompress (the global fetch does): ask for the body as it is.
    headers['accept-encoding'] = 'identity';
    const body = init.body;

    return new Promise<Response>((resolve, reject) => {
      let settled = false;
      const settle = (r: Response | Error): void => {
        if (settled) return;
        settled = true;
        if (r instanceof Response) resolve(r);
        else reject(r);
      };
      const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
      const agent = url.protocol === 'https:' ? pool.https : pool.http;
      let responded = false;
      const attempt = (retries: number): void => {
        const req = send(url, { method: 'POST', headers, agent });
        const onAbort = (): void => {
          req.destroy(abortError(signal as AbortSignal) as Error);
        };
        signal?.addEventListener('abort', onAbort, { once: true });
        // The SDK gives a 2025 session's POSTs no signal of their own (only the transport's): a call given up at its
        // deadline or cancelled left its request waiting on its connection for as long as the upstream liked. When
        // the call or sync this POST belongs to is abandoned, a request of it (not a notification or a reply: a cancel
        // must still go out) still waiting for its answer is destroyed, and its connection with it.
        let answered: IncomingMessage | undefined;
        const unregister = account?.whenAbandoned(() => {
          if (!req.destroyed && !(answered?.complete ?? false) && carriesRequest(body)) req.destroy(new Error('the call this request belongs to was given up'));
        });
        let unwritten = false;
        req.on('socket', (socket) => {
          // A kept-alive connection the upstream closed while this process was busy can still be in the pool, half shut
          // (its end read, its close not yet): a request written to it is never answered. Fail it before it is written
          // and go again.
          if (req.reusedSocket && socket.readyState !== 'open') {
            unwritten = true;
            socket.destroy();
          }
        });
        req.on('error', (e) => {
          signal?.removeEventListener('abort', onAbort);
          // Failed on a reused connection before any answer: most likely the upstream closed that idle connection as we
          // took it (its keep-alive timeout) and never read the request; Node's documented remedy is to send it again.
          // A reply or notification may go again; a tools/call that was written may have been read (SPEC: a
          // non_idempotent call is never re-sent once it may have reached the upstream), so it fails here instead.
          const stale = !responded && req.reusedSocket && STALE_CONNECTION.has((e as NodeJS.ErrnoException).code ?? '');
          if (stale && retries > 0 && !signal?.aborted && (unwritten || !mayHaveActed(body))) return attempt(retries - 1);
          settle(e);
        });
        req.on('close', () => {
          signal?.removeEventListener('abort', onAbort);
          unregister?.();
        });
        req.on('response', (res) => {
          responded = true;
          answered = res;
          answer(res);
        });
        req.end(body);
      };

      const answer = (res: IncomingMessage): void => {
        const status = res.statusCode ?? 0;
        const statusText = res.statusMessage ?? '';
        const type = String(res.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase();
        const chunks: Buffer[] = [];
        let bytes = 0;
        let lingering: NodeJS.Timeout | undefined;
        /** Bytes of this answer charged to the account. */
        let charged = 0;
        const charge = (n: number): boolean => {
          if (account === undefined) return true;
          if (!account.charge(n)) return false;
          charged += n;
          return true;
        };
        /** Drop the answer (refused, or past its bound): nothing more is read, what it held is given back. */
        const drop = (why: Error): Error => {
          res.destroy();
          account?.refund(charged);
          charged = 0;
          account?.fail(why);
          return why;
        };
        if (status === 204 || status === 304) {
          res.resume();
          return settle(new Response(null, { status, statusText, headers: headersOf(res) }));
        }

        let ended = false;
        let failed: Error | undefined;
        res.on('end', () => (ended = true));
        res.on('error', (e) => (failed ??= e));
        res.on('close', () => {
          if (!res.complete) failed ??= new Error('upstream closed the stream before its end');
        });

        /** Hand the stream over: what was read so far, then the rest as it comes (or how it ended meanwhile). */
        const asStream = (): void => {
          if (settled) return;
          clearTimeout(lingering);
          res.removeAllListeners('data');
          res.pause();
          // A failure is reported once every byte before it was read (erroring a stream drops what it still holds).
          let failure: Error | undefined;
          const fail = (controller: ReadableStreamDefaultController<Uint8Array>, e: Error): void => {
            if ((controller.desiredSize ?? 0) >= 1) controller.error(e);
            else failure = e;
          };
          /** This stream's share of its upstream's pace. */
          const share = paced(endpoint);
          /** While the upstream's pace holds this stream back: nothing is read until it ends. */
          let holding: NodeJS.Timeout | undefined;
          const pauseFor = (ms: number, controller: ReadableStreamDefaultController<Uint8Array>): void => {
            if (ms <= 0 || res.readableEnded) return;
            res.pause();
            clearTimeout(holding);
            holding = setTimeout(() => {
              holding = undefined;
              if ((controller.desiredSize ?? 0) > 0) res.resume();
            }, ms);
          };
          const stream = new ReadableStream<Uint8Array>({
            start(controller) {
              // What was read before deciding (at most SNIFF_BYTES, or up to the first event that is not the response)
              // is not paced: the stream is paced from here on.
              for (const c of chunks) controller.enqueue(new Uint8Array(c));
              chunks.length = 0;
              if (failed !== undefined) return fail(controller, failed);
              if (ended) return controller.close();
              // The SDK holds an event until it ends: one event may not grow past the bound. What is charged is the
              // largest event so far (what was read before handing over counts as one): those before it are gone.
              const size = new EventSize(bytes);
              res.on('data', (c: Buffer) => {
                const sinceBoundary = size.push(c);
                if (sinceBoundary > MAX_UPSTREAM_BODY_BYTES) return fail(controller, drop(new Error(`upstream event larger than ${MAX_UPSTREAM_BODY_BYTES} bytes`)));
                if (sinceBoundary > charged && !charge(sinceBoundary - charged)) return fail(controller, drop(account?.refusal ?? new Error('refused')));
                controller.enqueue(new Uint8Array(c));
                // Backpressure: read on only as fast as the SDK takes the stream (pull resumes), and the upstream's pace.
                if ((controller.desiredSize ?? 0) <= 0) res.pause();
                pauseFor(share.take(lineEnds(c)), controller);
              });
              res.on('end', () => {
                share.close();
                controller.close();
              });
              res.on('close', () => {
                clearTimeout(holding);
                share.close();
                if (!res.complete) fail(controller, failed ?? new Error('upstream closed the stream before its end'));
              });
            },
            pull(controller) {
              if (failure !== undefined) return controller.error(failure);
              if (holding === undefined) res.resume();
            },
            cancel() {
              clearTimeout(holding);
              res.destroy();
            },
          });
          settle(new Response(stream, { status, statusText, headers: headersOf(res) }));
        };

        const tooLarge = (): void => settle(drop(new Error(`upstream answer larger than ${MAX_UPSTREAM_BODY_BYTES} bytes`)));
        const refused = (): void => {
          chunks.length = 0;
          settle(drop(account?.refusal ?? new Error('refused')));
        };

        if (type !== 'text/event-stream' || status < 200 || status >= 300) {
          res.on('data', (c: Buffer) => {
            bytes += c.length;
            if (bytes > MAX_UPSTREAM_BODY_BYTES) return tooLarge();
            if (!charge(c.length)) return refused();
            chunks.push(c);
          });
          res.on('end', () => settle(new Response(Buffer.concat(chunks), { status, statusText, headers: headersOf(res) })));
          res.on('close', () => {
            if (!res.complete) settle(failed ?? new Error('upstream closed the connection before the end of its answer'));
          });
          return;
        }

        const sniffer = new StreamSniffer();
        res.on('data', (c: Buffer) => {
          bytes += c.length;
          if (!charge(c.length)) return refused();
          chunks.push(c);
          if (bytes > SNIFF_BYTES) return asStream();
          sniffer.push(c);
          if (sniffer.other) return asStream();
          if (sniffer.response !== undefined && lingering === undefined) lingering = setTimeout(asStream, lingerMs);
        });
        res.on('end', () => {
          clearTimeout(lingering);
          if (settled) return;
          if (sniffer.response !== undefined && !sniffer.other) {
            return settle(new Response(sniffer.response, { status, statusText, headers: headersOf(res, 'application/json') }));
          }
          asStream();
        });
        // Failed before its response: what came so far, then the failure, for the SDK to resume from the last event id.
        res.on('close', () => {
          if (!res.complete) asStream();
        });
      };
      attempt(STALE_RETRIES);
    });
  };
  return upstreamFetch as Fetch;
};
