/**
 * The upstream registry (SPEC §7) on the ports: register, sync (given what the upstream lists), approve, reject,
 * remove, and the read queries behind `estate upstream list|drift`. Every write to `upstream-<ns>` is appended with the
 * revision read (optimistic concurrency): two processes syncing the same upstream at once record one drift, because
 * the loser re-reads, sees the winner's event and has nothing left to append.
 */
import { decodeUpstreamEvent } from '#app/event-codec';
import type { CommandHandler, PublishOutcome } from '#app/command-handler';
import { ConcurrencyError, systemClock, type Clock, type EventStore } from '#app/ports';
import { DomainError } from '#domain/errors';
import { upstreamStream, type AutoApprove, type UpstreamCandidate, type UpstreamEvent, type UpstreamTarget } from '#domain/events';
import { baselineOf } from '#domain/guard';
import { parseVersion } from '#domain/semver';
import type { DefinitionChecker } from '#app/definition-budget';
import type { Reason, ToolAccess, ToolDefinition, VersionStatus } from '#domain/types';
import { applyUpstreamEvent, CHANGE_HISTORY, pendingDrift, type DriftData, type UpstreamState, type UpstreamToolState } from '#projections/upstreams';
import { describeTarget, nextVersion, sameText, stillTheCandidate, textDiff } from './drift-text.ts';
import { contentHash, mapCandidates, mapToolName, MAX_UPSTREAM_TOOLS, NS_PATTERN, parseUpstreamHandler, tooManyTools, type CandidateRefusal, type UpstreamTool } from './candidate.ts';

export { describeTarget, nextVersion, textDiff } from './drift-text.ts';

export interface RegistryDeps {
  store: EventStore;
  commands: CommandHandler;
  /**
   * Checks and classifies upstream definitions (src/app/definition-budget.ts: a worker, under the schema budget): an
   * upstream's schemas are hostile input, and a sync runs in the serving process.
   */
  definitions: Pick<DefinitionChecker, 'check' | 'classify'>;
  clock?: Clock;
}

export interface SyncResult {
  ns: string;
  /** Tools the upstream listed. */
  listed: number;
  /** Drift recorded by THIS sync (a candidate already recorded is not recorded again). */
  drift: { tool: string; upstreamTool: string; level: DriftData['level']; reasons: Reason[] }[];
  refused: CandidateRefusal[];
  vanished: string[];
  /**
   * Tools whose change this sync saw but did not record (DRIFT_WINDOW_MS): each is recorded by a sync from `retryAt`
   * on, if the upstream still lists it so.
   */
  deferred: string[];
  /** The earliest of deferredUntil's times: a sync then records at least one of them. */
  retryAt?: string;
  /** When each deferred tool's change may be recorded: each waits on its own count or its upstream's, not the earliest. */
  deferredUntil: Record<string, string>;
  /** Candidates published by `--auto-approve schema-minor`. */
  autoApproved: { tool: string; version: string }[];
}

/**
 * How often an upstream's changes are recorded. Within one window a tool's changes that no one has decided on yet
 * (a pending drift, or a vanishing) are recorded at most CHANGE_HISTORY times, and one upstream records at most
 * MAX_UPSTREAM_TOOLS first sightings of tools and as many changes of tools it listed before: an upstream that changed
 * its 1,000 tools at every listing and announced it every 100 ms had a serving process write 660 events a second and
 * kept it busy (bench/upstream-drift-flood.ts). The two counts are apart so that importing a whole upstream leaves
 * room for its next changes (with one count, an upstream of 1,000 tools recorded no change for 10 minutes after its
 * first sync). What a window holds back is recorded by the first sync after it. A person deciding (reject, approve)
 * lets the tool's next change through at once, within the upstream's count.
 */
export const DRIFT_WINDOW_MS = 10 * 60_000;

/** The times (ms) of a tool's recorded changes within the window that ends at `nowMs`, oldest first. */
const changesWithin = (t: UpstreamToolState | undefined, nowMs: number): number[] => (t?.changes ?? []).map((at) => Date.parse(at)).filter((ms) => nowMs - ms < DRIFT_WINDOW_MS);

/** When an undecided tool whose changes in the window are `mine` may have its next change recorded; undefined: now. */
const windowFullUntil = (mine: readonly number[]): string | undefined => (mine.length >= CHANGE_HISTORY ? new Date((mine[0] as number) + DRIFT_WINDOW_MS).toISOString() : undefined);

export interface PendingView {
  ns: string;
  tool: string;
  upstreamTool: string;
  level: DriftData['level'];
  reasons: Reason[];
  pinned?: string;
  candidateHash: string;
  at: string;
  textDiff?: string;
  /**
   * In `overview` only: the tool's changes in the window are all undecided (CHANGE_HISTORY of them), so its next change
   * is recorded no sooner than this.
   */
  nextRecordedAfter?: string;
}

const MAX_ATTEMPTS = 20;

/** A tool's pinned version (SPEC §7: its latest published one; registry.ts `pinned`) and its lifecycle status. */
interface Pinned {
  definition: ToolDefinition;
  status: VersionStatus;
}

/** What clients are served of a tool: its pinned version's content, unless every version is retired (nothing is). */
const servedHash = (p: Pinned | undefined): string | undefined => (p && p.status !== 'retired' ? contentHash(p.definition) : undefined);

/**
 * A reviewer is told when the tool's pinned version is not served as it was: every version retired (approving serves
 * the tool again), or the newest deprecated (approving publishes an active version beside the notice).
 */
const notServed = (p: Pinned): Reason[] =>
  p.status === 'active'
    ? []
    : [
        p.status === 'retired'
          ? { level: 'patch', path: 'version', rule: 'pinned-retired', detail: `every version of ${p.definition.name} is retired: approving serves it again` }
          : { level: 'patch', path: 'version', rule: 'pinned-deprecated', detail: `${p.definition.name}@${p.definition.version} is deprecated: approving publishes a version without the notice` },
      ];

/**
 * An upstream tool whose catalogue name is a tool the namespace already has with a handler that is not this upstream's
 * (a tool published by hand under `<ns>.`): approving it would send that tool's calls to the upstream. The classifier
 * calls a changed handler a patch, and an upstream may copy the local tool's text (anyone who may list it can read it),
 * so `schema-minor` would have auto-approved the takeover. It is a major change: a person decides, and callers see a
 * new major version.
 */
const localTakeover = (pinned: ToolDefinition, c: UpstreamCandidate): Reason | undefined => {
  const ns = parseUpstreamHandler(c.handler)?.ns;
  if (ns === undefined || parseUpstreamHandler(pinned.handler)?.ns === ns) return undefined;
  return {
    level: 'major',
    path: 'handler',
    rule: 'replaces-local-handler',
    detail: `handler: ${JSON.stringify(pinned.handler)} is not upstream ${ns}'s: approving sends the calls of ${pinned.name} to the upstream`,
  };
};

export class UpstreamRegistry {
  private readonly clock: Clock;

  constructor(private readonly deps: RegistryDeps) {
    this.clock = deps.clock ?? systemClock;
  }

  /**
   * The namespace's state and the stream revision read (-1: no stream). The fold is kept per namespace and only the
   * events appended since are read and applied (a stream is only ever appended to): /metrics and the console ask at
   * every scrape and page, and reading a 1,000-tool upstream's stream whole cost ~10 ms each time. Reads of one
   * namespace take turns (each applies what it read to the kept fold), and each caller gets its own copy of the
   * state's tool map: the fold changes the map in place, never a tool's entry.
   */
  load(ns: string): Promise<{ state: UpstreamState | undefined; revision: number }> {
    const turn = (this.loading.get(ns) ?? Promise.resolve()).then(() => this.readOn(ns));
    const settled = turn.then(() => undefined, () => undefined);
    this.loading.set(ns, settled);
    void settled.then(() => {
      if (this.loading.get(ns) === settled) this.loading.delete(ns);
    });
    return turn.then(({ state, revision }) => ({ state: state && { ...state, tools: new Map(state.tools) }, revision }));
  }

  private readonly folds = new Map<string, { state: UpstreamState | undefined; revision: number }>();
  private readonly loading = new Map<string, Promise<void>>();

  private async readOn(ns: string): Promise<{ state: UpstreamState | undefined; revision: number }> {
    const kept = this.folds.get(ns) ?? { state: undefined, revision: -1 };
    const stored = await this.deps.store.readStream(upstreamStream(ns), { fromRevision: kept.revision + 1 });
    if (stored.length === 0) return kept;
    let state = kept.state;
    for (const s of stored) {
      const e = decodeUpstreamEvent(s);
      if (e) state = applyUpstreamEvent(state, e);
    }
    const next = { state, revision: stored[stored.length - 1]?.revision ?? kept.revision };
    this.folds.set(ns, next);
    return next;
  }

  /** An active registration, or a not-found error naming the namespace. */
  async active(ns: string): Promise<{ state: UpstreamState; revision: number }> {
    const { state, revision } = await this.load(ns);
    if (!state || state.status !== 'active') throw new DomainError('not-found', 'unknown-upstream', `unknown upstream '${ns}'${state ? ' (removed)' : ''}`);
    return { state, revision };
  }

  /**
   * Every registered namespace (active or removed), sorted. Read once from the first upstream event, then only what
   * was appended since (a registration is never undone, a removal keeps its name): a serving process asks at every
   * /metrics scrape and console page, and reading every drift event each time cost ~16 ms a scrape beside an upstream
   * of 1,000 tools. Concurrent callers share one read.
   */
  async namespaces(): Promise<string[]> {
    this.namespacesRead ??= this.readNamespaces().finally(() => (this.namespacesRead = null));
    await this.namespacesRead;
    return [...this.registered].sort();
  }

  private readonly registered = new Set<string>();
  private registeredAfter: string | null = null;
  private namespacesRead: Promise<void> | null = null;

  private async readNamespaces(): Promise<void> {
    for (;;) {
      const page = await this.deps.store.readAll({ after: this.registeredAfter, limit: 1000, streamPrefix: 'upstream-' });
      if (page.length === 0) return;
      for (const e of page) if (e.type === 'UpstreamRegistered') this.registered.add(e.streamId.slice('upstream-'.length));
      this.registeredAfter = page[page.length - 1]?.position ?? this.registeredAfter;
    }
  }

  async register(ns: string, target: UpstreamTarget, access: ToolAccess, autoApprove: AutoApprove, by: string): Promise<{ ns: string; position: string }> {
    if (!NS_PATTERN.test(ns) || ns.length > 64) throw new DomainError('usage', 'invalid-namespace', `upstream namespace '${ns.slice(0, 70)}' must match ${NS_PATTERN.source} (one name segment, at most 64 characters)`);
    const { state, revision } = await this.load(ns);
    if (state && state.status === 'active') throw new DomainError('conflict', 'upstream-exists', `upstream '${ns}' is already registered (${state.registeredAt}); remove it first`);
    const at = this.clock.now();
    const r = await this.append(ns, [{ type: 'UpstreamRegistered', data: { ns, target, access, autoApprove, by, at } }], revision);
    return { ns, position: r.positions[0] as string };
  }

  private append(ns: string, events: UpstreamEvent[], revision: number) {
    return this.deps.store.append(
      upstreamStream(ns),
      events.map((e) => ({ type: e.type, data: e.data })),
      { expectedRevision: revision < 0 ? 'no_stream' : revision },
    );
  }

  /** A tool's pinned version (the newest active one, else deprecated, else retired) and its status. */
  private async pinned(name: string): Promise<Pinned | undefined> {
    const { state } = await this.deps.commands.load(name);
    const b = baselineOf(state);
    return b && { definition: b.definition, status: b.status };
  }

  /**
   * Record what the upstream lists now: drift once per distinct candidate, vanished tools once, then (schema-minor)
   * publish what may be approved without a person. Re-run from the top on a lost race.
   */
  async sync(ns: string, tools: readonly UpstreamTool[], by: string): Promise<SyncResult> {
    if (tools.length > MAX_UPSTREAM_TOOLS) throw tooManyTools(ns, tools.length);
    for (let attempt = 1; ; attempt++) {
      const { state, revision } = await this.active(ns);
      // The pinned definitions, read once per candidate name (their access and timeout are kept by the candidate).
      const pinnedDefs = new Map<string, Pinned | undefined>();
      for (const t of tools) {
        const name = mapToolName(ns, String(t.name));
        if (!pinnedDefs.has(name)) pinnedDefs.set(name, await this.pinned(name));
      }
      const remapped = await mapCandidates(ns, tools, state.access, (raw) => this.deps.definitions.check(raw), (n) => pinnedDefs.get(n)?.definition);
      const at = this.clock.now();
      const events: UpstreamEvent[] = [];
      const result: SyncResult = { ns, listed: tools.length, drift: [], refused: [], vanished: [], deferred: [], deferredUntil: {}, autoApproved: [] };
      const seen = new Set<string>();
      /** Tools whose drift this sync recorded over a pinned version that is one of the upstream's listings. */
      const mayAutoApprove = new Set<string>();
      const window = this.changeWindow(state, at);
      /** Whether a change of `t` may be recorded now; if not, it is counted as deferred. */
      const mayRecord = (name: string, t: UpstreamToolState | undefined, pinned: Pinned | undefined): boolean => {
        const wait = window.wait(t, servedHash(pinned));
        if (wait === undefined) return true;
        result.deferred.push(name);
        result.deferredUntil[name] = wait;
        if (result.retryAt === undefined || wait < result.retryAt) result.retryAt = wait;
        return false;
      };
      for (const m of remapped) {
        if (!m.ok) {
          result.refused.push(m.refusal);
          continue;
        }
        const c = m.candidate;
        seen.add(c.name);
        const pinned = pinnedDefs.get(c.name);
        const hash = contentHash(c);
        const known = state.tools.get(c.name);
        // Identical to what clients see: nothing to say — unless it had vanished, when the event records its return
        // (it is not pending: its content is the pinned version's). A tool whose every version is retired is served
        // nothing: the same content listed again is a candidate a person may approve (after a removal and a new
        // registration, say), never nothing.
        if (servedHash(pinned) === hash && !known?.vanished) continue;
        if (known?.lastDrift?.candidateHash === hash && !known.vanished) continue; // recorded by an earlier sync
        if (!mayRecord(c.name, known, pinned)) continue;
        // What clients are served is a listing of this upstream's (approved as it was listed): a change from it is the
        // upstream's to make. Otherwise (a version a person published over the upstream's, narrowing it, say) an
        // automatic approval would undo a person's decision: schema-minor leaves it to a person.
        const ownPinned = pinned !== undefined && (known?.listed.includes(contentHash(pinned.definition)) ?? false);
        const classified = await this.classify(pinned, c, ownPinned);
        if (!classified.ok) {
          result.refused.push({ upstreamTool: m.upstreamTool, tool: c.name, code: classified.error.code, message: classified.error.message });
          continue;
        }
        const { level, reasons } = classified;
        events.push({
          type: 'UpstreamDriftDetected',
          data: { ns, tool: c.name, upstreamTool: m.upstreamTool, level, reasons, candidate: c, candidateHash: hash, ...(pinned ? { pinned: pinned.definition.version } : {}), at },
        });
        result.drift.push({ tool: c.name, upstreamTool: m.upstreamTool, level, reasons });
        if (ownPinned) mayAutoApprove.add(c.name);
      }
      for (const t of state.tools.values()) {
        if (seen.has(t.tool) || t.vanished) continue;
        // A refused candidate is still listed: it has not vanished.
        if (result.refused.some((r) => r.tool === t.tool)) continue;
        const pinned = await this.pinned(t.tool);
        if (!mayRecord(t.tool, t, pinned)) continue;
        events.push({ type: 'UpstreamToolVanished', data: { ns, tool: t.tool, upstreamTool: t.upstreamTool, ...(pinned ? { pinned: pinned.definition.version } : {}), at } });
        result.vanished.push(t.tool);
      }
      if (events.length > 0) {
        try {
          await this.append(ns, events, revision);
        } catch (e) {
          if (!(e instanceof ConcurrencyError) || attempt >= MAX_ATTEMPTS) throw e;
          await new Promise((r) => setTimeout(r, Math.random() * 20));
          continue; // re-read: the winner's drift is now known and not recorded twice
        }
      }
      if (state.autoApprove === 'schema-minor') result.autoApproved = await this.autoApprove(ns, by, mayAutoApprove);
      return result;
    }
  }

  /**
   * The window's rules (DRIFT_WINDOW_MS) at `now`: `wait` says when a change of a tool may be recorded, undefined for
   * now (and then counts it against the upstream's share of the window).
   */
  private changeWindow(state: UpstreamState, now: string): { wait(t: UpstreamToolState | undefined, servedHash: string | undefined): string | undefined } {
    const nowMs = Date.parse(now);
    const within = (t: UpstreamToolState | undefined): number[] => changesWithin(t, nowMs);
    // The upstream's first sightings and changes within the window, and the oldest of each: when the window frees a
    // place (this sync's own are at `now`).
    const counts = { first: { n: 0, oldest: nowMs }, change: { n: 0, oldest: nowMs } };
    for (const t of state.tools.values()) {
      const firstMs = Date.parse(t.firstSeen);
      for (const ms of within(t)) {
        const c = ms === firstMs ? counts.first : counts.change;
        c.n++;
        c.oldest = Math.min(c.oldest, ms);
      }
    }
    return {
      wait(t, served) {
        // Its last change is undecided: a vanishing, or a candidate neither rejected nor approved.
        const undecided = t !== undefined && (t.vanished || pendingDrift(t, served) !== undefined);
        const mine = within(t);
        if (undecided) {
          const full = windowFullUntil(mine);
          if (full !== undefined) return full;
        }
        const c = t === undefined ? counts.first : counts.change;
        if (c.n >= MAX_UPSTREAM_TOOLS) return new Date(c.oldest + DRIFT_WINDOW_MS).toISOString();
        c.n++;
        return undefined;
      },
    };
  }

  /**
   * schema-minor: minor or patch AND title, description and annotations byte-identical to the pinned version's, which
   * is active: a tool a person deprecated or retired is not brought back, nor its notice dropped, by an upstream's
   * change. Only drift this sync recorded over a pinned version that is one of the upstream's listings (`tools`).
   */
  private async autoApprove(ns: string, by: string, tools: ReadonlySet<string>): Promise<{ tool: string; version: string }[]> {
    const out: { tool: string; version: string }[] = [];
    // Most syncs record nothing: then no tool's pinned version is read at all (pending reads one per tool).
    if (tools.size === 0) return out;
    for (const p of await this.pending(ns)) {
      if (!tools.has(p.tool) || (p.level !== 'minor' && p.level !== 'patch')) continue;
      const { state } = await this.active(ns);
      const drift = state.tools.get(p.tool)?.lastDrift;
      const pinned = await this.pinned(p.tool);
      if (!drift || pinned?.status !== 'active' || !sameText(pinned.definition, drift.candidate)) continue;
      const v = await this.approveOne(ns, p.tool, { by });
      if (v.result === 'published') out.push({ tool: p.tool, version: v.version });
    }
    return out;
  }

  /** Pending candidates of one namespace (or every active one), sorted by tool name. */
  async pending(ns?: string): Promise<PendingView[]> {
    const nss = ns === undefined ? await this.namespaces() : [ns];
    const out: PendingView[] = [];
    for (const n of nss) {
      const { state } = ns === undefined ? await this.load(n) : await this.active(n);
      if (state?.status === 'active') out.push(...(await this.pendingIn(state)));
    }
    return out;
  }

  /**
   * The pending candidates of a state already loaded (`load`), in tool name order. `pinnedOf` gives a tool's pinned
   * version (default: read from its stream, one read per tool).
   */
  async pendingIn(state: UpstreamState, pinnedOf: (tool: string) => Promise<Pinned | undefined> = (t) => this.pinned(t)): Promise<PendingView[]> {
    const out: PendingView[] = [];
    for (const t of [...state.tools.values()].sort((a, b) => (a.tool < b.tool ? -1 : 1))) {
      const pinned = await pinnedOf(t.tool);
      const d = pendingDrift(t, servedHash(pinned));
      if (!d) continue;
      const diff = textDiff(pinned?.definition, d.candidate);
      out.push({
        ns: state.ns,
        tool: d.tool,
        upstreamTool: d.upstreamTool,
        level: d.level,
        reasons: d.reasons,
        ...(pinned ? { pinned: pinned.definition.version } : {}),
        candidateHash: d.candidateHash,
        at: d.at,
        ...(diff ? { textDiff: diff } : {}),
      });
    }
    return out;
  }

  /**
   * Publish a tool's pending candidate through the normal publish guard. Version: `version` if given, else the
   * pinned one bumped by the level (1.0.0 for an initial candidate). `access` overrides the candidate's access.
   */
  async approveOne(ns: string, tool: string, o: { by: string; version?: string; access?: Partial<ToolAccess>; candidateHash?: string }): Promise<PublishOutcome> {
    const { state } = await this.active(ns);
    const t = state.tools.get(tool);
    const pinned = await this.pinned(tool);
    const d = t ? pendingDrift(t, servedHash(pinned)) : undefined;
    if (!t || !d) throw new DomainError('not-found', 'no-pending-drift', `no pending candidate for ${tool}`);
    stillTheCandidate(tool, d.candidateHash, o.candidateHash);
    if (o.version !== undefined && !parseVersion(o.version)) {
      throw new DomainError('usage', 'invalid-version', `--version: '${o.version}' is not strict semver MAJOR.MINOR.PATCH (no pre-release, no build, no leading zeros)`);
    }
    const version = o.version ?? nextVersion(pinned?.definition.version, d.level);
    const access = { ...d.candidate.access, ...o.access };
    const def: ToolDefinition = {
      ...d.candidate,
      version,
      access: { ...access, requiredScopes: [...new Set(access.requiredScopes)].sort(), tenants: [...new Set(access.tenants)].sort() },
    };
    return this.deps.commands.publish(def, o.by, { classify: (before, after) => this.deps.definitions.classify(before, after) });
  }

  /** The candidate against the pinned version, in the checker's worker; a classification past the budget refuses it. */
  private async classify(baseline: Pinned | undefined, c: UpstreamCandidate, ownPinned = true): Promise<{ ok: true; level: DriftData['level']; reasons: Reason[] } | { ok: false; error: DomainError }> {
    if (!baseline) return { ok: true, level: 'initial', reasons: [] };
    const pinned = baseline.definition;
    try {
      const classified = await this.deps.definitions.classify(pinned, { ...c, version: pinned.version });
      const reasons = [...classified.reasons, ...notServed(baseline)];
      if (!ownPinned && baseline.status === 'active' && !localTakeover(pinned, c)) {
        reasons.push({ level: 'patch', path: 'version', rule: 'pinned-not-listed', detail: `${pinned.name}@${pinned.version} is not a listing of this upstream's (a version published by hand over it): approving replaces it` });
      }
      const takeover = localTakeover(pinned, c);
      if (takeover) return { ok: true, level: 'major', reasons: [...reasons, takeover] };
      return { ok: true, level: classified.level, reasons };
    } catch (e) {
      if (e instanceof DomainError) return { ok: false, error: e };
      throw e;
    }
  }

  /** Every pending candidate of the namespace, in name order; stops at nothing (each verdict is reported). */
  async approveAll(ns: string, o: { by: string; version?: string; access?: Partial<ToolAccess> }): Promise<PublishOutcome[]> {
    const out: PublishOutcome[] = [];
    for (const p of await this.pending(ns)) out.push(await this.approveOne(ns, p.tool, o));
    return out;
  }

  async reject(ns: string, tool: string, reason: string, by: string, candidateHash?: string): Promise<{ ns: string; tool: string; candidateHash: string; position: string }> {
    if (!reason.trim()) throw new DomainError('usage', 'reason-required', `reject ${tool}: --reason is required`);
    for (let attempt = 1; ; attempt++) {
      const { state, revision } = await this.active(ns);
      const t = state.tools.get(tool);
      const pinned = await this.pinned(tool);
      const d = t ? pendingDrift(t, servedHash(pinned)) : undefined;
      if (!d) throw new DomainError('not-found', 'no-pending-drift', `no pending candidate for ${tool}`);
      stillTheCandidate(tool, d.candidateHash, candidateHash);
      try {
        const r = await this.append(ns, [{ type: 'UpstreamDriftRejected', data: { ns, tool, candidateHash: d.candidateHash, reason, by, at: this.clock.now() } }], revision);
        return { ns, tool, candidateHash: d.candidateHash, position: r.positions[0] as string };
      } catch (e) {
        if (!(e instanceof ConcurrencyError) || attempt >= MAX_ATTEMPTS) throw e;
      }
    }
  }

  /** Retire every version of the upstream's tools, then record the removal. */
  async remove(ns: string, reason: string, by: string): Promise<{ ns: string; retired: string[]; position: string }> {
    if (!reason.trim()) throw new DomainError('usage', 'reason-required', `remove ${ns}: --reason is required`);
    const { state } = await this.active(ns);
    const retired: string[] = [];
    for (const tool of [...state.tools.keys()].sort()) {
      const { state: ts } = await this.deps.commands.load(tool);
      for (const v of ts.versions.values()) {
        if (v.status === 'retired' || !v.definition.handler.startsWith(`upstream:${ns}/`)) continue;
        await this.deps.commands.retire(tool, v.definition.version, `upstream ${ns} removed: ${reason}`, by);
        retired.push(`${tool}@${v.definition.version}`);
      }
    }
    for (let attempt = 1; ; attempt++) {
      const { revision } = await this.active(ns);
      try {
        const r = await this.append(ns, [{ type: 'UpstreamRemoved', data: { ns, reason, retired, by, at: this.clock.now() } }], revision);
        return { ns, retired, position: r.positions[0] as string };
      } catch (e) {
        if (!(e instanceof ConcurrencyError) || attempt >= MAX_ATTEMPTS) throw e;
      }
    }
  }

  /** One row of `estate upstream list` (status is the registration's; a serving process adds up/down). */
  async summary(ns: string): Promise<{ ns: string; transport: string; target: string; tools: number; pending: number; status: string }> {
    const o = await this.overview(ns);
    return { ns, transport: o.transport, target: o.target, tools: o.tools, pending: o.pending.length, status: o.status };
  }

  /**
   * The summary with its pending candidates (the console's row), each tool's pinned version read once: the console
   * asked for the summary and then the pending list, three reads per tool (~70-100 ms a page beside a 1,000-tool
   * upstream).
   */
  async overview(ns: string): Promise<{ ns: string; transport: string; target: string; tools: number; pending: PendingView[]; status: string }> {
    const { state } = await this.load(ns);
    if (!state) throw new DomainError('not-found', 'unknown-upstream', `unknown upstream '${ns}'`);
    const pinned = new Map<string, Pinned | undefined>();
    for (const t of state.tools.keys()) pinned.set(t, await this.pinned(t));
    const active = state.status === 'active';
    const tools = active ? [...pinned.values()].filter((d) => d !== undefined).length : 0;
    const nowMs = Date.parse(this.clock.now());
    // A pending drift is undecided: with its window full, its next change is recorded no sooner than that (read from
    // the events, so every replica's console can say so, not only the one whose sync saw a newer change).
    const pending = (active ? await this.pendingIn(state, (t) => Promise.resolve(pinned.get(t))) : []).map((d) => {
      const full = windowFullUntil(changesWithin(state.tools.get(d.tool), nowMs));
      return full === undefined ? d : { ...d, nextRecordedAfter: full };
    });
    return { ns, transport: state.target.transport, target: describeTarget(state.target), tools, pending, status: state.status };
  }
}
