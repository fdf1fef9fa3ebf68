/**
 * Estate as an MCP client of one upstream, through the official SDK v2 Client, over stdio (a spawned child) or
 * Streamable HTTP, at the newest revision both sides speak (`versionNegotiation: auto`: a 2026-07-28 server is spoken
 * to statelessly, a 2025 one through initialize). Secrets come from environment variables NAMED at add time and are
 * resolved here, at connect time, never stored and never logged. A child gets a minimal environment (the SDK's
 * default: PATH, HOME, ...) plus what was named for it, never the whole environment of the serving process.
 */
import type { Readable } from 'node:stream';
import { Client, ProtocolError, SdkError, SdkErrorCode, StreamableHTTPClientTransport, type RequestOptions, type StandardSchemaV1, type Transport } from '@modelcontextprotocol/client';
import { getDefaultEnvironment, StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { DomainError } from '#domain/errors';
import type { UpstreamTarget } from '#domain/events';
import { listingPageOf, MAX_UPSTREAM_TOOLS, tooManyTools, type ListingPage, type UpstreamTool } from './candidate.ts';
import { EndpointPaces } from './event-pace.ts';
import { createUpstreamFetch, poolFor } from './http-fetch.ts';
import { useAnswerLines } from './stdio-answers.ts';
import { directoryProblem } from './target-flags.ts';

/** The stateless revision: no session, questions embedded in results, change notices on a listen stream. */
export const STATELESS_REVISION = '2026-07-28';
export const ESTATE_CLIENT_INFO = { name: 'estate', version: '0.1.0' };
/** A defence against an upstream whose cursor never converges. */
const MAX_PAGES = 1000;
/**
 * How long one listing may take in all, however many pages: each page has the connect timeout, and 1,000 pages each
 * answered just inside it kept one sync (the upstream's one sync slot, its share of the answer budget) open for hours.
 */
export const MAX_LISTING_MS = 5 * 60_000;

export interface UpstreamHooks {
  /** `notifications/tools/list_changed` from the upstream. */
  onToolsChanged?(): void;
  /** `notifications/message` from the upstream. */
  onLog?(params: Record<string, unknown>): void;
  /**
   * The upstream asks the user (`elicitation/create`); reject to answer it with an error. `key` is the question's key in
   * a 2026-07-28 upstream's `input_required` result, kept so Estate's own caller is asked under the same key.
   */
  onElicit?(params: Record<string, unknown>, key?: string): Promise<Record<string, unknown>>;
  /** The upstream asks the model (`sampling/createMessage`). */
  onSample?(params: Record<string, unknown>, key?: string): Promise<Record<string, unknown>>;
  /** The upstream asks for the client's roots (`roots/list`). */
  onRoots?(key?: string): Promise<Record<string, unknown>>;
  /** The connection ended (the child exited, or close()). */
  onClose?(): void;
  /** One line the child wrote on stderr. */
  onStderr?(line: string): void;
  /** `bytes` of the child's stderr were dropped unread: it writes more than STDERR_BYTES_PER_SECOND. */
  onStderrDropped?(bytes: number): void;
  /** The connection reported an error (the SDK's transport or protocol: a message past its bound, a flood, ...). */
  onError?(error: Error): void;
  /** This upstream sends faster than it is read (a stdio child's output, an HTTP event stream): not read on for `ms`. */
  onPaced?(ms: number): void;
}

export type ProgressListener = (progress: number, total?: number, message?: string) => void;

export interface UpstreamSession {
  readonly client: Client;
  /** The revision negotiated. */
  readonly protocolVersion: string | undefined;
  /** A progress token for one call, whose progress goes to `listener` until released (see ProgressRoutes). */
  trackProgress(listener: ProgressListener): { token: string; release(): void };
  /**
   * Every page; `signal` ends the listing (an answer of it dropped: ./answer-budget.ts); so does `maxListingMs`
   * (default MAX_LISTING_MS) in all.
   */
  listTools(signal?: AbortSignal, maxListingMs?: number): Promise<UpstreamTool[]>;
  close(): Promise<void>;
}

/** Resolve `{NAME: 'VAR'}` against the environment; a missing variable is a usage error naming both, never a value. */
export const resolveNamed = (ns: string, names: Record<string, string>, env: NodeJS.ProcessEnv, what: '--env' | '--header' | '--query'): Record<string, string> => {
  const out: Record<string, string> = {};
  for (const [name, variable] of Object.entries(names)) {
    const value = env[variable];
    if (value === undefined) throw new DomainError('usage', 'upstream-env-missing', `upstream ${ns}: environment variable ${variable} (for ${what} ${name}) is not set`);
    out[name] = value;
  }
  return out;
};

const transportFor = (ns: string, target: UpstreamTarget, env: NodeJS.ProcessEnv, hooks: UpstreamHooks): Transport => {
  if (target.transport === 'stdio') {
    // Spawning in a directory that is not there fails as `spawn <command> ENOENT`, naming the command, which exists.
    const problem = target.cwd !== undefined ? directoryProblem(target.cwd) : undefined;
    if (problem !== undefined) throw new Error(`working directory '${String(target.cwd).slice(0, 200)}' (--cwd): ${problem}`);
    const t = new StdioClientTransport({
      command: target.command,
      args: target.args,
      ...(target.cwd !== undefined ? { cwd: target.cwd } : {}),
      env: { ...getDefaultEnvironment(), ...resolveNamed(ns, target.env, env, '--env') },
      stderr: 'pipe',
    });
    // Read in linear time and at a pace, each answer charged to the call or sync that asked (./stdio-answers.ts).
    useAnswerLines(t, (ms) => hooks.onPaced?.(ms));
    // The child's stderr: with stderr 'pipe' the SDK hands out a PassThrough the child's pipe is piped into (typed as a
    // Stream), so pausing it pushes back through the pipe to the child.
    const stderr = t.stderr as Readable | null;
    if (stderr) {
      let buf = '';
      // A second's first STDERR_BYTES_PER_SECOND are looked at; the chunk past it is dropped unread, and the pipe is not
      // read again before the next second (the child waits to write).
      let second = 0;
      let taken = 0;
      stderr.on('data', (chunk: Buffer) => {
        const now = Date.now();
        if (Math.floor(now / 1000) !== second) {
          second = Math.floor(now / 1000);
          taken = 0;
        }
        taken += chunk.length;
        if (taken > STDERR_BYTES_PER_SECOND) {
          buf = '';
          hooks.onStderrDropped?.(chunk.length);
          stderr.pause();
          setTimeout(() => stderr.resume(), 1000 - (now % 1000)).unref();
          return;
        }
        buf += chunk.toString('utf8');
        let nl: number;
        while ((nl = buf.indexOf('\n')) >= 0) {
          hooks.onStderr?.(buf.slice(0, nl).slice(0, 2000));
          buf = buf.slice(nl + 1);
        }
        if (buf.length > 8192) buf = buf.slice(-8192);
      });
    }
    return t;
  }
  // One fetch a connection, to tell its link when its streams are paced; the kept-alive connections are the upstream's
  // own (poolFor), the paces (per upstream endpoint) shared by all (http-fetch.ts, event-pace.ts).
  const fetch = createUpstreamFetch(undefined, undefined, poolFor(ns), { paces: upstreamPaces, onPaced: (ms) => hooks.onPaced?.(ms) });
  return new StreamableHTTPClientTransport(urlOf(ns, target, env), { requestInit: { headers: resolveNamed(ns, target.headers, env, '--header') }, fetch });
};

/**
 * The address connected to: the stored URL with `--query` parameters from the environment. It is handed to the SDK
 * alone; what Estate logs or shows of an upstream is the stored target (describeTarget), and the SDK's own messages
 * strip a URL's query.
 */
export const urlOf = (ns: string, target: Extract<UpstreamTarget, { transport: 'http' }>, env: NodeJS.ProcessEnv): URL => {
  const url = new URL(target.url);
  for (const [name, value] of Object.entries(resolveNamed(ns, target.query ?? {}, env, '--query'))) url.searchParams.set(name, value);
  return url;
};

const upstreamPaces = new EndpointPaces();

/**
 * What of a stdio child's stderr is read, a second: its lines are only logged (at debug), yet reading and looking at
 * them cost the serving thread as much as the child cared to write: one writing 64 MiB of short lines held it 1.1 s
 * (another client's tools/list p50 23 ms, p99 127 ms beside it: `bench/upstream-flood.ts --transport stdio --stderr
 * 64`, docs/benchmarks-history.md's twenty-fourth pass). Past this in one clock second, the chunk that passes it is
 * dropped unread and the pipe is not read again before the next second (the child waits to write, as it would behind a
 * slow terminal); the link says so at most once per 10 s.
 */
export const STDERR_BYTES_PER_SECOND = 1024 * 1024;

/**
 * Upstream progress, routed by token as the transport reads each message, ahead of the SDK's dispatch. The SDK's own
 * `onprogress` loses a call's last progress when it arrives in the same read as the result: the SDK handles a response
 * at once (dropping the call's progress handler) but a notification a microtask later, so the progress finds no
 * handler. Estate's tokens are its own strings (`estate-<n>`), never an SDK request id; progress carrying any other
 * token is dropped, as is one that is not well formed (an upstream is hostile input: the caller's channel bounds the rest).
 */
class ProgressRoutes {
  private seq = 0;
  private readonly routes = new Map<string, ProgressListener>();

  track(listener: ProgressListener): { token: string; release(): void } {
    const token = `estate-${++this.seq}`;
    this.routes.set(token, listener);
    return { token, release: () => void this.routes.delete(token) };
  }

  /** One message as the transport read it: a progress notification for a tracked call is relayed now. */
  route(message: unknown): void {
    const m = message as { method?: unknown; id?: unknown; params?: Record<string, unknown> };
    if (m.method !== 'notifications/progress' || m.id !== undefined || typeof m.params !== 'object' || m.params === null) return;
    const { progressToken, progress, total, message: text } = m.params;
    const listener = typeof progressToken === 'string' ? this.routes.get(progressToken) : undefined;
    if (!listener || typeof progress !== 'number') return;
    listener(progress, typeof total === 'number' ? total : undefined, typeof text === 'string' ? text : undefined);
  }
}

/** Most content blocks one result may hold: past it the answer is refused before the SDK's reading of it. */
export const MAX_RESULT_BLOCKS = 10_000;
const CONTENT_TYPES = new Set(['text', 'image', 'audio', 'resource_link', 'resource']);

/**
 * A result's content blocks, counted and their types checked before the SDK reads the result. The SDK validates a
 * result whole and, when it fails, writes every issue into its error's message: 300,000 blocks of an unknown type
 * (5 MB, well inside what an answer may hold) held the serving thread ~20 s per attempt and took 2.4 GB. Such a result
 * is turned into the JSON-RPC error it amounts to, with a short message: the call ends `upstream_error`, nothing else
 * is read of it. (The message object is the transport's, read off the wire for this connection alone.)
 */
const refuseUnreadableContent = (message: unknown): void => {
  const m = message as { method?: unknown; result?: { content?: unknown }; error?: unknown };
  if (m.method !== undefined || typeof m.result !== 'object' || m.result === null || !Array.isArray(m.result.content)) return;
  const content = m.result.content as unknown[];
  let why: string | undefined;
  if (content.length > MAX_RESULT_BLOCKS) why = `its content has ${content.length} blocks, more than the ${MAX_RESULT_BLOCKS} a result may hold`;
  else {
    const at = content.findIndex((b) => typeof b !== 'object' || b === null || !CONTENT_TYPES.has((b as { type?: unknown }).type as string));
    if (at >= 0) {
      const type = (content[at] as { type?: unknown } | null)?.type;
      why = `content block #${at + 1} is ${typeof type === 'string' ? `of type ${JSON.stringify(type.slice(0, 40))}` : 'not a content block'}, not one of ${[...CONTENT_TYPES].join(', ')}`;
    }
  }
  if (why === undefined) return;
  delete m.result;
  m.error = { code: -32603, message: `Invalid result: ${why}` };
};

/** A tools/list page's result read as ./candidate.ts's listingPageOf reads it: the envelope only. */
const LISTING_PAGE: StandardSchemaV1<unknown, ListingPage> = {
  '~standard': {
    version: 1,
    vendor: 'estate',
    validate: (value) => {
      const page = listingPageOf(value);
      return typeof page === 'string' ? { issues: [{ message: page }] } : { value: page };
    },
  },
};

type RequestId = string | number;
const idOf = (m: unknown): RequestId | undefined => {
  const id = (m as { id?: unknown }).id;
  return typeof id === 'string' || typeof id === 'number' ? id : undefined;
};

/**
 * The pages of an upstream's tools/list, read leniently (./candidate.ts, listingPageOf): one malformed tool must not
 * fail the listing, and with it the detection of every other tool's change.
 *
 * On a 2025 connection the SDK validates a result only with the schema the request names, so the lenient one is given.
 * On a 2026-07-28 connection its wire codec first checks a tools/list result against the revision's own strict schema,
 * whatever schema the request names, and fails the page over any one tool. For that case the result is also kept as it
 * was read (the transport hands every message to `note` before the SDK sees it) for the requests of a listing under
 * way only, each taken back by the listing that sent it; a page the SDK refused as invalid is then read from it.
 */
export class ListingReader {
  /** Set while a listing sends its request: told the request's id (the SDK sends it synchronously). */
  private claim: ((id: RequestId) => void) | undefined;
  /** Results of listings' requests as read, by request id (undefined until answered); each removed by its listing. */
  private readonly read = new Map<RequestId, unknown>();

  constructor(transport: Transport) {
    const send = transport.send.bind(transport);
    transport.send = (message, options) => {
      if (this.claim && (message as { method?: unknown }).method === 'tools/list') {
        const id = idOf(message);
        if (id !== undefined) this.claim(id);
      }
      return send(message, options);
    };
  }

  /** Every message the transport reads, before the SDK does. */
  note(message: unknown): void {
    const m = message as { method?: unknown; result?: unknown };
    if (m.method !== undefined || m.result === undefined) return;
    const id = idOf(m);
    if (id !== undefined && this.read.has(id)) this.read.set(id, m.result);
  }

  async page(client: Client, cursor: string | undefined, options: RequestOptions): Promise<ListingPage> {
    let id: RequestId | undefined;
    let sent: Promise<ListingPage>;
    this.claim = (sentId) => {
      id = sentId;
      this.read.set(sentId, undefined);
    };
    try {
      sent = client.request({ method: 'tools/list', ...(cursor !== undefined ? { params: { cursor } } : {}) }, LISTING_PAGE, options);
    } finally {
      this.claim = undefined;
    }
    try {
      return await sent;
    } catch (e) {
      const result = id !== undefined ? this.read.get(id) : undefined;
      // Only a result the SDK refused as invalid, and only one that says it is complete (a 2026-07-28 result must).
      if (!(e instanceof SdkError) || e.code !== SdkErrorCode.InvalidResult || result === undefined || (result as { resultType?: unknown }).resultType !== 'complete') throw e;
      const page = listingPageOf(result);
      if (typeof page === 'string') throw new SdkError(SdkErrorCode.InvalidResult, `Invalid result for tools/list: ${page}`);
      return page;
    } finally {
      if (id !== undefined) this.read.delete(id);
    }
  }
}

export const openUpstream = async (ns: string, target: UpstreamTarget, env: NodeJS.ProcessEnv, hooks: UpstreamHooks = {}, timeoutMs = 30_000): Promise<UpstreamSession> => {
  const transport = transportFor(ns, target, env, hooks);
  const client = new Client(ESTATE_CLIENT_INFO, {
    capabilities: { elicitation: {}, sampling: {}, roots: {} },
    versionNegotiation: { mode: 'auto' },
  });
  const progress = new ProgressRoutes();
  const listing = new ListingReader(transport);
  // Set before connect: the SDK chains a handler found on the transport and calls it first, with every message.
  transport.onmessage = (message) => {
    progress.route(message);
    listing.note(message);
    refuseUnreadableContent(message);
  };
  client.setNotificationHandler('notifications/progress', () => undefined); // routed above, never by the SDK
  // On 2026-07-28 every question is embedded in an input_required result; the SDK hands it over with its key as the id.
  const keyOf = (id: unknown): string | undefined => (client.getNegotiatedProtocolVersion() === STATELESS_REVISION && typeof id === 'string' ? id : undefined);
  client.setNotificationHandler('notifications/tools/list_changed', () => hooks.onToolsChanged?.());
  client.setNotificationHandler('notifications/message', (n) => hooks.onLog?.(n.params as Record<string, unknown>));
  client.setRequestHandler('elicitation/create', async (req, ctx) => {
    if (!hooks.onElicit) throw new ProtocolError(-32601, 'elicitation is not relayed here');
    return (await hooks.onElicit(req.params as Record<string, unknown>, keyOf(ctx.mcpReq.id))) as never;
  });
  client.setRequestHandler('sampling/createMessage', async (req, ctx) => {
    if (!hooks.onSample) throw new ProtocolError(-32601, 'sampling is not relayed here');
    return (await hooks.onSample(req.params as Record<string, unknown>, keyOf(ctx.mcpReq.id))) as never;
  });
  client.setRequestHandler('roots/list', async (_req, ctx) => {
    const key = keyOf(ctx.mcpReq.id);
    // Roots belong to a caller. A 2025 server asks on its (shared) session and keeps the answer for every caller after
    // (server-filesystem replaces its allowed directories with it): only a question embedded in one call is answered.
    if (!hooks.onRoots || key === undefined) throw new ProtocolError(-32601, 'Estate relays roots only within one 2026-07-28 call');
    return (await hooks.onRoots(key)) as never;
  });
  client.onclose = () => hooks.onClose?.();
  client.onerror = (e) => hooks.onError?.(e);
  // The whole handshake has one deadline. The SDK's `timeout` bounds the initialize request only: an upstream that
  // never answered the POST of `notifications/initialized` left the connect (and with it every later call and sync of
  // the link, which wait for it) pending for ever. Past the deadline the connection is closed and the connect fails.
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`connecting took longer than ${timeoutMs} ms (the handshake was not answered)`)), timeoutMs + 1000);
  });
  try {
    await Promise.race([client.connect(transport, { timeout: timeoutMs }), deadline]);
  } catch (e) {
    await client.close().catch(() => undefined);
    throw e;
  } finally {
    clearTimeout(timer);
  }
  // A 2025 upstream logs only once asked to; ask for everything: each caller's own level is applied when relaying.
  // (On 2026-07-28 the level travels on each call instead.)
  if (client.getNegotiatedProtocolVersion() !== STATELESS_REVISION && client.getServerCapabilities()?.logging) {
    await client.setLoggingLevel('debug', { timeout: timeoutMs }).catch(() => undefined);
  }
  return {
    client,
    get protocolVersion() {
      return client.getNegotiatedProtocolVersion();
    },
    trackProgress: (listener) => progress.track(listener),
    async listTools(signal, maxListingMs = MAX_LISTING_MS) {
      // As the SDK's listTools does: a server that does not offer tools lists none.
      if (!client.getServerCapabilities()?.tools) return [];
      const out: UpstreamTool[] = [];
      let cursor: string | undefined;
      const overall = AbortSignal.timeout(maxListingMs);
      const ends = signal ? AbortSignal.any([signal, overall]) : overall;
      for (let page = 0; page < MAX_PAGES; page++) {
        if (overall.aborted) break;
        // Page by page (the SDK's listTools() without a cursor would read every page before anything is counted).
        let r: ListingPage;
        try {
          r = await listing.page(client, cursor, { timeout: timeoutMs, signal: ends });
        } catch (e) {
          if (overall.aborted && !signal?.aborted) break;
          throw e;
        }
        out.push(...r.tools);
        if (out.length > MAX_UPSTREAM_TOOLS) throw tooManyTools(ns, out.length); // no more pages read
        if (!r.nextCursor) return out;
        if (r.nextCursor === cursor) throw new Error(`upstream ${ns}: tools/list answered a page's cursor with the same cursor: the listing would never end`);
        cursor = r.nextCursor;
      }
      if (overall.aborted) throw new Error(`upstream ${ns}: tools/list did not end within ${maxListingMs} ms (${out.length} tools read): nothing of it is recorded`);
      throw new Error(`upstream ${ns}: tools/list did not end after ${MAX_PAGES} pages`);
    },
    close: async () => {
      // An HTTP session is ended with a DELETE (the spec's way; a stateful upstream otherwise keeps it until it expires),
      // briefly: an upstream that does not answer it does not hold the close up.
      if (transport instanceof StreamableHTTPClientTransport && transport.sessionId !== undefined) {
        await Promise.race([transport.terminateSession().catch(() => undefined), new Promise((r) => setTimeout(r, 2000).unref())]);
      }
      await client.close();
    },
  };
};

/**
 * Whether an error from the SDK means the upstream answered (a JSON-RPC error, or a result that is not one: an image
 * whose data is not base64, a content type MCP does not have) rather than did not (unavailable). An answer is not a
 * reason to send the call again, nor a failure of the upstream's health: five malformed answers opened the breaker for
 * every caller, and a read-only call was sent three times.
 */
export const upstreamAnswered = (e: unknown): boolean => e instanceof ProtocolError || (e instanceof SdkError && e.code === SdkErrorCode.InvalidResult);

/** A message that can be shown to a caller: the upstream's own words for a JSON-RPC error, else a short cause. */
export const describeFailure = (e: unknown): string => {
  if (e instanceof ProtocolError) return e.message;
  // The SDK's reading of a malformed result (its schema's words on the upstream's data): cut, it can list every field.
  if (e instanceof SdkError && e.code === SdkErrorCode.InvalidResult) return e.message.length > 500 ? `${e.message.slice(0, 500)}…` : e.message;
  if (e instanceof SdkError) return e.code === SdkErrorCode.RequestTimeout ? 'timed out' : e.code === SdkErrorCode.ConnectionClosed ? 'connection closed' : e.message;
  return e instanceof Error ? e.message : String(e);
};
