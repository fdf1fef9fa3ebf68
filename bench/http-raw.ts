/**
 * The MCP bench's load generator: HTTP/1.1 POSTs on raw keep-alive sockets, one request at a time per socket (no
 * pipelining), the request written in one piece and the response read by a minimal parser (status line, the headers
 * the bench reads, a Content-Length or chunked body).
 *
 * Why not node:http's client: on this bench's two cores the load generator shares the CPU with the server under test,
 * and node:http's client spends ~90 µs of CPU per request (ClientRequest, the agent's socket pool, IncomingMessage and
 * its stream events): a third of the machine's work per call at 16 in flight, taken from whichever server is measured,
 * so it capped the faster server more than the slower one. Both servers are driven by this same client.
 */
import { connect, type Socket } from 'node:net';

export interface RawReply {
  status: number;
  /** Header names in lower case; a repeated header keeps its last value. */
  headers: Record<string, string>;
  text: string;
}

/** The largest response head and body the bench accepts: a reply beyond is a bench error, not a figure. */
const MAX_HEAD = 64 * 1024;
const MAX_BODY = 64 * 1024 * 1024;

interface Waiter {
  resolve(r: RawReply): void;
  reject(e: Error): void;
}

/** One keep-alive connection: a request is answered before the next is written. */
class Connection {
  readonly socket: Socket;
  /** What has arrived of the current response: the first `size` bytes. */
  private buffer = Buffer.allocUnsafe(64 * 1024);
  private size = 0;
  private waiter: Waiter | null = null;
  private gotBytes = false;
  /** The response's head, once it is in. */
  private head: Head | null = null;
  closed = false;

  constructor(host: string, port: number, onClose: (c: Connection) => void) {
    this.socket = connect({ host, port, noDelay: true });
    this.socket.on('data', (b: Buffer) => this.onData(b));
    const end = (why: string): void => {
      if (this.closed) return;
      this.closed = true;
      onClose(this);
      const w = this.waiter;
      this.waiter = null;
      // A socket the server closed before answering at all may be retried (the server's keep-alive timeout).
      if (w) w.reject(Object.assign(new Error(`connection ${why} before the response ended`), { retryable: !this.gotBytes }));
    };
    this.socket.on('error', (e) => end(`failed (${e.message})`));
    this.socket.on('close', () => end('closed'));
  }

  send(head: string, body: string): Promise<RawReply> {
    return new Promise((resolve, reject) => {
      this.waiter = { resolve, reject };
      this.size = 0;
      this.head = null;
      this.gotBytes = false;
      this.socket.write(head + body);
    });
  }

  /**
   * Pieces are copied as they arrive into one receive buffer that the connection keeps (grown, never shrunk), and the
   * response is parsed from it. Joining the pieces into a new buffer at every piece (and parsing again) copied a 262 KiB
   * tools/list page ~4 times into fresh memory, which on the machine it was measured on costs ~13 µs per 4 KiB page faulted in:
   * ~4.5 ms of client time per full list of two pages (11.3 → 6.8 ms), counted as the server's.
   */
  private onData(b: Buffer): void {
    this.gotBytes = true;
    if (this.size + b.length > this.buffer.length) {
      const grown = Buffer.allocUnsafe(Math.max(this.buffer.length * 2, this.size + b.length));
      this.buffer.copy(grown, 0, 0, this.size);
      this.buffer = grown;
    }
    b.copy(this.buffer, this.size);
    this.size += b.length;
    const received = this.buffer.subarray(0, this.size);
    let reply: RawReply | null;
    try {
      this.head ??= parseHead(received);
      if (!this.head) return;
      const { start, length } = this.head;
      if (length !== null ? this.size < start + length : !received.subarray(-LAST_CHUNK.length).equals(LAST_CHUNK)) return;
      reply = bodyOf(received, this.head);
    } catch (e) {
      const w = this.waiter;
      this.waiter = null;
      this.socket.destroy();
      w?.reject(e as Error);
      return;
    }
    if (!reply) return;
    const w = this.waiter;
    this.waiter = null;
    this.size = 0;
    this.head = null;
    w?.resolve(reply);
  }
}

/** A chunked body's end: the zero-length last chunk and the empty line after it (a hint for when to parse: bodyOf decides). */
const LAST_CHUNK = Buffer.from('0\r\n\r\n');

/** What a response's head says: its status and headers, where its body starts, and its length (null: chunked). */
interface Head {
  status: number;
  headers: Record<string, string>;
  start: number;
  length: number | null;
}

/** The head of a response in `buf`, or null while more is to come. Throws on what this parser does not take. */
const parseHead = (buf: Buffer): Head | null => {
  const headEnd = buf.indexOf('\r\n\r\n');
  if (headEnd < 0) {
    if (buf.length > MAX_HEAD) throw new Error(`response head over ${MAX_HEAD} bytes`);
    return null;
  }
  const lines = buf.toString('latin1', 0, headEnd).split('\r\n');
  const status = /^HTTP\/1\.[01] (\d{3})/.exec(lines[0] ?? '');
  if (!status) throw new Error(`not an HTTP/1.x status line: ${JSON.stringify(lines[0]?.slice(0, 80))}`);
  const headers: Record<string, string> = {};
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i]!;
    const colon = line.indexOf(':');
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  const start = headEnd + 4;
  const length = headers['content-length'];
  if (length !== undefined) {
    const n = Number(length);
    if (!Number.isSafeInteger(n) || n < 0 || n > MAX_BODY) throw new Error(`bad content-length ${JSON.stringify(length)}`);
    return { status: Number(status[1]), headers, start, length: n };
  }
  if (headers['transfer-encoding']?.toLowerCase() === 'chunked') return { status: Number(status[1]), headers, start, length: null };
  // Neither: the body runs to the connection's end, which a keep-alive bench does not use.
  throw new Error('response with neither content-length nor chunked encoding');
};

/** The whole response in `buf` (which starts with `head`), or null while more is to come. */
const bodyOf = (buf: Buffer, head: Head): RawReply | null => {
  const { status, headers, start, length } = head;
  if (length !== null) return buf.length < start + length ? null : { status, headers, text: buf.toString('utf8', start, start + length) };
  const parts: Buffer[] = [];
  let at = start;
  for (;;) {
    const lineEnd = buf.indexOf('\r\n', at);
    if (lineEnd < 0) return null;
    const n = parseInt(buf.toString('latin1', at, lineEnd), 16);
    if (!Number.isSafeInteger(n) || n < 0 || n > MAX_BODY) throw new Error('bad chunk size');
    const dataStart = lineEnd + 2;
    if (n === 0) {
      // No trailers are sent by the servers measured: the body ends with the empty line after the last chunk.
      if (buf.length < dataStart + 2) return null;
      return { status, headers, text: Buffer.concat(parts).toString('utf8') };
    }
    if (buf.length < dataStart + n + 2) return null;
    parts.push(buf.subarray(dataStart, dataStart + n));
    at = dataStart + n + 2;
  }
};

/** A whole response in `buf`, or null while more is to come. Throws on what this parser does not take. */
export const parseResponse = (buf: Buffer): RawReply | null => {
  const head = parseHead(buf);
  return head ? bodyOf(buf, head) : null;
};

/** A pool of keep-alive connections to one host:port; as many as requests in flight. */
export class RawHttpClient {
  private idle: Connection[] = [];
  private readonly host: string;
  private readonly port: number;

  constructor(host: string, port: number) {
    this.host = host;
    this.port = port;
  }

  async post(path: string, headers: Record<string, string>, body: string): Promise<RawReply> {
    let head = `POST ${path} HTTP/1.1\r\nhost: ${this.host}:${this.port}\r\n`;
    for (const name in headers) head += `${name}: ${headers[name]}\r\n`;
    head += `content-length: ${Buffer.byteLength(body)}\r\n\r\n`;
    for (let attempt = 0; ; attempt++) {
      const c = this.idle.pop() ?? new Connection(this.host, this.port, (gone) => this.forget(gone));
      // An idle connection never keeps the bench's process alive; one waiting for its answer does.
      c.socket.ref();
      try {
        const reply = await c.send(head, body);
        if (reply.headers.connection?.toLowerCase() === 'close') c.socket.destroy();
        else if (!c.closed) {
          c.socket.unref();
          this.idle.push(c);
        }
        return reply;
      } catch (e) {
        if (attempt === 0 && (e as { retryable?: boolean }).retryable) continue;
        throw e;
      }
    }
  }

  private forget(c: Connection): void {
    const i = this.idle.indexOf(c);
    if (i >= 0) this.idle.splice(i, 1);
  }

  close(): void {
    for (const c of this.idle) c.socket.destroy();
    this.idle = [];
  }
}

const clients = new Map<string, { client: RawHttpClient; host: string; port: string; path: string }>();

/** POST to a URL through the shared client for its host and port (one pool per server for the bench's life). */
export const rawPost = (url: string, headers: Record<string, string>, body: string): Promise<RawReply> => {
  let target = clients.get(url);
  if (!target) {
    const u = new URL(url);
    target = { client: [...clients.values()].find((t) => t.host === u.hostname && t.port === u.port)?.client ?? new RawHttpClient(u.hostname, Number(u.port)), host: u.hostname, port: u.port, path: u.pathname + u.search };
    clients.set(url, target);
  }
  return target.client.post(target.path, headers, body);
};
