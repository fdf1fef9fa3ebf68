/**
 * The OpenTelemetry SDK, started by `estate serve` only when src/config.ts found an OTLP endpoint (TracingConfig);
 * otherwise this module loads nothing and the tracing port (src/app/tracing.ts) stays off. The SDK reads the rest of
 * the standard OTEL_* variables itself (service name, resource attributes, sampler, batching, headers, timeouts).
 * Estate exports traces only: metrics are Prometheus at /metrics, logs are pino on stderr.
 */
import { diag, DiagLogLevel, type DiagLogger } from '@opentelemetry/api';
import type { Log } from '#app/log';
import { setTracingEnabled } from '#app/tracing';
import type { TracingConfig } from '#config';
import { SERVER_INFO } from '#mcp/server-info';

export interface Tracing {
  /** Export what is buffered and stop; bounded, so an unreachable collector never holds up a shutdown. */
  shutdown(): Promise<void>;
}

/** How long a stop waits for the last spans to leave. */
const FLUSH_BUDGET_MS = 5000;

const DIAG_LEVEL: Record<TracingConfig['diagLevel'], DiagLogLevel> = {
  none: DiagLogLevel.NONE,
  error: DiagLogLevel.ERROR,
  warn: DiagLogLevel.WARN,
  info: DiagLogLevel.INFO,
  debug: DiagLogLevel.DEBUG,
  verbose: DiagLogLevel.VERBOSE,
  all: DiagLogLevel.ALL,
};

/** The SDK's own diagnostics (an export that failed, a bad variable) as Estate log lines, never on stdout. */
const diagOver = (log: Log): DiagLogger => {
  const line = (level: 'debug' | 'info' | 'warn' | 'error') => (message: string, ...args: unknown[]) =>
    log[level]({ component: 'opentelemetry', ...(args.length > 0 ? { detail: args.map((a) => (a instanceof Error ? a.message : String(a)).slice(0, 500)) } : {}) }, message.slice(0, 500));
  return { error: line('error'), warn: line('warn'), info: line('info'), debug: line('debug'), verbose: line('debug') };
};

const withoutCredentials = (endpoint: string): string => {
  const u = new URL(endpoint);
  u.username = '';
  u.password = '';
  u.search = '';
  return u.toString();
};

export const startTracing = async (config: TracingConfig | undefined, log: Log): Promise<Tracing | null> => {
  if (!config) return null;
  const { NodeSDK, resources } = await import('@opentelemetry/sdk-node');
  const sdk = new NodeSDK({
    // Estate's name and version unless OTEL_SERVICE_NAME / OTEL_RESOURCE_ATTRIBUTES say otherwise (they are merged over it).
    resource: resources.defaultResource().merge(resources.resourceFromAttributes({ 'service.name': SERVER_INFO.name, 'service.version': SERVER_INFO.version })),
    // Traces only: no OTLP metric reader, no log processor (whatever OTEL_METRICS_EXPORTER / OTEL_LOGS_EXPORTER say).
    metricReaders: [],
    logRecordProcessors: [],
    instrumentations: [],
  });
  // After the SDK's constructor, which installs a console logger when OTEL_LOG_LEVEL is set.
  diag.setLogger(diagOver(log), { logLevel: DIAG_LEVEL[config.diagLevel], suppressOverrideMessage: true });
  sdk.start();
  setTracingEnabled(true);
  log.info({ endpoint: withoutCredentials(config.endpoint), protocol: config.protocol }, 'tracing: exporting spans by OTLP');
  return {
    async shutdown() {
      setTracingEnabled(false);
      let timer: NodeJS.Timeout | undefined;
      const budget = new Promise<'late'>((resolve) => {
        timer = setTimeout(() => resolve('late'), FLUSH_BUDGET_MS);
        timer.unref();
      });
      const done = await Promise.race([sdk.shutdown().then(() => 'ok' as const, (e: unknown) => e), budget]);
      clearTimeout(timer);
      if (done === 'late') log.warn({ budgetMs: FLUSH_BUDGET_MS }, 'tracing: the last spans were not exported in time; dropped');
      else if (done !== 'ok') log.warn({ error: done instanceof Error ? done.message : String(done) }, 'tracing: shutdown failed');
    },
  };
};
