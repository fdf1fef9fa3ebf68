/**
 * `estate/client`: a tools cache for an agent host, around an official MCP SDK v2 `Client` of either revision family
 * (SPEC §10). `list()` answers from cache until the list is invalid:
 * - 2026-07-28 (stateless): the result's `ttlMs` has elapsed, or a `subscriptions/listen` stream said the list changed;
 * - 2025 revisions (sessions): the session got `notifications/tools/list_changed`;
 * - either: a change message for a listed tool arrived on an optional change feed (`estate/changes` over Kafka), or
 *   `options.ttlMs` (a client-side bound that overrides the server's) elapsed.
 * `call(name, args)` pins the version the cache last listed (`_meta["io.estate/version"]`), so a run calls exactly what
 * it was shown — even after an invalidation, until `list()` refreshes.
 *
 * The cache owns the client's `notifications/tools/list_changed` handler (the SDK keeps one handler per method); pass
 * `onListChanged` to hear it too.
 *
 * A change message reaches the feed and the server's replicas at about the same time, and the replica the list is
 * asked of may not have applied it yet: a list fetched at once can be the old one, which would then be held as valid
 * until the next change. So the list fetched after a change message is checked against it where the change should
 * show (a newer version of a listed tool, listed at that version or a later one; the deprecation or retirement of the
 * listed version, listed no more), and fetched again after CONFIRM_DELAYS_MS while it does not. A
 * change this caller cannot see (a version outside its access) never shows: the list is held after the last try,
 * ~0.4 s later.
 *
 * A list is read from a server that may be broken or hostile, so its reading is bounded: at most `maxTools` tools
 * (the walk stops at the page that passes it), at most `maxPages` pages, and `listTimeoutMs` for the whole fetch (every
 * page, and the fetches again after a change message). A list past a bound, or one that lists a name twice, is refused
 * with a ToolsListError and nothing of it is held. The bytes of one page can only be bounded at the transport, since
 * the SDK reads and parses a whole message before the cache sees a tool of it: `boundedFetch` (./bounded-fetch.ts),
 * given to the SDK's StreamableHTTPClientTransport as its `fetch`, cuts a message past `maxMessageBytes`, and the page
 * is then refused here as past a bound of the cache's own (ToolsListBoundError, `maxMessageBytes`). Over stdio the
 * SDK bounds a line itself (StdioClientTransport's `maxBufferSize`, 10 MiB: past it the connection is closed). After a
 * failed fetch, `list()`, `versionOf()` and `call()` agree: nothing is held (the default), or the last good list is
 * (`staleIfError`).
 */
import type { CallToolResult, Client, ListToolsResult, RequestOptions, Tool } from '@modelcontextprotocol/client';
import { compareVersions, isStrictSemver } from '#domain/semver';
import type { CatalogueChange, ChangeFeed } from './changes.ts';
import { MessageTooLargeError } from './bounded-fetch.ts';

export { boundedFetch, DEFAULT_MAX_MESSAGE_BYTES, DEFAULT_MAX_REOPEN_DELAY_MS, MessageTooLargeError, type BoundedFetchOptions, type FetchLike, type MessageBound } from './bounded-fetch.ts';

export type InvalidationSource = 'ttl' | 'list_changed' | 'listen' | 'change_feed' | 'manual';

export interface ToolsCacheOptions {
  /** A client-side bound on how long a list is served (ms). Default: the server's `ttlMs` (2026), else unbounded. */
  ttlMs?: number;
  /** Open a `subscriptions/listen` stream on a 2026-07-28 connection (default true). */
  listen?: boolean;
  /** A feed of change messages (`consumeChanges(...)` from `estate/changes`); a change for a listed tool invalidates. */
  changes?: ChangeFeed;
  /** Also told when the server says the list changed. */
  onListChanged?: () => void;
  /** Clock (ms), for tests. */
  now?: () => number;
  /** Waits between the fetches that check a list against a change message (default CONFIRM_DELAYS_MS); for tests. */
  confirmDelaysMs?: readonly number[];
  /** At most this many tools in one list (default DEFAULT_MAX_TOOLS, 100,000); past it the list is refused. */
  maxTools?: number;
  /**
   * At most this many pages in one list (default DEFAULT_MAX_PAGES, 64: the SDK's own `listMaxPages` default, which
   * does not apply here since the cache walks the pages itself).
   */
  maxPages?: number;
  /**
   * How long one fetch of the list may take in all (ms; default DEFAULT_LIST_TIMEOUT_MS, 60 s): every page, and the
   * fetches again after a change message. Each page's request is aborted at the deadline.
   */
  listTimeoutMs?: number;
  /**
   * When fetching the list fails (an error, a bound passed), serve the last good list, stale, instead of throwing
   * (default false: the error is thrown and nothing is held, so `versionOf` and `call` pin nothing either).
   */
  staleIfError?: boolean;
}

export interface ListOptions {
  /**
   * Stops this caller's wait: `list()` rejects with `signal.reason`. A fetch shared with other callers goes on for them;
   * one that no caller waits for any more is abandoned (its request cancelled).
   */
  signal?: AbortSignal;
}

export interface ToolsCacheStats {
  hits: number;
  misses: number;
  invalidations: number;
  invalidationsBySource: Record<InvalidationSource, number>;
  /** tools/list requests made on the client's behalf (a list with several pages counts once per page walk). */
  lists: number;
  calls: number;
  /** Lists fetched again because the one before did not show a change message's change yet. */
  confirmRetries: number;
  /** Fetches of the list that failed (an error from the server, a bound passed); a caller's abort is not counted. */
  listErrors: number;
  /** Failed fetches answered with the last good list (`staleIfError`). */
  staleServed: number;
}

export interface ToolsCache {
  /** The full tool list (all pages): from cache while valid, else fetched (bounded: ToolsCacheOptions). */
  list(options?: ListOptions): Promise<Tool[]>;
  /**
   * Call a tool at the version last listed (fetching the list first if none is held; `signal` stops that wait too).
   */
  call(name: string, args?: Record<string, unknown>, options?: { meta?: Record<string, unknown>; signal?: AbortSignal }): Promise<CallToolResult>;
  /** The version last listed for a tool, if any. */
  versionOf(name: string): string | undefined;
  /** Mark the held list invalid (the next `list()` fetches). */
  invalidate(source?: InvalidationSource): void;
  stats(): ToolsCacheStats;
  /** Stop listening (the client itself stays open). */
  close(): Promise<void>;
}

const VERSION_KEY = 'io.estate/version';
const STATELESS = '2026-07-28';
/** After a change message, a list that does not show it yet is fetched again after these waits (ms). */
export const CONFIRM_DELAYS_MS: readonly number[] = [25, 100, 250];
export const DEFAULT_MAX_TOOLS = 100_000;
export const DEFAULT_MAX_PAGES = 64;
export const DEFAULT_LIST_TIMEOUT_MS = 60_000;
/** setTimeout's largest delay. */
const MAX_TIMER_MS = 2_147_483_647;

/** A tools list the cache refused: nothing of it is held. */
export class ToolsListError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'ToolsListError';
  }
}

const plural = (n: number, one: string): string => `${n} ${one}${n === 1 ? '' : 's'}`;

/**
 * A tools list that passed one of the cache's bounds. `figure` is the figure that passed `limit`: the tools listed
 * (`maxTools`), the pages the server would have had read (`maxPages`), the ms the fetch took (`listTimeoutMs`), the
 * bytes of a page read when it was cut or its declared Content-Length (`maxMessageBytes`: the transport's bound, set
 * with `boundedFetch`; `cause` is the MessageTooLargeError).
 */
export class ToolsListBoundError extends ToolsListError {
  constructor(
    readonly bound: 'maxTools' | 'maxPages' | 'listTimeoutMs' | 'maxMessageBytes',
    readonly limit: number,
    readonly figure: number,
    /** What had been read when the list was given up. */
    readonly read: { tools: number; pages: number },
    options?: ErrorOptions,
  ) {
    const got = `${plural(read.tools, 'tool')} read in ${plural(read.pages, 'page')}`;
    const cut = MessageTooLargeError.from(options?.cause);
    super(
      bound === 'maxTools'
        ? `tools/list refused: more than maxTools (${limit}) tools: ${got}, no further page asked for`
        : bound === 'maxPages'
          ? `tools/list refused: more than maxPages (${limit}) pages: ${got}, the next page not asked for`
          : bound === 'maxMessageBytes'
            ? `tools/list refused: a page of more than maxMessageBytes (${limit}) bytes${cut ? ` from ${cut.url}` : ''} (${
                cut?.where === 'content-length' ? `Content-Length ${figure}` : `cut after ${figure} bytes`
              }): ${got} before it, the rest not read`
            : `tools/list refused: not complete within listTimeoutMs (${limit} ms): ${got} in ${figure} ms, the request abandoned`,
      options,
    );
    this.name = 'ToolsListBoundError';
  }
}

/** A tools list that lists one name twice: which of the two a call would meet is not known, so neither is pinned. */
export class DuplicateToolNameError extends ToolsListError {
  constructor(
    readonly tool: string,
    /** The versions (`_meta["io.estate/version"]`) of the first and the second listing of the name. */
    readonly versions: readonly [string | undefined, string | undefined],
  ) {
    super(`tools/list refused: the tool '${tool}' is listed twice (${versions.map((v) => v ?? 'no version').join(' and ')}); a server lists each name once`);
    this.name = 'DuplicateToolNameError';
  }
}

/**
 * What the next fetched list must show of the change messages for one listed tool since the last fetch: one per tool,
 * however many messages came (the topic is not trusted, and a caller may not list for a long while).
 */
interface Expected {
  /** A published version newer than the listed one: listed at it or a later one (if this caller may see it). */
  atLeast?: string;
  /** The listed version, deprecated or retired: listed no more. */
  gone?: string;
}

const isNewer = (version: string, than: string | undefined): boolean =>
  than === undefined || (isStrictSemver(version) && isStrictSemver(than) && compareVersions(version, than) > 0);

/** Folds a change message into what the list must show; anything else may leave the list as it was. */
const foldChange = (e: Expected, change: CatalogueChange, listed: string | undefined): Expected => {
  if (change.event === 'ToolVersionPublished') {
    if (listed !== undefined && isNewer(change.version, listed) && isNewer(change.version, e.atLeast)) e.atLeast = change.version;
  } else if (change.version === listed) e.gone = change.version;
  return e;
};

/** Whether a list showing `shown` for the tool shows what was expected of it. */
const shows = (e: Expected, shown: string | undefined): boolean =>
  (e.atLeast === undefined || (shown !== undefined && isStrictSemver(shown) && !isNewer(e.atLeast, shown))) && (e.gone === undefined || shown !== e.gone);

/** Two sets of expectations for one tool as one: the newer `atLeast`, and `gone` from either. */
const mergeExpected = (a: Expected, b: Expected): Expected => ({
  ...(a.atLeast !== undefined || b.atLeast !== undefined ? { atLeast: b.atLeast === undefined || (a.atLeast !== undefined && isNewer(a.atLeast, b.atLeast)) ? a.atLeast : b.atLeast } : {}),
  ...(a.gone !== undefined || b.gone !== undefined ? { gone: a.gone ?? b.gone } : {}),
});

interface Held {
  tools: Tool[];
  byName: Map<string, Tool>;
  expiresAt: number;
  valid: boolean;
}

const versionOfTool = (t: Tool | undefined): string | undefined => {
  const v = t?._meta?.[VERSION_KEY];
  return typeof v === 'string' ? v : undefined;
};

/** A count option: an integer >= 1, or Infinity for no bound. */
const checkCount = (name: string, value: number | undefined): void => {
  if (value !== undefined && !(value === Number.POSITIVE_INFINITY || (Number.isInteger(value) && value >= 1))) {
    throw new RangeError(`${name} must be an integer >= 1 (or Infinity), got ${String(value)}`);
  }
};

/**
 * The SDK's own per-page filter (SEP-2243: a tool with an invalid `x-mcp-header` declaration is excluded), which its
 * `listTools({cursor})` applies to every page it returns. The first page is asked with `request()` (`listTools()`
 * without a cursor would walk every page before the cache could count one), so the filter is applied to it here.
 */
const sdkPageFilter = (client: Client): ((page: ListToolsResult) => void) => {
  const filter = (client as unknown as { _excludeInvalidXMcpHeaderTools?: unknown })._excludeInvalidXMcpHeaderTools;
  return typeof filter === 'function' ? (page) => void filter.call(client, page) : () => undefined;
};

/** `promise`, or `signal`'s reason as soon as it is aborted (what `promise` does then is left to its owner). */
const until = <T>(promise: Promise<T>, signal: AbortSignal): Promise<T> => {
  if (signal.aborted) return Promise.reject(signal.reason as Error);
  let onAbort: (() => void) | undefined;
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => {
      onAbort = () => reject(signal.reason as Error);
      signal.addEventListener('abort', onAbort, { once: true });
    }),
  ]).finally(() => signal.removeEventListener('abort', onAbort!));
};

/** A fetch of the list that no caller waits for any more is given up with this reason. */
const ABANDONED = 'every caller of this tools/list stopped waiting';

/** One fetch of the list, shared by the callers of `list()` that came while it ran. */
interface Fetch {
  promise: Promise<Tool[]>;
  /** Aborted when the last caller waiting stops waiting. */
  abandon: AbortController;
  waiting: number;
}

export const createToolsCache = (client: Client, options: ToolsCacheOptions = {}): ToolsCache => {
  if (options.ttlMs !== undefined && !(Number.isFinite(options.ttlMs) && options.ttlMs >= 0)) throw new RangeError(`ttlMs must be a finite number >= 0, got ${String(options.ttlMs)}`);
  checkCount('maxTools', options.maxTools);
  checkCount('maxPages', options.maxPages);
  const listTimeoutMs = options.listTimeoutMs ?? DEFAULT_LIST_TIMEOUT_MS;
  if (!(Number.isFinite(listTimeoutMs) && listTimeoutMs > 0 && listTimeoutMs <= MAX_TIMER_MS)) {
    throw new RangeError(`listTimeoutMs must be a number > 0 and <= ${MAX_TIMER_MS}, got ${String(options.listTimeoutMs)}`);
  }
  const maxTools = options.maxTools ?? DEFAULT_MAX_TOOLS;
  const maxPages = options.maxPages ?? DEFAULT_MAX_PAGES;
  const now = options.now ?? Date.now;
  const stats: ToolsCacheStats = {
    hits: 0,
    misses: 0,
    invalidations: 0,
    invalidationsBySource: { ttl: 0, list_changed: 0, listen: 0, change_feed: 0, manual: 0 },
    lists: 0,
    calls: 0,
    confirmRetries: 0,
    listErrors: 0,
    staleServed: 0,
  };
  const confirmDelays = options.confirmDelaysMs ?? CONFIRM_DELAYS_MS;
  const filterPage = sdkPageFilter(client);
  /** Per listed tool, what the next fetched list is checked against (bounded by the tools listed). */
  let expected = new Map<string, Expected>();
  let held: Held | undefined;
  let generation = 0;
  let inflight: Fetch | undefined;
  let subscription: { close(): Promise<void> } | undefined;
  let subscribing: Promise<void> | undefined;
  let closed = false;

  const stateless = (): boolean => client.getNegotiatedProtocolVersion() === STATELESS;

  const invalidate = (source: InvalidationSource): void => {
    generation += 1;
    if (held?.valid) {
      held.valid = false;
      stats.invalidations += 1;
      stats.invalidationsBySource[source] += 1;
    }
  };

  client.setNotificationHandler('notifications/tools/list_changed', () => {
    invalidate(stateless() ? 'listen' : 'list_changed');
    options.onListChanged?.();
  });

  const unsubscribeFeed = options.changes?.subscribe((change: CatalogueChange) => {
    const listed = held?.byName.get(change.tool);
    if (!listed) return;
    const e = foldChange(expected.get(change.tool) ?? {}, change, versionOfTool(listed));
    if (e.atLeast !== undefined || e.gone !== undefined) expected.set(change.tool, e);
    invalidate('change_feed');
  });

  /** On 2026-07-28, a listen stream must be open BEFORE the list is fetched, so no change falls between the two. */
  const ensureListening = async (): Promise<void> => {
    if (closed || options.listen === false || !stateless() || subscription) return;
    subscribing ??= (async () => {
      try {
        const sub = await client.listen({ toolsListChanged: true });
        subscription = sub;
        void sub.closed.then((how) => {
          if (subscription === sub) subscription = undefined;
          // An unexpected end: changes may be missed from now on, so nothing held can be trusted.
          if (how !== 'local') invalidate('listen');
        });
      } finally {
        subscribing = undefined;
      }
    })();
    await subscribing;
  };

  /**
   * Every page of the list, walked here rather than by the SDK's `listTools()` so the tools are counted page by page
   * and the walk stops at the page that passes `maxTools`, and so one deadline bounds the whole walk. As the SDK's walk
   * does: a page that repeats the page before it, cursor and tools, ends the walk; `ttlMs` is the first page's.
   */
  const walkPages = async (signal: AbortSignal, remainingMs: () => number, progress: { tools: number; pages: number }): Promise<{ tools: Tool[]; ttlMs: unknown }> => {
    // As the SDK's listTools does: a server that does not offer tools lists none (or, under enforceStrictCapabilities,
    // the SDK refuses to ask).
    if (!client.getServerCapabilities()?.tools) return { tools: (await client.listTools(undefined, { cacheMode: 'refresh', signal })).tools, ttlMs: undefined };
    // The SDK's own timeout (60 s by default) would cut a page of a longer deadline; the deadline's signal ends it.
    const request = (): RequestOptions => ({ signal, timeout: Math.min(MAX_TIMER_MS, Math.ceil(remainingMs()) + 1000) });
    const tools: Tool[] = [];
    const byName = new Map<string, Tool>();
    progress.tools = 0;
    progress.pages = 0;
    const read = (page: ListToolsResult): void => {
      progress.pages += 1;
      for (const tool of page.tools) {
        const first = byName.get(tool.name);
        if (first) throw new DuplicateToolNameError(tool.name, [versionOfTool(first), versionOfTool(tool)]);
        byName.set(tool.name, tool);
        tools.push(tool);
      }
      progress.tools = tools.length;
      if (tools.length > maxTools) throw new ToolsListBoundError('maxTools', maxTools, tools.length, { ...progress });
    };
    const first = await client.request({ method: 'tools/list' }, request());
    filterPage(first);
    read(first);
    let previous = first;
    let cursor = first.nextCursor;
    while (cursor !== undefined) {
      if (progress.pages >= maxPages) throw new ToolsListBoundError('maxPages', maxPages, progress.pages + 1, { ...progress });
      const page = await client.listTools({ cursor }, request());
      if (page.nextCursor === cursor && JSON.stringify(page.tools) === JSON.stringify(previous.tools)) break;
      read(page);
      previous = page;
      cursor = page.nextCursor;
    }
    return { tools, ttlMs: (first as Record<string, unknown>).ttlMs };
  };

  /** The pages walked; a page the transport cut (`boundedFetch`) is a ToolsListBoundError of `maxMessageBytes`. */
  const walk = (signal: AbortSignal, remainingMs: () => number, progress: { tools: number; pages: number }): Promise<{ tools: Tool[]; ttlMs: unknown }> =>
    walkPages(signal, remainingMs, progress).catch((e: unknown) => {
      const cut = MessageTooLargeError.from(e);
      throw cut ? new ToolsListBoundError('maxMessageBytes', cut.limit, cut.size, { ...progress }, { cause: cut }) : e;
    });

  const fetchList = async (abandon: AbortSignal): Promise<Tool[]> => {
    const started = performance.now();
    const deadline = new AbortController();
    const timer = setTimeout(() => deadline.abort(new ToolsListError(`tools/list: listTimeoutMs (${listTimeoutMs} ms) passed`)), listTimeoutMs);
    const signal = AbortSignal.any([abandon, deadline.signal]);
    const remainingMs = (): number => Math.max(0, listTimeoutMs - (performance.now() - started));
    /** What had been read when the fetch was given up. */
    const progress = { tools: 0, pages: 0 };
    /** A failure once the deadline passed is the deadline's (unless every caller had left first). */
    const timedOut = (e: unknown): unknown =>
      abandon.aborted || !deadline.signal.aborted ? e : new ToolsListBoundError('listTimeoutMs', listTimeoutMs, Math.round(performance.now() - started), { ...progress }, { cause: e });
    // Only what was announced before this fetch: a message during it invalidates what it fetches anyway.
    const checks = [...expected];
    expected = new Map();
    const gen = generation;
    try {
      await until(ensureListening(), signal).catch((e: unknown) => {
        throw timedOut(e);
      });
      stats.lists += 1;
      let result = await walk(signal, remainingMs, progress).catch((e: unknown) => {
        throw timedOut(e);
      });
      for (const wait of checks.length > 0 ? confirmDelays : []) {
        const shown = new Map(result.tools.map((t) => [t.name, versionOfTool(t)]));
        if (closed || checks.every(([tool, e]) => shows(e, shown.get(tool)))) break;
        try {
          await until(new Promise((resolve) => setTimeout(resolve, wait)), signal);
          stats.lists += 1;
          stats.confirmRetries += 1;
          result = await walk(signal, remainingMs, progress);
        } catch (e) {
          // The deadline passed while the list was checked: the last complete list is held, as after the last try.
          if (deadline.signal.aborted && !abandon.aborted) break;
          throw e;
        }
      }
      if (abandon.aborted) throw abandon.reason;
      const serverTtl = typeof result.ttlMs === 'number' && result.ttlMs >= 0 ? result.ttlMs : undefined;
      const ttl = options.ttlMs ?? serverTtl;
      held = {
        tools: result.tools,
        byName: new Map(result.tools.map((t) => [t.name, t])),
        expiresAt: ttl === undefined ? Number.POSITIVE_INFINITY : now() + ttl,
        // A change that arrived while the pages were walked makes this result stale at once.
        valid: gen === generation,
      };
      return result.tools;
    } catch (e) {
      // What this fetch was to check is checked by the next one.
      for (const [tool, e2] of checks) expected.set(tool, mergeExpected(expected.get(tool) ?? {}, e2));
      if (abandon.aborted) throw e;
      stats.listErrors += 1;
      if (options.staleIfError && held) {
        stats.staleServed += 1;
        return held.tools;
      }
      // Nothing held: versionOf() and call() pin nothing from a list that list() no longer stands by.
      held = undefined;
      throw e;
    } finally {
      clearTimeout(timer);
    }
  };

  /** Joins the fetch under way (or starts one) until it ends or `signal` stops this caller's wait. */
  const join = (signal: AbortSignal | undefined): Promise<Tool[]> => {
    let fetch = inflight;
    if (!fetch) {
      const abandon = new AbortController();
      const started: Fetch = { abandon, waiting: 0, promise: Promise.resolve([]) };
      started.promise = fetchList(abandon.signal).finally(() => {
        if (inflight === started) inflight = undefined;
      });
      // A fetch no one waits for rejects unobserved.
      started.promise.catch(() => undefined);
      inflight = fetch = started;
    }
    const joined = fetch;
    joined.waiting += 1;
    if (!signal) return joined.promise;
    return until(joined.promise, signal).catch((e: unknown) => {
      if (signal.aborted) {
        joined.waiting -= 1;
        if (joined.waiting === 0 && inflight === joined) {
          // The last caller left: the request is cancelled, and the next list() starts a fetch of its own.
          inflight = undefined;
          joined.abandon.abort(new Error(ABANDONED));
        }
      }
      throw e;
    });
  };

  const list = async (listOptions: ListOptions = {}): Promise<Tool[]> => {
    listOptions.signal?.throwIfAborted();
    if (held?.valid && now() >= held.expiresAt) invalidate('ttl');
    if (held?.valid) {
      stats.hits += 1;
      return held.tools;
    }
    stats.misses += 1;
    return join(listOptions.signal);
  };

  return {
    list,
    versionOf: (name) => versionOfTool(held?.byName.get(name)),
    async call(name, args = {}, callOptions = {}) {
      if (!held) await list(callOptions.signal ? { signal: callOptions.signal } : {});
      const tool = held?.byName.get(name);
      const version = versionOfTool(tool);
      stats.calls += 1;
      const meta = { ...(callOptions.meta ?? {}), ...(version ? { [VERSION_KEY]: version } : {}) };
      return (await client.callTool(
        { name, arguments: args, ...(Object.keys(meta).length ? { _meta: meta } : {}) },
        { ...(tool ? { toolDefinition: tool } : {}), ...(callOptions.signal ? { signal: callOptions.signal } : {}) },
      )) as CallToolResult;
    },
    invalidate: (source = 'manual') => invalidate(source),
    stats: () => ({ ...stats, invalidationsBySource: { ...stats.invalidationsBySource } }),
    async close() {
      closed = true;
      unsubscribeFeed?.();
      await subscribing?.catch(() => undefined);
      const sub = subscription;
      subscription = undefined;
      await sub?.close().catch(() => undefined);
    },
  };
};
