/**
 * Prometheus metrics (SPEC §9), `estate_` prefixed with units in the names. Counters and the duration histogram are
 * fed by hooks on the call path; gauges (catalogue, sessions, upstreams) are read from their sources at scrape time.
 */
import { collectDefaultMetrics, Counter, Gauge, Registry } from 'prom-client';
import type { ListenerCounts } from '#http/connection-limits';
import { createCallCounter, createCallHistogram } from './call-series.ts';
import type { LagProbe, LagReading } from './lag.ts';
import type { HeldBack } from '#app/ports';

/** What the upstream room reports per upstream this process fronts (none: no series). */
export interface UpstreamStatus {
  namespace: string;
  /** Connected, and its circuit breaker closed. */
  up: boolean;
  /** Drift detected and awaiting a decision. */
  pendingDrift: number;
  /** Changes its last sync saw and left for a sync after the change window (src/upstream/registry.ts). */
  changesWaiting: number;
}

/** The bound on upstream answers held at once (src/upstream/answer-budget.ts). */
export interface UpstreamAnswerCounts {
  held: number;
  /** Answers refused since start, per upstream namespace. */
  refused: ReadonlyMap<string, number>;
}

export interface MetricSources {
  catalogue: () => { size: number; position: string | null };
  sessions?: () => number;
  /** Read at scrape time (the pending drift from the store): once per scrape for both series. */
  upstreams?: () => Promise<readonly UpstreamStatus[]>;
  upstreamAnswers?: () => UpstreamAnswerCounts;
  /** The HTTP listener's connections (src/http/connection-limits.ts); undefined (stdio): no connection series. */
  connections?: () => ListenerCounts | undefined;
  /** Relay and consumer lag, read at scrape time (./lag.ts); absent: no lag series. */
  lag?: LagProbe;
  /** What the store's log holds back behind an open transaction (PostgreSQL), read at scrape time; absent: no series. */
  heldBack?: () => Promise<HeldBack>;
}

export interface ToolCallObservation {
  tool: string;
  version: string;
  /** A recorded outcome, or `store_unavailable` when the intent or the record could not be written. */
  outcome: string;
  seconds: number;
}

export interface EstateMetrics {
  readonly registry: Registry;
  toolCall(o: ToolCallObservation): void;
  request(method: string, revision: string, outcome: string): void;
  render(): Promise<{ contentType: string; body: string }>;
}

/** The tools/call duration histogram's upper bounds, in seconds. */
export const TOOL_CALL_SECONDS_BUCKETS: readonly number[] = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/** The HTTP listener's series (its connection and body bounds: src/http/connection-limits.ts), read at scrape time. */
const listenerSeries = (registry: Registry, read: () => ListenerCounts | undefined): void => {
  const gauge = (name: string, help: string, value: (c: ListenerCounts) => number) =>
    new Gauge({
      name,
      help,
      registers: [registry],
      collect() {
        const c = read();
        this.reset();
        if (c) this.set(value(c));
      },
    });
  gauge('estate_http_connections', 'open HTTP connections on this replica', (c) => c.open);
  gauge('estate_http_body_bytes_reading', 'bytes of HTTP request bodies being read now, bounded by ESTATE_MAX_BODY_BUFFER_BYTES', (c) => c.bodyBytes);
  new Counter({
    name: 'estate_http_bodies_refused_total',
    help: 'HTTP request bodies answered 503: reading them would pass ESTATE_MAX_BODY_BUFFER_BYTES',
    registers: [registry],
    collect() {
      this.reset();
      this.inc(read()?.bodiesRefused ?? 0);
    },
  });
  new Counter({
    name: 'estate_http_connections_refused_total',
    help: 'HTTP connections answered 503 and closed at once: past ESTATE_MAX_CONNECTIONS (total) or ESTATE_MAX_CONNECTIONS_PER_PEER (peer)',
    labelNames: ['reason'],
    registers: [registry],
    collect() {
      const c = read();
      this.reset();
      if (!c) return;
      this.inc({ reason: 'total' }, c.refused.total);
      this.inc({ reason: 'peer' }, c.refused.peer);
    },
  });
};

export const createMetrics = (sources: MetricSources): EstateMetrics => {
  const registry = new Registry();
  // One store read per scrape feeds every lag gauge: the first collect() reads, the others share it; render() clears it.
  let lagReading: Promise<LagReading> | null = null;
  let heldReading: Promise<HeldBack> | null = null;
  let upstreamReading: Promise<readonly UpstreamStatus[]> | null = null;
  const upstreams = (): Promise<readonly UpstreamStatus[]> => (upstreamReading ??= sources.upstreams?.() ?? Promise.resolve([]));
  collectDefaultMetrics({ register: registry, prefix: 'estate_' });
  // Counted on every call: series of our own (./call-series.ts), read out as prom-client's would be.
  const requests = createCallCounter({ name: 'estate_mcp_requests_total', help: 'MCP requests by method, protocol revision and outcome (ok or the JSON-RPC error code)', labelNames: ['method', 'revision', 'outcome'], registry });
  const calls = createCallCounter({ name: 'estate_tool_calls_total', help: 'tools/call by tool, version and outcome', labelNames: ['tool', 'version', 'outcome'], registry });
  const duration = createCallHistogram({
    name: 'estate_tool_call_duration_seconds',
    help: 'tools/call duration (handler, checks and the durable record) by tool, version and outcome',
    labelNames: ['tool', 'version', 'outcome'],
    buckets: TOOL_CALL_SECONDS_BUCKETS,
    registry,
  });
  new Gauge({
    name: 'estate_catalogue_tools',
    help: 'tool names in the catalogue read model',
    registers: [registry],
    collect() {
      this.set(sources.catalogue().size);
    },
  });
  new Gauge({
    name: 'estate_catalogue_position',
    help: 'the catalogue read model position where the store makes numeric positions (SQLite, memory); else absent',
    registers: [registry],
    collect() {
      const p = sources.catalogue().position;
      this.reset();
      if (p !== null && /^\d+$/.test(p)) this.set(Number(p));
    },
  });
  new Gauge({
    name: 'estate_sessions',
    help: 'open MCP sessions on this replica',
    registers: [registry],
    collect() {
      this.set(sources.sessions?.() ?? 0);
    },
  });
  if (sources.connections) listenerSeries(registry, sources.connections);
  new Gauge({
    name: 'estate_upstream_up',
    help: '1 when the upstream MCP server answers, else 0',
    labelNames: ['namespace'],
    registers: [registry],
    async collect() {
      this.reset();
      for (const u of await upstreams()) this.set({ namespace: u.namespace }, u.up ? 1 : 0);
    },
  });
  new Gauge({
    name: 'estate_upstream_pending_drift',
    help: 'drifted upstream tools awaiting approve or reject',
    labelNames: ['namespace'],
    registers: [registry],
    async collect() {
      this.reset();
      for (const u of await upstreams()) this.set({ namespace: u.namespace }, u.pendingDrift);
    },
  });
  new Gauge({
    name: 'estate_upstream_changes_waiting',
    help: 'changes of an upstream\'s tools its last sync saw but did not record yet: past what one change window records',
    labelNames: ['namespace'],
    registers: [registry],
    async collect() {
      this.reset();
      for (const u of await upstreams()) this.set({ namespace: u.namespace }, u.changesWaiting);
    },
  });
  if (sources.upstreamAnswers) {
    const read = sources.upstreamAnswers;
    new Gauge({
      name: 'estate_upstream_answer_bytes_held',
      help: 'bytes of HTTP upstream answers held by calls and syncs in flight, bounded by ESTATE_MAX_UPSTREAM_BUFFER_BYTES',
      registers: [registry],
      collect() {
        this.set(read().held);
      },
    });
    new Counter({
      name: 'estate_upstream_answers_refused_total',
      help: 'HTTP upstream answers dropped (the call fails upstream_unavailable): holding them would pass ESTATE_MAX_UPSTREAM_BUFFER_BYTES or the upstream\'s share of it',
      labelNames: ['namespace'],
      registers: [registry],
      collect() {
        this.reset();
        for (const [namespace, n] of read().refused) this.inc({ namespace }, n);
      },
    });
  }
  if (sources.lag) {
    const lag = sources.lag;
    const read = (): Promise<LagReading> => (lagReading ??= lag());
    new Gauge({
      name: 'estate_catalogue_lag_events',
      help: 'consumer lag: catalogue events in the store that this replica has not applied yet (counted up to 10000)',
      registers: [registry],
      async collect() {
        this.set((await read()).catalogueEvents);
      },
    });
  }
  if (sources.lag?.relay) {
    const read = (): Promise<LagReading> => (lagReading ??= sources.lag!());
    new Gauge({
      name: 'estate_relay_lag_events',
      help: 'relay lag: catalogue events not yet acknowledged by Kafka (counted up to 10000); absent on the local bus',
      registers: [registry],
      async collect() {
        const r = (await read()).relay;
        this.reset();
        if (r) this.set(r.events);
      },
    });
    new Gauge({
      name: 'estate_relay_lag_seconds',
      help: 'relay lag: age of the oldest catalogue event not yet acknowledged by Kafka (0 when none); absent on the local bus',
      registers: [registry],
      async collect() {
        const r = (await read()).relay;
        this.reset();
        if (r) this.set(r.oldestSeconds);
      },
    });
  }
  if (sources.heldBack) {
    const held = sources.heldBack;
    const read = (): Promise<HeldBack> => (heldReading ??= held());
    new Gauge({
      name: 'estate_store_held_events',
      help: 'committed events the log is not read past yet: written after the oldest transaction still open in the PostgreSQL cluster (counted up to 10000)',
      registers: [registry],
      async collect() {
        this.set((await read()).events);
      },
    });
    new Gauge({
      name: 'estate_store_held_seconds',
      help: 'age of the oldest committed event the log is not read past yet (0 when none): how long an open transaction has held back every reader and the relay',
      registers: [registry],
      async collect() {
        this.set((await read()).oldestSeconds);
      },
    });
    new Gauge({
      name: 'estate_store_held_by_seconds',
      help: 'the transaction holding the log back, while one does (no series otherwise): its labels name it, its value is its age in seconds (when the role cannot see its start: the held seconds, a lower bound)',
      labelNames: ['pid', 'prepared', 'database', 'user', 'application'],
      registers: [registry],
      async collect() {
        const { holder, oldestSeconds } = await read();
        this.reset();
        if (!holder) return;
        const labels = { pid: holder.pid === undefined ? '' : String(holder.pid), prepared: holder.prepared ?? '', database: holder.database, user: holder.user, application: holder.application };
        this.set(labels, holder.seconds ?? oldestSeconds);
      },
    });
  }
  return {
    registry,
    toolCall({ tool, version, outcome, seconds }) {
      calls.inc(tool, version, outcome);
      duration.observe(tool, version, outcome, seconds);
    },
    request(method, revision, outcome) {
      requests.inc(method, revision, outcome);
    },
    async render() {
      lagReading = null;
      upstreamReading = null;
      heldReading = null;
      return { contentType: registry.contentType, body: await registry.metrics() };
    },
  };
};
