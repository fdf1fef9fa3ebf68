/**
 * A session's tools/call answered as an event stream by Estate itself, past the SDK transport (as session-json.ts does
 * for calls with nothing to send but their answer). A call that may report progress, log or ask its client something
 * (StatefulSession.sendsOnlyItsAnswer is false) gets one: the head and a priming event (an event id, empty data: the
 * 2025-11-25 transport's), every message for the call as it comes, then the answer, and the stream ends. Why not the SDK
 * transport: on this path it parsed the message again with zod, built a web ReadableStream and Response per call and
 * encoded each event twice; together ~300 µs of a call that otherwise costs ~650 (docs/benchmarks-history.md).
 *
 * Resumable as the transport's streams are: every event is kept in the session's replay buffer under the stream's id
 * before it is written, so a client whose stream broke reconnects with `GET` and `Last-Event-ID`; while the call runs,
 * that GET is answered here (what it missed, then the rest as it comes); once the call has ended, the SDK transport
 * replays the buffer as it does for its own streams. A client that went away costs nothing more: the call runs to its
 * end and is recorded, and its messages wait in the (bounded) buffer. So does a client that stays connected but does
 * not read: past MAX_UNSENT_BYTES unread (#http/unsent) nothing more is written to it until it reads, and after
 * STALL_MS of reading nothing it is dropped. One call may send 1,000 log lines of 8 KiB and 10,000 progress
 * notifications; without the bound they all waited in this process's memory for such a client, call by call.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { header } from '#http/header';
import { sendJson } from '#http/send-json';
import { dropWhenNotTaken, overUnsentBound, STALL_MS, type UntakenOwners } from '#http/unsent';
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
  /** How long a connection that fell behind (MAX_UNSENT_BYTES unread) may read nothing before it is dropped. */
  stallMs?: number;
  /** Whom the answer's last write, left untaken, is charged to (#http/unsent). */
  owners?: UntakenOwners;
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
  /** The id of the last event written to the open connection. */
  private sent: string | undefined;
  /** Set while the open connection holds more than MAX_UNSENT_BYTES unread: nothing more is written until it drains. */
  private stalled: NodeJS.Timeout | undefined;
  /** The answer's event id, once the call has ended while its connection was behind. */
  private answerId: string | undefined;

  constructor(private readonly o: CallStreamOptions) {}

  /** Opens the stream on the POST's response: the head, and the priming event where the revision takes one. */
  open(res: ServerResponse): void {
    this.attach(res);
    res.writeHead(200, HEAD(this.o.sessionId));
    // Held (corked) for the next message up to HOLD_MS: a quick answer leaves with them in one write.
    res.cork();
    this.corked = true;
    this.hold = setTimeout(() => this.uncork(), HOLD_MS);
    if (this.o.priming) {
      this.sent = this.o.buffer.record(this.streamId, PRIMING);
      res.write(`id: ${this.sent}\ndata: \n\n`);
    } else {
      // Nothing to send yet: the client sees its stream open at once.
      this.uncork();
      res.flushHeaders();
    }
  }

  /** A message for the call (a notification or a request to the client), kept for replay and sent if connected. */
  send(message: JsonRpcCall): void {
    const kept = this.keep(message);
    if (kept === null) return;
    this.deliver(kept.id, kept.event);
    this.uncork();
  }

  /** The call's answer: kept, sent, and the stream ends. */
  finish(answer: JsonRpcResponse): void {
    const kept = this.keep(answer);
    if (kept !== null) this.endWith(kept);
  }

  /** Keeps a message in the replay buffer; its id and event as written, or null once the stream has ended. */
  private keep(message: JsonRpcCall | JsonRpcResponse): { id: string; event: string } | null {
    if (this.ended) return null;
    const json = JSON.stringify(message);
    const id = this.o.buffer.record(this.streamId, json);
    return { id, event: eventText(id, json) };
  }

  /**
   * Writes an event to the open connection, unless its client has left more than MAX_UNSENT_BYTES unread: then the
   * event waits in the replay buffer (with whatever else comes meanwhile) until the connection drains.
   */
  private deliver(id: string, event: string): void {
    const res = this.out;
    if (!res || res.destroyed || this.stalled) return;
    if (overUnsentBound(res)) return this.fallBehind(res);
    res.write(event);
    this.sent = id;
  }

  /**
   * Nothing more is written until the client reads what it has (`drain`); then what it has not been sent is written
   * from the replay buffer. A client that reads nothing for stallMs is dropped: it may reconnect with Last-Event-ID.
   */
  private fallBehind(res: ServerResponse): void {
    this.stalled = setTimeout(() => res.destroy(), this.o.stallMs ?? STALL_MS);
    res.once('drain', () => this.catchUp(res));
  }

  /** Writes what the connection has not been sent yet (what the buffer still keeps of it), and the end if it came. */
  private catchUp(res: ServerResponse): void {
    if (this.out !== res || res.destroyed) return;
    clearTimeout(this.stalled);
    this.stalled = undefined;
    for (const e of this.o.buffer.following(this.streamId, this.sent ?? '0')) {
      if (e.text === PRIMING) continue;
      if (overUnsentBound(res)) return this.fallBehind(res);
      res.write(eventText(e.id, e.text));
      this.sent = e.id;
    }
    if (!this.ended) return;
    this.stopTimers();
    this.out = null;
    // The answer sent: the stream ends. Pushed out of the session's buffer by its other streams before it could be: the
    // connection is dropped, not ended as if the call had no answer.
    if (this.sent === this.answerId) {
      res.end();
      dropWhenNotTaken(res, this.o.stallMs ?? STALL_MS, this.o.owners);
    } else res.destroy();
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
    this.sent = lastEventId;
    let missed = '';
    for (const e of this.o.buffer.after(lastEventId)) {
      if (e.text === PRIMING) continue;
      missed += eventText(e.id, e.text);
      this.sent = e.id;
    }
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
      // A connection that has fallen behind has bytes waiting already: it needs no keep-alive.
      if (res && !res.destroyed && !this.stalled) res.write(': keepalive\n\n');
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

  /** The hold and the keep-alive: a stream with nothing more to write needs neither. */
  private stopWriting(): void {
    clearTimeout(this.hold);
    this.hold = undefined;
    clearInterval(this.keepAlive);
    this.keepAlive = undefined;
    this.corked = false;
  }

  private stopTimers(): void {
    this.stopWriting();
    clearTimeout(this.stalled);
    this.stalled = undefined;
  }

  /**
   * Ends the stream, with its answer or none. A connection that has fallen behind gets the answer from the buffer
   * once it drains (catchUp), or is dropped if it never does; its client can still fetch it with Last-Event-ID.
   */
  private endWith(answer?: { id: string; event: string }): void {
    this.ended = true;
    // The stall timer stays while the connection is behind: catchUp ends it, or the timer drops it.
    this.stopWriting();
    const res = this.out;
    if (res && !res.destroyed) {
      if (this.stalled && answer !== undefined) {
        // Left open for catchUp, which ends it; the session forgets the call now (a reconnect is the SDK's to replay).
        this.answerId = answer.id;
        this.o.onEnd();
        return;
      }
      // end() also sends whatever was held (Node uncorks on end). A client that is not reading is not waited for.
      if (answer !== undefined) {
        res.end(answer.event);
        dropWhenNotTaken(res, this.o.stallMs ?? STALL_MS, this.o.owners);
      } else if (this.stalled) res.destroy();
      else res.end();
    }
    this.stopTimers();
    this.out = null;
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
    ...(o.owners ? { owners: o.owners } : {}),
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
