/**
 * The upstreams one serving process fronts (`estate serve --upstreams all|none|<ns,...>`): a link per namespace,
 * made on first use from the namespace's registration; the executors that the tools/call path runs for handler names
 * `upstream:<ns>/<t>`; and the syncs a serving process makes on its own — on the upstream's list_changed (debounced
 * 1 s) and every `--upstream-sync-interval`.
 *
 * A link belongs to one registration. The pool follows the upstream streams of the store (start's `follow`): a removal
 * (`estate upstream remove`, from any process) closes the namespace's link — its child exits, its HTTP session ends —
 * and stops its syncs; a later registration (of a namespace new or removed) is connected to afresh, at its own target,
 * and synced at once, as the ones there were at start. A registration replaced before the pool heard of it is found by
 * the sync too: a link never lists tools into a registration it was not made for.
 */
import type { HandlerMap, ToolHandler } from '#handlers/types';
import type { ExecutorTraits } from '#handlers/executor-failure';
import { ExecutorFailure } from '#handlers/executor-failure';
import { AnswerBudget } from './answer-budget.ts';
import type { BreakerOptions } from './breaker.ts';
import { parseUpstreamHandler, type CandidateRefusal } from './candidate.ts';

/** The most refused tools one log line names (an upstream may list 1,000). */
const MAX_REFUSALS_LOGGED = 20;
import type { Log } from '#app/log';
import type { EventStore, StoredEvent, Subscription } from '#app/ports';
import { UPSTREAM_STREAM_PREFIX } from '#domain/events';
import type { UpstreamState } from '#projections/upstreams';
import type { UpstreamLink } from './link.ts';
import type { UpstreamRegistry } from './registry.ts';

export type UpstreamSelection = 'all' | 'none' | readonly string[];

/** A list_changed sync waits until the last one's duration this many times over has passed since it ended. */
const SYNC_PACE = 10;

export const parseUpstreamSelection = (s: string | undefined): UpstreamSelection => {
  if (s === undefined || s === 'all') return 'all';
  if (s === 'none') return 'none';
  return s.split(',').map((x) => x.trim()).filter((x) => x.length > 0);
};

/** What makes one registration of a namespace differ from the next: its time and its target. */
const registrationOf = (state: UpstreamState): string => `${state.registeredAt} ${JSON.stringify(state.target)}`;

/** A link and the registration it was made from. */
interface Linked {
  link: UpstreamLink;
  registration: string;
}

/** Where the pool hears of registrations and removals: the store, from a position (null: its beginning). */
export interface PoolFollow {
  store: Pick<EventStore, 'subscribe'>;
  after: string | null;
}

export interface PoolOptions {
  registry: UpstreamRegistry;
  selection: UpstreamSelection;
  env: NodeJS.ProcessEnv;
  log: Log;
  actor: string;
  /** 0 = never on a timer. */
  syncIntervalMs?: number;
  debounceMs?: number;
  breaker?: BreakerOptions;
  /** Bytes of upstream answers held at once, every upstream together (ESTATE_MAX_UPSTREAM_BUFFER_BYTES); absent: the default. */
  answerBufferBytes?: number;
}

export class UpstreamPool {
  private readonly links = new Map<string, Promise<Linked>>();
  /** Links closed because their registration ended, until their connection has (close() waits for them). */
  private readonly closing = new Set<Promise<void>>();
  private following: Subscription | undefined;
  /** The refusals last logged per upstream (reportRefusals). */
  private readonly refusalsSaid = new Map<string, string>();
  /** The tools each upstream's last sync in this process refused (the console shows them; nothing records them). */
  private readonly refused = new Map<string, readonly CandidateRefusal[]>();
  private readonly debouncers = new Map<string, NodeJS.Timeout>();
  private readonly syncing = new Map<string, Promise<void>>();
  /** The one more sync asked for while one was running, per upstream. */
  private readonly again = new Map<string, Promise<void>>();
  private interval: NodeJS.Timeout | undefined;
  /** A sync asked for by a sync that left changes for later (SyncResult.retryAt), per upstream. */
  private readonly followUps = new Map<string, { at: number; timer: NodeJS.Timeout }>();
  /** The waits of syncs asked for while one ran (paced): cut short when the pool closes. */
  private readonly pacing = new Set<() => void>();
  /** What each upstream's last sync saw and left for later, each tool with when it may be recorded (deferredUntil). */
  private readonly waiting = new Map<string, ReadonlyMap<string, string>>();
  /** When each upstream's last sync ended and how long it took: list_changed syncs are paced by it. */
  private readonly lastSync = new Map<string, { endedAt: number; tookMs: number }>();
  /**
   * Per namespace, the tool versions (`name@version`) whose calls have been checked against the namespace's registration
   * as the store had it once the version was served (vet). The catalogue and this pool read the store separately: a
   * version approved after a removal and a new registration can reach the catalogue before the pool has heard of them.
   */
  private readonly vetted = new Map<string, Set<string>>();
  /** A check in progress per `ns name@version`: the first calls of one version share it. */
  private readonly vetting = new Map<string, Promise<void>>();
  private closed = false;
  /** One for the process: every link's calls and syncs are charged to it. */
  readonly answers: AnswerBudget;

  constructor(private readonly o: PoolOptions) {
    this.answers = new AnswerBudget(o.answerBufferBytes);
  }

  /** The registrations this pool serves from (for the console's and the metrics' queries). */
  get registry(): UpstreamRegistry {
    return this.o.registry;
  }

  serves(ns: string): boolean {
    const s = this.o.selection;
    return s === 'all' ? true : s === 'none' ? false : s.includes(ns);
  }

  /** The link of a served, registered upstream. */
  link(ns: string): Promise<UpstreamLink> {
    return this.linked(ns).then((l) => l.link);
  }

  private linked(ns: string): Promise<Linked> {
    let p = this.links.get(ns);
    if (!p) {
      // The MCP client (./link.ts, ./connection.ts) is loaded with the first link: a server fronting no upstream never loads it.
      const made: Promise<Linked> = Promise.all([this.o.registry.active(ns), import('./link.ts')]).then(([{ state }, { UpstreamLink }]) => ({
        registration: registrationOf(state),
        link: new UpstreamLink({
          ns,
          target: state.target,
          env: this.o.env,
          log: this.o.log,
          answers: this.answers,
          // A link closed for a new registration may still hear its old upstream until it has gone: not a reason to sync.
          onToolsChanged: () => {
            if (this.links.get(ns) === made) this.scheduleSync(ns);
          },
          ...(this.o.breaker ? { breaker: this.o.breaker } : {}),
        }),
      }));
      p = made;
      this.links.set(ns, made);
      made.catch(() => {
        if (this.links.get(ns) === made) this.links.delete(ns);
      });
    }
    return p;
  }

  /**
   * Bring the namespace's link in line with its registration as the store has it now: a link made for a registration
   * that has since been removed or replaced is closed (a stdio child exits, an HTTP session ends), its pending syncs are
   * dropped, and the next call or sync connects to the registration of the day. Returns whether the link was closed.
   */
  private async reconcile(ns: string): Promise<boolean> {
    const p = this.links.get(ns);
    if (!p) return false;
    const { state } = await this.o.registry.load(ns);
    const held = await p.catch(() => undefined);
    // Asked again meanwhile, or the link failed to be made (then it is gone already).
    if (!held || this.links.get(ns) !== p) return false;
    const now = state?.status === 'active' ? registrationOf(state) : undefined;
    if (held.registration === now) return false;
    this.links.delete(ns);
    clearTimeout(this.debouncers.get(ns));
    this.debouncers.delete(ns);
    clearTimeout(this.followUps.get(ns)?.timer);
    this.followUps.delete(ns);
    this.waiting.delete(ns);
    this.vetted.delete(ns);
    this.refused.delete(ns);
    this.o.log.info({ upstream: ns, registration: now === undefined ? 'removed' : 'replaced' }, 'upstream link closed: its registration ended');
    const closed = held.link.close().catch(() => undefined);
    this.closing.add(closed);
    void closed.then(() => this.closing.delete(closed));
    return true;
  }

  /**
   * Before the first call of a tool version goes out, the namespace's link is checked against the registration the
   * store has now (one read of the upstream's stream per version and process, not per call). A version is served only
   * once its publication is committed, and a registration it was approved under was committed before it: so this read
   * sees that registration even when the pool's own following of the store lags behind the catalogue's, and a call never
   * reaches the child or session of a registration that was removed or replaced before the version was approved. The
   * first calls of one version share its check; a check running for another version is not joined (it may have read
   * before this version's registration was committed).
   */
  private vet(ns: string, version: string): Promise<void> {
    if (this.vetted.get(ns)?.has(version)) return Promise.resolve();
    const key = `${ns} ${version}`;
    let p = this.vetting.get(key);
    if (!p) {
      p = this.reconcile(ns)
        .then(() => {
          let set = this.vetted.get(ns);
          if (!set) this.vetted.set(ns, (set = new Set()));
          set.add(version);
        })
        .finally(() => this.vetting.delete(key));
      this.vetting.set(key, p);
    }
    return p;
  }

  /** The upstream events of the store, as they are appended: each registration or removal of a served namespace is followed. */
  private follow(f: PoolFollow): void {
    const onEvents = async (events: StoredEvent[]): Promise<void> => {
      // Per namespace, whether its last such event in the batch registered it.
      const touched = new Map<string, boolean>();
      for (const e of events) {
        if (e.type !== 'UpstreamRegistered' && e.type !== 'UpstreamRemoved') continue;
        const ns = e.streamId.slice(UPSTREAM_STREAM_PREFIX.length);
        if (this.serves(ns)) touched.set(ns, e.type === 'UpstreamRegistered');
      }
      for (const [ns, registered] of touched) {
        if (this.closed) return;
        await this.reconcile(ns);
        // A new registration is connected to and synced at once, as at start: its tools are listed, and its change
        // notices heard, without waiting for a call, the interval, or someone's `upstream sync`.
        if (registered) void this.sync(ns);
      }
    };
    this.following = f.store.subscribe({
      after: f.after,
      streamPrefix: UPSTREAM_STREAM_PREFIX,
      onEvents,
      onError: (e) => this.o.log.warn({ error: e instanceof Error ? e.message : String(e) }, 'upstream registrations: read failed, retrying'),
    });
  }

  /** The executor for one handler name, shaped as a module handler. */
  private executor(ns: string, upstreamTool: string): ToolHandler & ExecutorTraits {
    const run: ToolHandler & ExecutorTraits = async (args, ctx) => {
      let link: UpstreamLink;
      try {
        await this.vet(ns, `${ctx.tool.name}@${ctx.tool.version}`);
        link = await this.link(ns);
      } catch {
        throw new ExecutorFailure('upstream_unavailable', `upstream ${ns} unavailable`, false);
      }
      return link.call(upstreamTool, args, ctx);
    };
    run.timeoutFailure = () => new ExecutorFailure('upstream_unavailable', `upstream ${ns} unavailable`, true);
    return run;
  }

  /**
   * The module handlers plus an executor for every `upstream:<ns>/<t>` name of a served namespace. The handler map is
   * looked up by name on every call and every discovery, so the executors are resolved by name too (a Proxy), rather
   * than listed: the catalogue decides which upstream tools exist, and a newly approved one is served at once.
   */
  handlers(base: HandlerMap): HandlerMap {
    const cache = new Map<string, ToolHandler>();
    const resolve = (name: string | symbol): ToolHandler | undefined => {
      if (typeof name !== 'string') return undefined;
      const parsed = parseUpstreamHandler(name);
      if (!parsed || !this.serves(parsed.ns)) return undefined;
      let h = cache.get(name);
      if (!h) cache.set(name, (h = this.executor(parsed.ns, parsed.tool)));
      return h;
    };
    return new Proxy(base as Record<string, ToolHandler>, {
      get: (t, name) => (Object.prototype.hasOwnProperty.call(t, name) ? t[name as string] : resolve(name)),
      has: (t, name) => name in t || resolve(name) !== undefined,
      getOwnPropertyDescriptor: (t, name) => {
        const own = Object.getOwnPropertyDescriptor(t, name);
        if (own) return own;
        const h = resolve(name);
        return h ? { value: h, writable: false, enumerable: false, configurable: true } : undefined;
      },
    });
  }

  /**
   * Sync one upstream now through this process's link, one at a time per upstream. Asked while one runs, it runs once
   * more after it (however many ask meanwhile), when the pace lets it (paceMs): the running one may have listed the
   * tools before the change that prompted the request, and joining it would lose that change until the next notice.
   */
  sync(ns: string): Promise<void> {
    const running = this.syncing.get(ns);
    if (running) {
      let again = this.again.get(ns);
      if (!again) {
        again = running
          .then(() => this.paced(ns))
          .then(() => {
            this.again.delete(ns);
            return this.closed ? undefined : this.sync(ns);
          });
        this.again.set(ns, again);
      }
      return again;
    }
    const p = (async () => {
      let link: UpstreamLink | undefined;
      let started = Date.now();
      try {
        // A link of a registration that has ended (the store's word not yet heard) lists nothing into the next one.
        await this.reconcile(ns);
        link = await this.link(ns);
        const made = this.links.get(ns);
        // The pace (paceMs) is set by the sync's own work: connecting (a child's start, an HTTP session, once per link)
        // made the first sync after a start count ~0.5 s more, and the next notice-driven sync wait 5 s more.
        started = Date.now();
        const tools = await link.listTools();
        // Closed while it listed (removed or replaced meanwhile): what it listed is its old upstream's.
        if (made !== undefined && this.links.get(ns) !== made) throw new Error(`upstream ${ns}: its registration ended during the sync`);
        const r = await this.o.registry.sync(ns, tools, this.o.actor);
        this.o.log.info(
          { upstream: ns, listed: r.listed, drift: r.drift.length, refused: r.refused.length, vanished: r.vanished.length, deferred: r.deferred.length, autoApproved: r.autoApproved },
          'upstream synced',
        );
        this.reportRefusals(ns, r.refused);
        this.refused.set(ns, r.refused);
        this.waiting.set(ns, new Map(Object.entries(r.deferredUntil)));
        if (r.retryAt !== undefined) this.followUp(ns, Date.parse(r.retryAt));
      } catch (e) {
        // Without a link the MCP client is not even loaded: the failure cannot be one of its errors.
        const why = link ? link.describe(e) : e instanceof Error ? e.message : String(e);
        this.o.log.warn({ upstream: ns, error: why }, 'upstream sync failed');
      } finally {
        this.syncing.delete(ns);
        this.lastSync.set(ns, { endedAt: Date.now(), tookMs: Date.now() - started });
      }
    })();
    this.syncing.set(ns, p);
    return p;
  }

  /**
   * list_changed: sync `debounceMs` (default 1 s) after the first notice of a burst; notices inside the window join it.
   * The window is not restarted by later notices: an upstream that announces changes without pause would otherwise
   * postpone its own sync for ever (and a real change with it), and a flood costs at most one sync per window. The
   * window is longer while the last sync's pace says so (paceMs).
   */
  scheduleSync(ns: string): void {
    if (this.closed || this.debouncers.has(ns)) return;
    this.debouncers.set(
      ns,
      setTimeout(() => {
        this.debouncers.delete(ns);
        void this.sync(ns);
      }, Math.max(this.o.debounceMs ?? 1000, this.paceMs(ns))),
    );
  }

  /**
   * How long a list_changed sync still waits so that an upstream's syncs take about a tenth of this process's time:
   * ten times the last sync's duration after it ended. An upstream announcing changes without pause would otherwise
   * keep the process syncing (a sync of 1,000 tools takes about a second).
   */
  private paceMs(ns: string): number {
    const last = this.lastSync.get(ns);
    return last ? Math.max(0, last.endedAt + SYNC_PACE * last.tookMs - Date.now()) : 0;
  }

  /** Resolves once the pace (paceMs) lets `ns` sync again, or at once when the pool closes. */
  private paced(ns: string): Promise<void> {
    const ms = this.paceMs(ns);
    if (ms === 0 || this.closed) return Promise.resolve();
    return new Promise((resolve) => {
      const stop = (): void => {
        clearTimeout(timer);
        this.pacing.delete(stop);
        resolve();
      };
      const timer = setTimeout(stop, ms);
      this.pacing.add(stop);
    });
  }

  /** Sync again at `at` (the earliest one asked for wins): what a sync left for later is recorded then. */
  private followUp(ns: string, at: number): void {
    const pending = this.followUps.get(ns);
    if (this.closed || (pending && pending.at <= at)) return;
    if (pending) clearTimeout(pending.timer);
    const timer = setTimeout(
      () => {
        this.followUps.delete(ns);
        void this.sync(ns);
      },
      Math.max(0, at - Date.now()) + 1000, // a second past it: the window has surely let it through
    );
    timer.unref();
    this.followUps.set(ns, { at, timer });
  }

  /**
   * Why an upstream's tools were refused (SPEC §7: reported with its reasons, never offered), said in the log when the
   * set of refusals changes, not at every sync: at most MAX_REFUSALS_LOGGED of them, each message cut to 300 characters
   * (the text is the upstream's). `estate upstream sync` prints them all.
   */
  private reportRefusals(ns: string, refused: readonly CandidateRefusal[]): void {
    const key = refused.map((x) => `${x.upstreamTool}\u0000${x.code}\u0000${x.message}`).join('\u0001');
    if ((this.refusalsSaid.get(ns) ?? '') === key) return;
    this.refusalsSaid.set(ns, key);
    if (refused.length === 0) return;
    const shown = refused.slice(0, MAX_REFUSALS_LOGGED).map((x) => ({ tool: x.tool, upstreamTool: x.upstreamTool.slice(0, 200), code: x.code, message: x.message.slice(0, 300) }));
    this.o.log.warn({ upstream: ns, refused: shown, more: Math.max(0, refused.length - shown.length) }, 'upstream tools refused by the definition rules: never offered');
  }

  /** The served namespaces whose registration is active now. */
  private async activeServed(): Promise<string[]> {
    const all = (await this.o.registry.namespaces()).filter((ns) => this.serves(ns));
    const active: string[] = [];
    for (const ns of all) {
      const { state } = await this.o.registry.load(ns);
      if (state?.status === 'active') active.push(ns);
    }
    return active;
  }

  /**
   * Sync every served upstream at start and then on the interval; returns how many active upstreams it fronts. With
   * `follow`, registrations and removals appended after `follow.after` (by any process) are followed from now on: start
   * it from a position no later than the store's end now (the catalogue's position will do), before any link is made.
   */
  async start(follow?: PoolFollow): Promise<number> {
    if (follow) this.follow(follow);
    const active = await this.activeServed();
    for (const ns of active) void this.sync(ns);
    const every = this.o.syncIntervalMs ?? 600_000;
    if (every > 0) {
      this.interval = setInterval(() => {
        // A removed upstream is not synced (there is nothing of it to keep up with): only the active ones.
        void this.activeServed().then(
          (nss) => nss.forEach((ns) => void this.sync(ns)),
          (e: unknown) => this.o.log.warn({ error: e instanceof Error ? e.message : String(e) }, 'upstream sync failed'),
        );
      }, every);
      this.interval.unref();
    }
    return active.length;
  }

  /** Each served upstream's breaker state, for status output. */
  async statuses(): Promise<Record<string, string>> {
    const out: Record<string, string> = {};
    for (const [ns, p] of this.links) out[ns] = await p.then((l) => l.link.status, () => 'unregistered');
    return out;
  }

  /**
   * The tools the last sync of `ns` in this process refused by the definition rules (SPEC §7: reported with their
   * reasons, never offered): at most MAX_UPSTREAM_TOOLS, as the registry gave them. Empty before a first sync here.
   */
  refusals(ns: string): readonly CandidateRefusal[] {
    return this.refused.get(ns) ?? [];
  }

  /** Changes the last sync of `ns` saw and has not recorded yet (metrics' `estate_upstream_changes_waiting`). */
  changesWaiting(ns: string): number {
    return this.waiting.get(ns)?.size ?? 0;
  }

  /** When a change of `tool` the last sync saw but left for later is recorded; undefined if none waits. */
  changeWaitingFor(ns: string, tool: string): string | undefined {
    return this.waiting.get(ns)?.get(tool);
  }

  /** Per served upstream with a link: connected and its breaker closed (metrics' `estate_upstream_up`). */
  async up(): Promise<Record<string, boolean>> {
    const out: Record<string, boolean> = {};
    for (const [ns, p] of this.links) out[ns] = await p.then((l) => l.link.connected && l.link.status === 'up', () => false);
    return out;
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.interval);
    for (const t of this.debouncers.values()) clearTimeout(t);
    for (const f of this.followUps.values()) clearTimeout(f.timer);
    for (const stop of [...this.pacing]) stop();
    await this.following?.close();
    await Promise.all([...this.syncing.values(), ...this.again.values()]);
    await Promise.all([...this.links.values()].map((p) => p.then((l) => l.link.close(), () => undefined)));
    await Promise.all([...this.closing]);
  }
}
