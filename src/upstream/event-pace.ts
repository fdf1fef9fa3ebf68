/**
 * How fast an upstream's output is read: at most MAX_EVENT_LINES_PER_SECOND lines a second over all the event streams
 * of one HTTP upstream endpoint (its calls' streams once handed over as streams, and its standalone GET stream;
 * ./http-fetch.ts), shared fairly between the streams reading, and of one stdio child's output (./stdio-answers.ts).
 *
 * Every event with data an HTTP upstream sends costs the serving thread the SDK's reading of it (web streams, the
 * event parser, its JSON and its schema checks, the dispatch): ~110 µs each for a log line of one character; a stdio
 * message ~40 µs. Measured with `bench/upstream-flood.ts`: an upstream flooding one call with 30,000 of them held the
 * serving thread ~3 s (HTTP) or ~1 s (stdio), every other caller of the process waiting behind them (a tools/list up
 * to 965 ms). Estate relays at most 1,000 log lines and 10,000 progress notifications of a call
 * (src/mcp/client-channel.ts) and reads the rest only to drop them. So what one upstream sends is paced: past its
 * lines, nothing more is read until the pace allows again (the socket or the pipe pushes back, the upstream waits),
 * nothing dropped, every byte delivered in order. An HTTP stream that only answers (a JSON body, or an event stream
 * holding its response alone) is not paced: those are calls, and calls have their own bounds.
 *
 * Lines, not events: a comment line (`:`) costs the event parser a step too, and an upstream that never ends an event
 * could otherwise send 64 MiB of them (32 million lines) before the event bound stops it.
 */

/** Lines a second one upstream's event streams are read at, at most (about 1,500 events of four lines). */
export const MAX_EVENT_LINES_PER_SECOND = 6_000;

const LF = 0x0a;
const CR = 0x0d;

/** Lines that end in `c`: LF or CR, whichever ends more (CRLF counts once; a stream of lone CRs is counted too). */
export const lineEnds = (c: Uint8Array): number => {
  let lf = 0;
  let cr = 0;
  for (let i = c.indexOf(LF); i >= 0; i = c.indexOf(LF, i + 1)) lf++;
  for (let i = c.indexOf(CR); i >= 0; i = c.indexOf(CR, i + 1)) cr++;
  return Math.max(lf, cr);
};

/**
 * A token bucket of lines: a tenth of a second's worth may come at once (a burst the serving thread reads in some
 * 20 ms), and what is taken past it is paid back in time.
 */
export class LinePace {
  private tokens: number;
  private at: number;
  /** The most lines read with no wait. */
  readonly burst: number;

  constructor(
    readonly perSecond: number = MAX_EVENT_LINES_PER_SECOND,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.burst = Math.max(1, Math.ceil(perSecond / 10));
    this.tokens = this.burst;
    this.at = now();
  }

  /** Take `lines`: how many ms the reader waits before reading on (0: at once). */
  take(lines: number): number {
    this.refill();
    this.tokens -= lines;
    return this.tokens >= 0 ? 0 : Math.ceil((-this.tokens * 1000) / this.perSecond);
  }

  /** Full again (nothing taken for a tenth of a second): the pace may be forgotten. */
  get rested(): boolean {
    this.refill();
    return this.tokens >= this.burst;
  }

  private refill(): void {
    const t = this.now();
    this.tokens = Math.min(this.burst, this.tokens + ((t - this.at) * this.perSecond) / 1000);
    this.at = t;
  }
}

/** The rate and the clock of a set of paces (a test gives its own). */
export interface PaceOptions {
  linesPerSecond?: number;
  now?: () => number;
}

/** How long a stream still counts as reading once it has paid for what it took (ms). */
const READING_FOR_MS = 1000;

/**
 * One stream's share of its endpoint's pace: `take(lines)` says how many ms the stream waits before it reads on;
 * `close()` once the stream has ended (it no longer counts as reading).
 */
export interface StreamPace {
  take(lines: number): number;
  close(): void;
}

/**
 * One upstream endpoint's pace, shared fairly by its streams. The endpoint has a bucket at its rate, and each stream
 * reading now (open, and it took lines within the last second or has not yet paid for them) one at the rate divided by
 * how many are reading. A stream that keeps to its share reads on at once, whatever the others took; one past it
 * waits until either its own bucket or the endpoint's has paid for what it took, whichever comes first. So one stream
 * flooding is held to what the others leave of the endpoint's rate (all of it, if they send little), and another
 * stream of the same upstream, sending little, is not made to wait for the flood: one bucket for the whole endpoint
 * did that (a call streaming ten log lines 20 ms apart beside another call's flood of events holding only a comment
 * took 7.3 s, p50, up to 90 s: `bench/upstream-flood.ts --beside call --logs 0 --empty 300000`). The streams together
 * are still read at about the endpoint's rate: each reads past its share only while the endpoint's bucket has room.
 */
class SharedPace {
  private readonly total: LinePace;
  private readonly reading = new Set<StreamShare>();
  /** Streams made and not yet closed (a quiet one holds its share object: its endpoint is not forgotten under it). */
  private open = 0;

  constructor(
    readonly perSecond: number,
    readonly now: () => number,
  ) {
    this.total = new LinePace(perSecond, now);
  }

  stream(): StreamPace {
    this.open++;
    return new StreamShare(this);
  }

  /** Take `lines` from the endpoint's bucket: how many ms until it has paid for them. */
  takeTotal(lines: number): number {
    return this.total.take(lines);
  }

  /** How many streams read now, `s` counted among them. */
  readers(s: StreamShare, t: number): number {
    this.reading.add(s);
    for (const r of this.reading) if (r.paidAt + READING_FOR_MS <= t && r !== s) this.reading.delete(r);
    return this.reading.size;
  }

  leave(s: StreamShare): void {
    this.open--;
    this.reading.delete(s);
  }

  /** How many streams read now (their shares of the rate). */
  readingNow(t: number): number {
    let n = 0;
    for (const r of this.reading) if (r.paidAt + READING_FOR_MS > t) n++;
    return n;
  }

  /**
   * No stream is open and the endpoint's bucket is full: the endpoint may be forgotten. (An open stream keeps its share:
   * forgotten under it, a new stream of the endpoint would start a second pace beside the first.)
   */
  idle(): boolean {
    return this.open <= 0 && this.total.rested;
  }
}

class StreamShare implements StreamPace {
  private tokens = Number.NaN;
  private at = 0;
  private closed = false;
  /** When what it took is paid for (it reads on then). */
  paidAt = Number.NEGATIVE_INFINITY;

  constructor(private readonly shared: SharedPace) {}

  take(lines: number): number {
    if (lines === 0) return 0;
    const t = this.shared.now();
    const rate = this.shared.perSecond / (this.closed ? 1 : this.shared.readers(this, t));
    const burst = Math.max(1, Math.ceil(rate / 10));
    this.tokens = Number.isNaN(this.tokens) ? burst : Math.min(burst, this.tokens + ((t - this.at) * rate) / 1000);
    this.at = t;
    this.tokens -= lines;
    const own = this.tokens >= 0 ? 0 : Math.ceil((-this.tokens * 1000) / rate);
    const wait = Math.min(own, this.shared.takeTotal(lines));
    this.paidAt = t + wait;
    return wait;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.shared.leave(this);
  }
}

/** Paces per upstream endpoint (origin and path): the streams of one upstream share one, fairly (SharedPace). */
export class EndpointPaces {
  private readonly paces = new Map<string, SharedPace>();

  constructor(private readonly o: PaceOptions = {}) {}

  /** A new stream of `endpoint`'s: its share of that endpoint's pace. */
  stream(endpoint: string): StreamPace {
    let pace = this.paces.get(endpoint);
    if (pace === undefined) {
      // Endpoints with no stream open are forgotten: the map holds only upstreams streaming now.
      if (this.paces.size >= 256) for (const [k, p] of this.paces) if (p.idle()) this.paces.delete(k);
      pace = new SharedPace(this.o.linesPerSecond ?? MAX_EVENT_LINES_PER_SECOND, this.o.now ?? (() => performance.now()));
      this.paces.set(endpoint, pace);
    }
    return pace.stream();
  }

  /** How many of `endpoint`'s streams read now (an ended stream is not counted). */
  reading(endpoint: string): number {
    return this.paces.get(endpoint)?.readingNow((this.o.now ?? (() => performance.now()))()) ?? 0;
  }
}
