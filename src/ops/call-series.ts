/**
 * The series counted on the call path (a counter and a histogram per label set of three labels), kept here and turned
 * into exposition only when scraped. prom-client's own Counter and Histogram hash and check the labels on every update;
 * on the serving thread of a busy server that was ~6% of a stateless tools/call (bench/mcp-ab.ts with the hooks off:
 * 1.051x the calls per second, 0.939x the CPU per call). Here an update is three Map lookups and a few additions,
 * counted at once instead of in a later loop turn (which ServerCore did to keep prom-client's cost off the answer).
 * Measured the same way against the commit before: stateless 1.036x and 1.020x the calls per second (CPU per call
 * 0.962x, 0.976x), a 2025 session 1.058x (0.949x).
 *
 * Each series is a prom-client metric object (`name`, `help`, `type`, `get`, `getForPromString`, `reset`) registered in
 * the same Registry, so /metrics reads exactly as it did with prom-client's classes (test/unit/ops-call-series.test.ts
 * compares the two, series by series, on the same observations).
 */
import type { Metric, Registry } from 'prom-client';

type Labels = Record<string, string>;

/** One line of exposition: `metricName{labels,sharedLabels} value` (the Registry writes it). */
interface Exposed {
  labels: Record<string, string | number>;
  sharedLabels?: Labels;
  value: number;
  metricName?: string;
  exemplar?: null;
}

/** A series' heading: what the Registry writes as its HELP and TYPE lines, and how it merges workers' values. */
interface Heading {
  name: string;
  help: string;
  type: 'counter' | 'histogram';
  aggregator: 'sum';
}

/** What prom-client's Registry reads of a metric; its types name only its own classes, so the object is cast once. */
interface ReadableMetric extends Heading {
  getForPromString(): Promise<Heading & { values: Exposed[] }>;
  get(): Promise<Heading & { values: Exposed[] }>;
  reset(): void;
}

const register = (registry: Registry, metric: ReadableMetric): void => registry.registerMetric(metric as unknown as Metric);

/** Cells by three label values, in the order the label sets first came (as prom-client's series are written). */
class Cells<C> {
  private readonly byFirst = new Map<string, Map<string, Map<string, C>>>();
  readonly entries: { labels: Labels; cell: C }[] = [];

  constructor(
    private readonly names: readonly [string, string, string],
    private readonly make: () => C,
  ) {}

  get(a: string, b: string, c: string): C {
    let second = this.byFirst.get(a);
    if (second === undefined) this.byFirst.set(a, (second = new Map()));
    let third = second.get(b);
    if (third === undefined) second.set(b, (third = new Map()));
    let cell = third.get(c);
    if (cell === undefined) {
      cell = this.make();
      third.set(c, cell);
      const [x, y, z] = this.names;
      this.entries.push({ labels: { [x]: a, [y]: b, [z]: c }, cell });
    }
    return cell;
  }

  clear(): void {
    this.byFirst.clear();
    this.entries.length = 0;
  }
}

interface SeriesOptions {
  name: string;
  help: string;
  labelNames: readonly [string, string, string];
  registry: Registry;
}

export interface CallCounter {
  inc(a: string, b: string, c: string): void;
}

export const createCallCounter = (o: SeriesOptions): CallCounter => {
  const cells = new Cells(o.labelNames, () => ({ n: 0 }));
  const heading: Heading = { name: o.name, help: o.help, type: 'counter', aggregator: 'sum' };
  const read = async () => ({ ...heading, values: cells.entries.map(({ labels, cell }) => ({ labels: { ...labels }, value: cell.n })) });
  register(o.registry, { ...heading, get: read, getForPromString: read, reset: () => cells.clear() });
  return {
    inc(a, b, c) {
      cells.get(a, b, c).n++;
    },
  };
};

export interface CallHistogram {
  observe(a: string, b: string, c: string, value: number): void;
}

interface HistogramCell {
  count: number;
  sum: number;
  /** Observations per bucket (not cumulative): `value <= bounds[i]` and above the bound before it. */
  buckets: number[];
}

export const createCallHistogram = (o: SeriesOptions & { buckets: readonly number[] }): CallHistogram => {
  const bounds = [...o.buckets].sort((x, y) => x - y);
  const cells = new Cells<HistogramCell>(o.labelNames, () => ({ count: 0, sum: 0, buckets: bounds.map(() => 0) }));
  /** As prom-client writes a histogram: each bound's cumulative count with `le` first, then +Inf, the sum and the count. */
  const values = (): Exposed[] =>
    cells.entries.flatMap(({ labels, cell }) => {
      let acc = 0;
      // prom-client marks a bucket's line as having no exemplar (null), the sum's and the count's not at all.
      const bucket = (le: number | '+Inf', value: number): Exposed => ({ labels: { le }, sharedLabels: labels, value, metricName: `${o.name}_bucket`, exemplar: null });
      const total = (value: number, metricName: string): Exposed => ({ labels: {}, sharedLabels: labels, value, metricName });
      return [
        ...bounds.map((bound, i) => bucket(bound, (acc += cell.buckets[i]!))),
        bucket('+Inf', cell.count),
        total(cell.sum, `${o.name}_sum`),
        total(cell.count, `${o.name}_count`),
      ];
    });
  const heading: Heading = { name: o.name, help: o.help, type: 'histogram', aggregator: 'sum' };
  register(o.registry, {
    ...heading,
    getForPromString: async () => ({ ...heading, values: values() }),
    // The JSON form has each value's labels whole (prom-client splays the shared ones in).
    get: async () => ({ ...heading, values: values().map(({ labels, sharedLabels, ...rest }) => ({ ...rest, labels: { ...labels, ...sharedLabels } })) }),
    reset: () => cells.clear(),
  });
  return {
    observe(a, b, c, value) {
      const cell = cells.get(a, b, c);
      cell.count++;
      cell.sum += value;
      for (let i = 0; i < bounds.length; i++) {
        if (value <= bounds[i]!) {
          cell.buckets[i]!++;
          return;
        }
      }
    },
  };
};
