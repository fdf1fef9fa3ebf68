/**
 * How fast an upstream's output is read: at most MAX_EVENT_LINES_PER_SECOND lines a second over all the event streams
 * of one HTTP upstream endpoint (its calls' streams once handed over as streams, and its standalone GET stream;
 * ./http-fetch.ts), and of one stdio child's output (./stdio-answers.ts).
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

/** Paces per upstream endpoint (origin and path): every stream of one upstream shares one. */
export class EndpointPaces {
  private readonly paces = new Map<string, LinePace>();

  constructor(private readonly o: PaceOptions = {}) {}

  /** Take `lines` of `endpoint`'s streams: how many ms its stream waits before it is read on. */
  take(endpoint: string, lines: number): number {
    if (lines === 0) return 0;
    let pace = this.paces.get(endpoint);
    if (pace === undefined) {
      // Endpoints that rested (their burst whole again) are forgotten: the map holds only upstreams streaming now.
      if (this.paces.size >= 256) for (const [k, p] of this.paces) if (p.rested) this.paces.delete(k);
      pace = new LinePace(this.o.linesPerSecond, this.o.now);
      this.paces.set(endpoint, pace);
    }
    return pace.take(lines);
  }
}
