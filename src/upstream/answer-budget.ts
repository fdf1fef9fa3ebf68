/**
 * How much of HTTP upstreams' answers one serving process holds at once (`ESTATE_MAX_UPSTREAM_BUFFER_BYTES`).
 *
 * One answer is bounded by MAX_UPSTREAM_BODY_BYTES (below; ./http-fetch.ts enforces it), but not the answers of many
 * calls at once: each is read whole, parsed and relayed, several copies of it alive until the call ends (probed:
 * eight calls at once to a tool answering 60 MiB each took a server from 230 to 2,222 MiB resident). So every proxied
 * call and every sync runs inside an account: the fetch charges it each byte it holds of an answer (of an event
 * stream handed over as a stream, its largest event: the events before it are gone once read), and the account gives
 * it all back when the call or the sync ends. A charge past the process's total, or past one upstream's share of it
 * (half, and at least one whole answer, so one upstream that turns hostile or one tool that answers that much cannot
 * starve the others), is refused: that answer is dropped at once, nothing more of it read, and the call fails
 * `upstream_unavailable` naming the bound. Under contention the answers refused give their bytes back, so the others
 * go on.
 *
 * A stdio upstream's answers are charged the same way, each whole line to the call or sync whose request it answers
 * (./stdio-answers.ts).
 *
 * What runs outside any account (the handshake, the standalone GET stream) is bounded only per answer and per event.
 */
import { AsyncLocalStorage } from 'node:async_hooks';

/** Most bytes read of one answer that is not handed over as a stream (a JSON body, a buffered event stream). */
export const MAX_UPSTREAM_BODY_BYTES = 64 * 1024 * 1024;
/** The process's total by default: four whole answers. */
export const DEFAULT_UPSTREAM_BUFFER_BYTES = 4 * MAX_UPSTREAM_BODY_BYTES;

/** Why a charge was refused: the fetch fails its answer with it, the link answers the caller with its message. */
export class AnswerRefused extends Error {
  constructor(
    readonly ns: string,
    readonly bound: 'total' | 'upstream',
    readonly bytes: number,
  ) {
    super(
      bound === 'total'
        ? `the upstream answers held at once would pass ${bytes} bytes (ESTATE_MAX_UPSTREAM_BUFFER_BYTES)`
        : `upstream ${ns}'s answers held at once would pass ${bytes} bytes (its share of ESTATE_MAX_UPSTREAM_BUFFER_BYTES)`,
    );
    this.name = 'AnswerRefused';
  }
}

export interface AnswerCounts {
  /** Bytes charged now, in total. */
  held: number;
  /** Answers refused since start, per upstream namespace. */
  refused: ReadonlyMap<string, number>;
}

/** One call's or one sync's charges, against one upstream's share. */
export class AnswerAccount {
  private charged = 0;
  private closed = false;
  private readonly ended = new AbortController();
  /** The first refusal, if any: what the call fails with. */
  refusal: AnswerRefused | undefined;
  /**
   * Aborted when an answer of this call was dropped (refused, or past its own bound): the call gives up at once. An
   * event stream dropped before its response would otherwise leave the SDK's request waiting for its deadline.
   */
  readonly signal: AbortSignal = this.ended.signal;

  constructor(
    private readonly budget: AnswerBudget,
    readonly ns: string,
  ) {}

  /**
   * Charge `n` more bytes; false (and nothing charged) when that would pass a bound. After the call ended nothing is
   * charged: what its stream still sends (an event after the response) is read and dropped as it comes.
   */
  charge(n: number): boolean {
    if (this.closed) return true;
    const refused = this.budget.take(this.ns, n);
    if (refused) {
      this.refusal ??= refused;
      return false;
    }
    this.charged += n;
    return true;
  }

  /** The call or the sync has ended: nothing more is charged to it. */
  get isClosed(): boolean {
    return this.closed;
  }

  /** An answer of this call was dropped: the call ends with `why`. */
  fail(why: Error): void {
    if (!this.closed && !this.ended.signal.aborted) this.ended.abort(why);
  }

  /** Give back `n` bytes charged before (an answer refused or dropped: what it held is gone). */
  refund(n: number): void {
    const back = Math.min(n, this.charged);
    this.charged -= back;
    this.budget.give(this.ns, back);
  }

  /** The call or the sync ended: everything charged goes back. */
  close(): void {
    this.refund(this.charged);
    this.closed = true;
  }

  private readonly onAbandon = new Set<() => void>();

  /** `fn` runs if the call or sync is abandoned (abandon) while it is registered; returns its unregistration. */
  whenAbandoned(fn: () => void): () => void {
    this.onAbandon.add(fn);
    return () => void this.onAbandon.delete(fn);
  }

  /**
   * The call or sync failed (its deadline, a cancel, an answer dropped): what it still has in flight is given up. A
   * request an upstream never answers otherwise keeps its connection for as long as the upstream likes: 256 such
   * calls took every connection of the pool, and every later call waited behind them until a restart.
   */
  abandon(): void {
    const fns = [...this.onAbandon];
    this.onAbandon.clear();
    for (const fn of fns) fn();
  }
}

const accounts = new AsyncLocalStorage<AnswerAccount>();

/** The account of the call or sync running now (the fetch reads it when a request starts); undefined outside any. */
export const currentAnswerAccount = (): AnswerAccount | undefined => accounts.getStore();

export class AnswerBudget {
  private held = 0;
  private readonly byUpstream = new Map<string, number>();
  private readonly refusedBy = new Map<string, number>();
  /** What one upstream may hold: half the total, and at least one whole answer (never more than the total). */
  readonly share: number;

  constructor(readonly total: number = DEFAULT_UPSTREAM_BUFFER_BYTES) {
    if (!Number.isSafeInteger(total) || total < MAX_UPSTREAM_BODY_BYTES) throw new RangeError(`the upstream answer budget must be at least ${MAX_UPSTREAM_BODY_BYTES} bytes`);
    this.share = Math.min(total, Math.max(MAX_UPSTREAM_BODY_BYTES, Math.floor(total / 2)));
  }

  /**
   * Run one call or sync of upstream `ns`: what its requests read is charged to one account, given back when it ends.
   * If it fails after an answer of it was refused, it fails with that refusal (what the SDK makes of the dropped
   * answer says less).
   */
  async within<T>(ns: string, fn: (account: AnswerAccount) => Promise<T>): Promise<T> {
    const account = new AnswerAccount(this, ns);
    try {
      return await accounts.run(account, () => fn(account));
    } catch (e) {
      throw account.refusal ?? e;
    } finally {
      account.close();
    }
  }

  counts(): AnswerCounts {
    return { held: this.held, refused: this.refusedBy };
  }

  /** For AnswerAccount: charge `n` bytes to `ns`, or say which bound refuses them. */
  take(ns: string, n: number): AnswerRefused | undefined {
    const mine = this.byUpstream.get(ns) ?? 0;
    const over = mine + n > this.share ? new AnswerRefused(ns, 'upstream', this.share) : this.held + n > this.total ? new AnswerRefused(ns, 'total', this.total) : undefined;
    if (over) {
      this.refusedBy.set(ns, (this.refusedBy.get(ns) ?? 0) + 1);
      return over;
    }
    this.held += n;
    this.byUpstream.set(ns, mine + n);
    return undefined;
  }

  /** For AnswerAccount: give `n` bytes back. */
  give(ns: string, n: number): void {
    if (n === 0) return;
    this.held -= n;
    const left = (this.byUpstream.get(ns) ?? 0) - n;
    if (left > 0) this.byUpstream.set(ns, left);
    else this.byUpstream.delete(ns);
  }
}
