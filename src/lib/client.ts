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
 */
import type { CallToolResult, Client, Tool } from '@modelcontextprotocol/client';
import { compareVersions, isStrictSemver } from '#domain/semver';
import type { CatalogueChange, ChangeFeed } from './changes.ts';

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
}

export interface ToolsCache {
  /** The full tool list (all pages): from cache while valid, else fetched. */
  list(): Promise<Tool[]>;
  /** Call a tool at the version last listed (fetching the list first if none is held). */
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

export const createToolsCache = (client: Client, options: ToolsCacheOptions = {}): ToolsCache => {
  if (options.ttlMs !== undefined && !(Number.isFinite(options.ttlMs) && options.ttlMs >= 0)) throw new RangeError(`ttlMs must be a finite number >= 0, got ${String(options.ttlMs)}`);
  const now = options.now ?? Date.now;
  const stats: ToolsCacheStats = {
    hits: 0,
    misses: 0,
    invalidations: 0,
    invalidationsBySource: { ttl: 0, list_changed: 0, listen: 0, change_feed: 0, manual: 0 },
    lists: 0,
    calls: 0,
    confirmRetries: 0,
  };
  const confirmDelays = options.confirmDelaysMs ?? CONFIRM_DELAYS_MS;
  /** Per listed tool, what the next fetched list is checked against (bounded by the tools listed). */
  let expected = new Map<string, Expected>();
  let held: Held | undefined;
  let generation = 0;
  let inflight: Promise<Tool[]> | undefined;
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

  const fetchList = async (): Promise<Tool[]> => {
    await ensureListening();
    // Only what was announced before this fetch: a message during it invalidates what it fetches anyway.
    const checks = [...expected];
    expected = new Map();
    const gen = generation;
    stats.lists += 1;
    let result = await client.listTools(undefined, { cacheMode: 'refresh' });
    for (const wait of checks.length > 0 ? confirmDelays : []) {
      const shown = new Map(result.tools.map((t) => [t.name, versionOfTool(t)]));
      if (closed || checks.every(([tool, e]) => shows(e, shown.get(tool)))) break;
      await new Promise((resolve) => setTimeout(resolve, wait));
      stats.lists += 1;
      stats.confirmRetries += 1;
      result = await client.listTools(undefined, { cacheMode: 'refresh' });
    }
    const rawTtl: unknown = (result as Record<string, unknown>).ttlMs;
    const serverTtl = typeof rawTtl === 'number' && rawTtl >= 0 ? rawTtl : undefined;
    const ttl = options.ttlMs ?? serverTtl;
    held = {
      tools: result.tools,
      byName: new Map(result.tools.map((t) => [t.name, t])),
      expiresAt: ttl === undefined ? Number.POSITIVE_INFINITY : now() + ttl,
      // A change that arrived while the pages were walked makes this result stale at once.
      valid: gen === generation,
    };
    return result.tools;
  };

  const list = async (): Promise<Tool[]> => {
    if (held?.valid && now() >= held.expiresAt) invalidate('ttl');
    if (held?.valid) {
      stats.hits += 1;
      return held.tools;
    }
    stats.misses += 1;
    inflight ??= fetchList().finally(() => {
      inflight = undefined;
    });
    return inflight;
  };

  return {
    list,
    versionOf: (name) => versionOfTool(held?.byName.get(name)),
    async call(name, args = {}, callOptions = {}) {
      if (!held) await list();
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
