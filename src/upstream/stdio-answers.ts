/**
 * How a stdio upstream's output is read: line by line in time linear in its size, and each answer charged to the
 * call or sync that asked for it (./answer-budget.ts), as an HTTP upstream's answers are (./http-fetch.ts).
 *
 * The SDK's StdioClientTransport reads through its ReadBuffer, which joins every chunk of the pipe to all that came
 * before it and searches the whole again for a newline: one 10 MiB answer, read in the pipe's 64 KiB chunks, held the
 * serving thread for 2.4 s (`bench/stdio-read.ts`), every other caller of the process waiting. And its answers were
 * charged to no account: a listing of many pages, or many calls answered at once, held what they held.
 *
 * The SDK's transport stays (its spawning, its shutdown, and the version negotiation's probe of a disposable sibling
 * process need that exact class): only the reader it holds is replaced, on the instance (`useAnswerLines`), and its
 * `send` notes which account each request was sent from. The replaced reader keeps the SDK's contract: the same
 * message parser, lines that are not JSON skipped, and the same bound on what one message may hold (past it the
 * append throws and the SDK closes the connection).
 */
import { deserializeMessage, STDIO_DEFAULT_MAX_BUFFER_SIZE, type JSONRPCMessage, type Transport } from '@modelcontextprotocol/client';
import { currentAnswerAccount, type AnswerAccount } from './answer-budget.ts';
import { LinePace, lineEnds } from './event-pace.ts';

const NEWLINE = 0x0a;
const CARRIAGE_RETURN = 0x0d;
const OPEN_BRACE = 0x7b;

/**
 * Lines that are not JSON-RPC messages one connection may send before it is closed. A server that prints to stdout by
 * mistake sends a few; one that sends nothing else held the serving thread: each such line cost a failed parse, ~4 µs,
 * so a MiB of newlines took 4.4 s (the SDK's reader too). A line that cannot be a message (not starting with `{`) is
 * now passed over without a parse, and past this many the connection is closed (its child is restarted, with backoff).
 */
export const MAX_JUNK_LINES = 1000;

/**
 * Lines one connection may send in one second (clock second). Each message read costs the serving thread its parse
 * and the SDK's dispatch (~40 µs a log notification: 30,000 of them held it 1.1 s, another client's tools/list
 * waiting up to 466 ms), so an upstream writing small valid notifications as fast as its pipe takes them would hold
 * it as junk did. The output is read at the pace of HTTP upstreams' event streams (./event-pace.ts: 6,000 lines a
 * second, the child's pipe pushing back past it); past this many in one second anyway (a pace that did not hold) the
 * connection is closed the same way as for junk.
 */
export const MAX_LINES_PER_SECOND = 20_000;

/** Where the line's first byte that is not a space, tab or carriage return is; -1 when there is none. */
const firstByteAt = (line: Buffer): number => {
  for (let i = 0; i < line.length; i++) {
    const b = line[i];
    if (b !== 0x20 && b !== 0x09 && b !== CARRIAGE_RETURN) return i;
  }
  return -1;
};
/** Requests whose account is noted at most, before those of calls that ended are swept. */
const SWEEP_AT = 1024;

type Id = string | number;

const idOf = (m: unknown): Id | undefined => {
  const id = (m as { id?: unknown }).id;
  return typeof id === 'string' || typeof id === 'number' ? id : undefined;
};
const isRequest = (m: unknown): boolean => typeof (m as { method?: unknown }).method === 'string' && idOf(m) !== undefined;
const isResponse = (m: unknown): boolean => (m as { method?: unknown }).method === undefined && idOf(m) !== undefined;

/** The reader: the SDK ReadBuffer's three methods, in linear time, charging answers to their accounts. */
export class AnswerLines {
  private chunks: Buffer[] = [];
  /** Bytes held in `chunks`. */
  private held = 0;
  /** Where the search for the next newline goes on: chunks before it were searched already. */
  private searchFrom = 0;
  /** Bytes of the first chunk already read (a line ended in it). */
  private offset = 0;
  /** Lines read that were not JSON-RPC messages. */
  private junk = 0;
  /** The clock second lines are being counted in, and how many came in it. */
  private second = 0;
  private inSecond = 0;
  /** Why nothing more of this connection is read (its next append throws it): the transport then closes. */
  private givenUp: string | undefined;
  /** The account each request still unanswered was sent from. */
  private readonly accounts = new Map<Id, AnswerAccount>();

  /**
   * `hold`: stop reading the child's output for so many ms (the pace's wait); absent, the output is not paced (a test
   * of the reader alone).
   */
  constructor(
    readonly maxBytes: number = STDIO_DEFAULT_MAX_BUFFER_SIZE,
    private readonly hold?: (ms: number) => void,
    private readonly pace: LinePace = new LinePace(),
  ) {}

  /** Note the account a request is sent from (the call or sync running now), so that its answer is charged to it. */
  sent(message: JSONRPCMessage): void {
    if (!isRequest(message)) return;
    const account = currentAnswerAccount();
    if (!account) return;
    if (this.accounts.size >= SWEEP_AT) for (const [id, a] of this.accounts) if (a.isClosed) this.accounts.delete(id);
    this.accounts.set(idOf(message) as Id, account);
  }

  append(chunk: Buffer): void {
    if (this.givenUp !== undefined) {
      this.clear();
      throw new Error(this.givenUp);
    }
    if (this.held + chunk.length > this.maxBytes) {
      this.clear();
      throw new Error(`ReadBuffer exceeded maximum size of ${this.maxBytes} bytes`);
    }
    this.chunks.push(chunk);
    this.held += chunk.length;
    if (this.hold) {
      const ms = this.pace.take(lineEnds(chunk));
      if (ms > 0) this.hold(ms);
    }
  }

  /** The next message, or null until a whole line is in. An answer its account refuses is dropped here. */
  readMessage(): JSONRPCMessage | null {
    for (;;) {
      const line = this.nextLine();
      if (line === null) return null;
      this.giveUpIfFlooding();
      if (this.givenUp !== undefined) {
        // Nothing more of this connection is read: the next append closes it.
        this.clear();
        return null;
      }
      const start = firstByteAt(line);
      if (start < 0 || line[start] !== OPEN_BRACE) {
        this.countJunk();
        continue;
      }
      let message: JSONRPCMessage;
      try {
        const end = line[line.length - 1] === CARRIAGE_RETURN ? line.length - 1 : line.length;
        message = deserializeMessage(line.toString('utf8', start, end));
      } catch (e) {
        // Not JSON (passed over, as the SDK does), or JSON that is no JSON-RPC message (thrown on to the transport,
        // which reports it, as the SDK does): either way one more line that is not a message.
        this.countJunk();
        if (!(e instanceof SyntaxError)) throw e;
        continue;
      }
      if (!isResponse(message)) return message;
      const id = idOf(message) as Id;
      const account = this.accounts.get(id);
      this.accounts.delete(id);
      if (!account || account.charge(line.length)) return message;
      // Refused: the answer is gone, and the call or sync that waits for it ends now with the refusal.
      if (account.refusal) account.fail(account.refusal);
    }
  }

  private giveUpIfFlooding(): void {
    const second = Math.floor(Date.now() / 1000);
    if (second !== this.second) {
      this.second = second;
      this.inSecond = 0;
    }
    if (++this.inSecond > MAX_LINES_PER_SECOND) this.givenUp ??= `the upstream sent more than ${MAX_LINES_PER_SECOND} lines in one second`;
  }

  private countJunk(): void {
    if (++this.junk > MAX_JUNK_LINES) this.givenUp ??= `the upstream sent more than ${MAX_JUNK_LINES} lines that are not JSON-RPC messages`;
  }

  clear(): void {
    this.chunks = [];
    this.offset = 0;
    this.held = 0;
    this.searchFrom = 0;
  }

  private nextLine(): Buffer | null {
    for (let i = this.searchFrom; i < this.chunks.length; i++) {
      const chunk = this.chunks[i] as Buffer;
      const at = chunk.indexOf(NEWLINE, i === 0 ? this.offset : 0);
      if (at < 0) continue;
      let line: Buffer;
      if (i === 0) {
        // The usual case, many lines in one chunk: a view of it, and the chunk kept until it is read through.
        line = chunk.subarray(this.offset, at);
      } else {
        const parts = [(this.chunks[0] as Buffer).subarray(this.offset), ...this.chunks.slice(1, i), chunk.subarray(0, at)];
        line = Buffer.concat(parts);
        this.chunks = this.chunks.slice(i);
      }
      this.offset = at + 1;
      if (this.offset === (this.chunks[0] as Buffer).length) {
        this.chunks.shift();
        this.offset = 0;
      }
      this.held -= line.length + 1;
      this.searchFrom = 0;
      return line;
    }
    this.searchFrom = this.chunks.length;
    return null;
  }
}

/**
 * Give an SDK StdioClientTransport the reader above. False when the transport does not hold its reader where this
 * SDK version does (an upgrade moved it): it then reads as the SDK does, and a unit test fails to say so.
 */
export const useAnswerLines = (transport: Transport, onPaced?: (ms: number) => void): boolean => {
  const t = transport as Transport & { _readBuffer?: { append?: unknown; readMessage?: unknown; clear?: unknown }; _process?: { stdout?: NodeJS.ReadableStream | null } };
  const sdk = t._readBuffer;
  if (typeof sdk?.append !== 'function' || typeof sdk.readMessage !== 'function' || typeof sdk.clear !== 'function') return false;
  // The pace's wait: the child's output is not read meanwhile (its pipe fills, and it waits to write).
  let resumeAt: NodeJS.Timeout | undefined;
  const hold = (ms: number): void => {
    const out = t._process?.stdout;
    if (!out) return;
    out.pause();
    clearTimeout(resumeAt);
    resumeAt = setTimeout(() => out.resume(), ms);
    resumeAt.unref();
    onPaced?.(ms);
  };
  const lines = new AnswerLines(undefined, hold);
  t._readBuffer = lines;
  const send = transport.send.bind(transport);
  transport.send = (message, options) => {
    lines.sent(message);
    return send(message, options);
  };
  return true;
};
