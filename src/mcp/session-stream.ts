/**
 * A session's tools/call answered as an event stream by Estate itself, past the SDK transport (as session-json.ts does
 * for calls with nothing to send but their answer). A call that may report progress, log or ask its client something
 * (StatefulSession.sendsOnlyItsAnswer is false) gets one: the head and a priming event (an event id, empty data: the
 * 2025-11-25 transport's), every message for the call as it comes, then the answer, and the stream ends. Why not the SDK
 * transport: on this path it parsed the message again with zod, built a web ReadableStream and Response per call and
 * encoded each event twice; together ~300 µs of a call that otherwise costs ~650 (docs/benchmarks.md).
 *
 * Resumable as the transport's streams are: every event is kept in the session's replay buffer under the stream's id
 * before it is written, so a client whose stream broke reconnects with `GET` and `Last-Event-ID`; while the call runs,
 * that GET is answered here (what it missed, then the rest as it comes); once the call has ended, the SDK transport
 * replays the buffer as it does for its own streams. A client that went away costs nothing more: the call runs to its
 * end and is recorded, and its messages wait in the (bounded) buffer.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { header } from '#http/header';
import { sendJson } from '#http/send-json';
import { failure, INTERNAL_ERROR, type JsonRpcCall, type JsonRpcRequest, type JsonRpcResponse, type RequestId } from './jsonrpc.ts';
import { refusedAsSdk, type SessionJsonOptions } from './session-json.ts';
import type { ReplayBuffer } from './sse-replay-store.ts';
import type { StatefulSession } from './stateful-session.ts';

/**
 * How long the head and priming event wait (corked) for the call's first message: a quick answer leaves with them in
 * one write, which under load halves the writes (and the client's reads) per call.
 */
const HOLD_MS = 10;

/** What a priming event keeps in the buffer (the SDK transport's choice, so its replay treats it alike). */
const PRIMING = '{}';

export interface CallStreamOptions {
  sessionId: string;
  buffer: ReplayBuffer;
  keepAliveMs: number;
  /** Whether the negotiated revision takes a priming event (2025-11-25 and later). */
  priming: boolean;
  /** Called once, when the stream has sent its answer or was ended with the session. */
  onEnd(): void;
}

const eventText = (id: string, json: string): string => `event: message\nid: ${id}\ndata: ${json}\n\n`;

const HEAD = (sessionId: string) => ({
  'content-type': 'text/event-stream',
  'cache-control': 'no-cache, no-transform',
  connection: 'keep-alive',
  'x-accel-buffering': 'no',
  'mcp-session-id': sessionId,
});

export class CallStream {
  readonly streamId = randomUUID();
  private out: ServerResponse | null = null;
  private corked = false;
  private hold: NodeJS.Timeout | undefined;
  private keepAlive: NodeJS.Timeout | undefined;
  private ended = false;

  constructor(private readonly o: CallStreamOptions) {}

  /** Opens the stream on the POST's response: the head, and the priming event where the revision takes one. */
  open(res: ServerResponse): void {
    this.attach(res);
    res.writeHead(200, HEAD(this.o.sessionId));
    // Held (corked) for the next message up to HOLD_MS: a quick answer leaves with them in one write.
    res.cork();
    this.corked = true;
    this.hold = setTimeout(() => this.uncork(), HOLD_MS);
    if (this.o.priming) res.write(`id: ${this.o.buffer.record(this.streamId, PRIMING)}\ndata: \n\n`);
    else {
      // Nothing to send yet: the client sees its stream open at once.
      this.uncork();
      res.flushHeaders();
    }
  }

  /** A message for the call (a notification or a request to the client), kept for replay and sent if connected. */
  send(message: JsonRpcCall): void {
    const event = this.keep(message);
    if (event === null || !this.out || this.out.destroyed) return;
    this.out.write(event);
    this.uncork();
  }

  /** The call's answer: kept, sent, and the stream ends. */
  finish(answer: JsonRpcResponse): void {
    const event = this.keep(answer);
    if (event !== null) this.endWith(event);
  }

  /** Keeps a message in the replay buffer; its event as written, or null once the stream has ended. */
  private keep(message: JsonRpcCall | JsonRpcResponse): string | null {
    if (this.ended) return null;
    const json = JSON.stringify(message);
    return eventText(this.o.buffer.record(this.streamId, json), json);
  }

  /** Whether a client connection is still open on this stream. */
  get connected(): boolean {
    return this.out !== null && !this.out.destroyed;
  }

  /**
   * A client reconnecting with `Last-Event-ID` while the call runs (its earlier connection gone): what it missed after
   * that id, then the rest of the call on this response.
   */
  resume(res: ServerResponse, lastEventId: string): void {
    this.stopTimers();
    this.attach(res);
    res.writeHead(200, HEAD(this.o.sessionId));
    let missed = '';
    for (const e of this.o.buffer.after(lastEventId)) if (e.text !== PRIMING) missed += eventText(e.id, e.text);
    if (missed) res.write(missed);
    else res.flushHeaders();
  }

  /** The session ended (DELETE, expiry, shutdown): the stream ends without an answer. */
  close(): void {
    if (!this.ended) this.endWith();
  }

  private attach(res: ServerResponse): void {
    this.out = res;
    this.startKeepAlive();
    res.once('close', () => {
      if (this.out !== res) return;
      // Gone before the answer: the call goes on; its messages wait in the buffer for a reconnect.
      this.out = null;
      this.stopTimers();
    });
  }

  private startKeepAlive(): void {
    clearInterval(this.keepAlive);
    this.keepAlive = setInterval(() => {
      const res = this.out;
      if (res && !res.destroyed) res.write(': keepalive\n\n');
    }, this.o.keepAliveMs);
    this.keepAlive.unref();
  }

  private uncork(): void {
    clearTimeout(this.hold);
    this.hold = undefined;
    if (!this.corked) return;
    this.corked = false;
    this.out?.uncork();
  }

  private stopTimers(): void {
    clearTimeout(this.hold);
    this.hold = undefined;
    clearInterval(this.keepAlive);
    this.keepAlive = undefined;
    this.corked = false;
  }

  /** Ends the stream, with a last event or none; end() also sends whatever was held (Node uncorks on end). */
  private endWith(event?: string): void {
    this.ended = true;
    this.stopTimers();
    const res = this.out;
    this.out = null;
    if (res && !res.destroyed) {
      if (event === undefined) res.end();
      else res.end(event);
    }
    this.o.onEnd();
  }
}

/** The first revision whose clients take a priming event (empty data); the SDK transport's rule. */
const PRIMING_FROM = '2025-11-25';
/** The revision a session POST without an MCP-Protocol-Version header is taken to speak (the SDK transport's default). */
const UNNAMED_REVISION = '2025-03-26';

export interface StreamingSession {
  id: string;
  session: StatefulSession;
  replay: ReplayBuffer;
  calls: Map<RequestId, CallStream>;
}

/**
 * Answers `message` (a request the session has claimed, which may send messages before its answer) on an event stream
 * of Estate's own. The SDK transport's checks come first, with its answers (session-json.ts: sdkRefusal).
 */
export const answerAsStream = async (
  req: IncomingMessage,
  res: ServerResponse,
  s: StreamingSession,
  message: JsonRpcRequest,
  raw: unknown,
  o: SessionJsonOptions & { keepAliveMs: number; onError?: (e: unknown) => void },
): Promise<void> => {
  if (refusedAsSdk(req, res, s, message, raw, o)) return;
  const revision = header(req, 'mcp-protocol-version') ?? UNNAMED_REVISION;
  const stream: CallStream = new CallStream({
    sessionId: s.id,
    buffer: s.replay,
    keepAliveMs: o.keepAliveMs,
    priming: revision >= PRIMING_FROM && o.revisions.includes(revision),
    onEnd: () => {
      if (s.calls.get(message.id) === stream) s.calls.delete(message.id);
    },
  });
  s.calls.set(message.id, stream);
  stream.open(res);
  let answer: JsonRpcResponse | null;
  try {
    answer = await s.session.handle(message);
  } catch (e) {
    o.onError?.(e);
    answer = failure(message.id, INTERNAL_ERROR, 'Internal error');
  }
  if (answer) stream.finish(answer);
  else stream.close();
};

/**
 * A GET with `Last-Event-ID` naming one of the session's own call streams still running: resumed here, or false. A
 * stream whose connection is still open is not taken from it: 409, as the SDK transport answers for its own streams
 * (the client tries again once that connection has gone).
 */
export const resumeCallStream = (s: StreamingSession, res: ServerResponse, lastEventId: string): boolean => {
  const streamId = s.replay.streamOf(lastEventId);
  if (streamId === undefined) return false;
  for (const call of s.calls.values()) {
    if (call.streamId !== streamId) continue;
    if (call.connected) sendJson(res, 409, failure(null, -32000, 'Conflict: Stream already has an active connection'));
    else call.resume(res, lastEventId);
    return true;
  }
  return false;
};
