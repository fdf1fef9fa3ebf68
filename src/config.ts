/**
 * Configuration: flag, else environment, else default (SPEC §5). Checked with zod so a typo fails at start, loudly.
 * The ONLY module that reads settings from the environment: everything else is handed the values (src/compose).
 */
import { userInfo } from 'node:os';
import { z } from 'zod';
import { DEFAULT_DEFINITION_BUDGET_MS } from '#app/definition-budget';
import { DEFAULT_SNAPSHOT_POLICY } from '#app/snapshot-keeper';
import { loadAuthConfig, type AuthConfig, type AuthFlags } from '#auth/config';
import { DomainError } from '#domain/errors';
import { firstIssue } from '#domain/zod-issues';
import { LOOPBACK_NAMES, MAX_BODY_BYTES } from '#http/guards';
import { MAX_UPSTREAM_BODY_BYTES } from '#upstream/answer-budget';
import { DEFAULT_HEAP_GROWING_PERCENT } from '#ops/heap-policy';

export const DEFAULT_STORE = 'sqlite:.estate/estate.db';
export const DEFAULT_TOPIC = 'estate.catalogue.changes';

/** Defaults of the session limits (docs/security.md). */
export const SESSION_LIMIT_DEFAULTS = { sessionIdleMs: 30 * 60 * 1000, maxSessionsPerSubject: 100, maxSessions: 10_000 } as const;
/** Default of the bound on tools/calls running at once for one subject (docs/security.md). */
export const DEFAULT_MAX_CALLS_PER_SUBJECT = 256;
/** Default of the bound on bytes of answers one subject's clients have left untaken (docs/security.md). */
export const DEFAULT_MAX_UNTAKEN_BYTES_PER_SUBJECT = 64 * 1024 * 1024;
/** Default of the bound on 2026-07-28 `subscriptions/listen` streams open at once for one subject (docs/security.md). */
export const DEFAULT_MAX_LISTENS_PER_SUBJECT = 100;
/** Default of how long a stateless 2026-07-28 call's requestStates are accepted after its first (docs/security.md). */
export const DEFAULT_STATE_TTL_MS = 60 * 60 * 1000;
/** Bounds of ESTATE_STATE_TTL_MS: time for a person to answer a call's questions; at most a day's replay window. */
const STATE_TTL_BOUNDS_MS = { min: 1000, max: 24 * 60 * 60 * 1000 } as const;
const STATE_TTL_RULE = `ESTATE_STATE_TTL_MS must be a whole number of milliseconds from ${STATE_TTL_BOUNDS_MS.min} to ${STATE_TTL_BOUNDS_MS.max}`;
/** Defaults of the 2025-03-26 batch bound (docs/security.md). */
export const BATCH_LIMIT_DEFAULTS = { maxBatchMessages: 100, maxBatchBytes: 256 * 1024 } as const;

const positiveInt = (name: string) =>
  z.coerce.number({ error: `${name} must be a number` }).int(`${name} must be a whole number`).positive(`${name} must be positive`);

const configSchema = z.object({
  store: z.string().min(1),
  bus: z.string().regex(/^(local|kafka:\/\/[^,\s]+(,[^,\s]+)*)$/, 'bus must be `local` or kafka://host:port[,host:port]'),
  topic: z.string().min(1),
  pageSize: positiveInt('ESTATE_PAGE_SIZE').max(500, 'ESTATE_PAGE_SIZE must be at most 500'),
  listTtlMs: positiveInt('ESTATE_LIST_TTL_MS'),
  logLevel: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']),
  actor: z.string().min(1),
  /** Stateful HTTP sessions (docs/security.md): idle expiry, and caps per subject and in total. */
  sessionIdleMs: positiveInt('ESTATE_SESSION_IDLE_MS'),
  maxSessionsPerSubject: positiveInt('ESTATE_MAX_SESSIONS_PER_SUBJECT'),
  maxSessions: positiveInt('ESTATE_MAX_SESSIONS'),
  /** tools/calls running at once for one subject, whatever the transport (src/mcp/server-core.ts). */
  maxCallsPerSubject: positiveInt('ESTATE_MAX_CALLS_PER_SUBJECT'),
  /** Bytes of answers one subject's clients have left untaken, past which its tools/calls are refused (server-core.ts). */
  maxUntakenBytesPerSubject: positiveInt('ESTATE_MAX_UNTAKEN_BYTES_PER_SUBJECT'),
  /** 2026-07-28 listen streams open at once for one subject, over HTTP (src/mcp/streamable-http.ts). */
  maxListensPerSubject: positiveInt('ESTATE_MAX_LISTENS_PER_SUBJECT'),
  /** Open HTTP connections in total and from one address (src/http/connection-limits.ts); absent: from the open-file limit. */
  maxConnections: positiveInt('ESTATE_MAX_CONNECTIONS').optional(),
  maxConnectionsPerPeer: positiveInt('ESTATE_MAX_CONNECTIONS_PER_PEER').optional(),
  /** Bytes of HTTP request bodies being read at once (src/http/connection-limits.ts); absent: 64 MiB. */
  maxBodyBufferBytes: positiveInt('ESTATE_MAX_BODY_BUFFER_BYTES').min(MAX_BODY_BYTES, `ESTATE_MAX_BODY_BUFFER_BYTES must be at least ${MAX_BODY_BYTES} (one whole body)`).optional(),
  /** Bytes of HTTP upstreams' answers held at once (src/upstream/answer-budget.ts); absent: 256 MiB. */
  maxUpstreamBufferBytes: positiveInt('ESTATE_MAX_UPSTREAM_BUFFER_BYTES').min(MAX_UPSTREAM_BODY_BYTES, `ESTATE_MAX_UPSTREAM_BUFFER_BYTES must be at least ${MAX_UPSTREAM_BODY_BYTES} (one whole answer)`).optional(),
  /** A 2025-03-26 JSON-RPC batch: at most this many messages, and this many bytes. */
  maxBatchMessages: positiveInt('ESTATE_MAX_BATCH_MESSAGES').max(10_000, 'ESTATE_MAX_BATCH_MESSAGES must be at most 10000'),
  maxBatchBytes: positiveInt('ESTATE_MAX_BATCH_BYTES').max(1024 * 1024, 'ESTATE_MAX_BATCH_BYTES must be at most 1048576 (the body limit)'),
  /** Signs 2026-07-28 requestStates; replicas behind one endpoint must share it. Absent: a random key per process. */
  stateKey: z.string().min(1).optional(),
  /** How long a call's requestStates are accepted after its first (src/mcp/input-required.ts): people take a while. */
  stateTtlMs: z.coerce
    .number({ error: STATE_TTL_RULE })
    .int(STATE_TTL_RULE)
    .min(STATE_TTL_BOUNDS_MS.min, STATE_TTL_RULE)
    .max(STATE_TTL_BOUNDS_MS.max, STATE_TTL_RULE),
  /** The relay lease (src/app/relay.ts) on a kafka:// bus; absent: the relay's default. */
  relayTtlMs: z.coerce
    .number({ error: 'ESTATE_RELAY_TTL_MS must be a whole number of milliseconds >= 100' })
    .int('ESTATE_RELAY_TTL_MS must be a whole number of milliseconds >= 100')
    .min(100, 'ESTATE_RELAY_TTL_MS must be a whole number of milliseconds >= 100')
    .optional(),
  /**
   * Projection snapshots (src/app/snapshot-keeper.ts): whether a serving process starts from the store's snapshot and
   * keeps it current, and how often it writes one (every so many catalogue events, or so long, whichever is first).
   */
  snapshots: z.enum(['on', 'off'], { error: 'ESTATE_SNAPSHOTS must be on or off' }).transform((v) => v === 'on'),
  snapshotEveryEvents: positiveInt('ESTATE_SNAPSHOT_EVERY_EVENTS'),
  snapshotEveryMs: positiveInt('ESTATE_SNAPSHOT_EVERY_MS').min(1000, 'ESTATE_SNAPSHOT_EVERY_MS must be at least 1000'),
  /** How far a serving process's heap grows between full collections (src/ops/heap-policy.ts); 0: V8's own. */
  heapGrowingPercent: z.coerce
    .number({ error: 'ESTATE_HEAP_GROWING_PERCENT must be a whole number from 0 to 1000' })
    .int('ESTATE_HEAP_GROWING_PERCENT must be a whole number from 0 to 1000')
    .min(0, 'ESTATE_HEAP_GROWING_PERCENT must be a whole number from 0 to 1000')
    .max(1000, 'ESTATE_HEAP_GROWING_PERCENT must be a whole number from 0 to 1000'),
  /** Time to check one definition off the event loop (src/app/definition-budget.ts). */
  schemaBudgetMs: z.coerce
    .number({ error: 'ESTATE_SCHEMA_BUDGET_MS must be a whole number of milliseconds' })
    .int('ESTATE_SCHEMA_BUDGET_MS must be a whole number of milliseconds')
    .min(1, 'ESTATE_SCHEMA_BUDGET_MS must be a whole number of milliseconds'),
});

export type EstateConfig = z.infer<typeof configSchema>;

export interface ConfigFlags {
  store?: string;
  bus?: string;
  by?: string;
}

const osUser = (): string => {
  try {
    return userInfo().username || 'unknown';
  } catch {
    return 'unknown';
  }
};

export const loadConfig = (flags: ConfigFlags = {}, env: NodeJS.ProcessEnv = process.env): EstateConfig => {
  const raw = {
    store: flags.store ?? env.ESTATE_STORE ?? DEFAULT_STORE,
    bus: flags.bus ?? env.ESTATE_BUS ?? 'local',
    topic: env.ESTATE_TOPIC ?? DEFAULT_TOPIC,
    pageSize: env.ESTATE_PAGE_SIZE ?? 500,
    listTtlMs: env.ESTATE_LIST_TTL_MS ?? 60_000,
    logLevel: env.ESTATE_LOG_LEVEL ?? 'info',
    actor: flags.by ?? env.ESTATE_ACTOR ?? osUser(),
    sessionIdleMs: env.ESTATE_SESSION_IDLE_MS ?? SESSION_LIMIT_DEFAULTS.sessionIdleMs,
    maxSessionsPerSubject: env.ESTATE_MAX_SESSIONS_PER_SUBJECT ?? SESSION_LIMIT_DEFAULTS.maxSessionsPerSubject,
    maxSessions: env.ESTATE_MAX_SESSIONS ?? SESSION_LIMIT_DEFAULTS.maxSessions,
    maxCallsPerSubject: env.ESTATE_MAX_CALLS_PER_SUBJECT ?? DEFAULT_MAX_CALLS_PER_SUBJECT,
    maxUntakenBytesPerSubject: env.ESTATE_MAX_UNTAKEN_BYTES_PER_SUBJECT ?? DEFAULT_MAX_UNTAKEN_BYTES_PER_SUBJECT,
    maxListensPerSubject: env.ESTATE_MAX_LISTENS_PER_SUBJECT ?? DEFAULT_MAX_LISTENS_PER_SUBJECT,
    ...(env.ESTATE_MAX_CONNECTIONS ? { maxConnections: env.ESTATE_MAX_CONNECTIONS } : {}),
    ...(env.ESTATE_MAX_CONNECTIONS_PER_PEER ? { maxConnectionsPerPeer: env.ESTATE_MAX_CONNECTIONS_PER_PEER } : {}),
    ...(env.ESTATE_MAX_BODY_BUFFER_BYTES ? { maxBodyBufferBytes: env.ESTATE_MAX_BODY_BUFFER_BYTES } : {}),
    ...(env.ESTATE_MAX_UPSTREAM_BUFFER_BYTES ? { maxUpstreamBufferBytes: env.ESTATE_MAX_UPSTREAM_BUFFER_BYTES } : {}),
    maxBatchMessages: env.ESTATE_MAX_BATCH_MESSAGES ?? BATCH_LIMIT_DEFAULTS.maxBatchMessages,
    maxBatchBytes: env.ESTATE_MAX_BATCH_BYTES ?? BATCH_LIMIT_DEFAULTS.maxBatchBytes,
    ...(env.ESTATE_STATE_KEY ? { stateKey: env.ESTATE_STATE_KEY } : {}),
    stateTtlMs: env.ESTATE_STATE_TTL_MS || DEFAULT_STATE_TTL_MS,
    ...(env.ESTATE_RELAY_TTL_MS ? { relayTtlMs: env.ESTATE_RELAY_TTL_MS } : {}),
    schemaBudgetMs: env.ESTATE_SCHEMA_BUDGET_MS || DEFAULT_DEFINITION_BUDGET_MS,
    heapGrowingPercent: env.ESTATE_HEAP_GROWING_PERCENT || DEFAULT_HEAP_GROWING_PERCENT,
    snapshots: env.ESTATE_SNAPSHOTS || 'on',
    snapshotEveryEvents: env.ESTATE_SNAPSHOT_EVERY_EVENTS || DEFAULT_SNAPSHOT_POLICY.everyEvents,
    snapshotEveryMs: env.ESTATE_SNAPSHOT_EVERY_MS || DEFAULT_SNAPSHOT_POLICY.everyMs,
  };
  const parsed = configSchema.safeParse(raw);
  if (!parsed.success) throw new DomainError('usage', 'bad-config', `configuration: ${firstIssue(parsed.error)}`);
  return parsed.data;
};

/** The flags of `estate serve` (src/cli/serve-command.ts), as commander hands them over. */
export interface ServeFlags extends AuthFlags {
  stdio?: boolean;
  http?: boolean;
  port: string;
  host: string;
  handlers?: string;
  demo?: boolean;
  allowedHosts?: string;
  allowedOrigins?: string;
  upstreams?: string;
  upstreamSyncInterval?: string;
  /** false with --no-console. */
  console?: boolean;
  /** The console's OAuth client at the issuer (with authorization). */
  consoleClientId?: string;
  consoleScope?: string;
  metricsPublic?: boolean;
  /** The principal flags: read here only to refuse them next to authorization. */
  tenant?: string;
  scopes?: string;
  clearance?: string;
  subject?: string;
}

/** What `estate serve` runs with, checked before anything starts (src/compose/serve.ts). */
export interface ServeConfig {
  transport: 'stdio' | 'http';
  port: number;
  host: string;
  allowedHosts: string[];
  allowedOrigins: string[];
  /** An ES module of handlers (SPEC §6). */
  handlersModule?: string;
  demo: boolean;
  /** `all` | `none` | `<ns,...>` as given (src/upstream/pool.ts parses it, so this module loads no upstream code). */
  upstreams?: string;
  upstreamSyncIntervalMs: number;
  console: boolean;
  /** With authorization: how the console signs people in (OAuth 2.1 authorization code + PKCE at the issuer). */
  consoleSignIn?: ConsoleSignInConfig;
  metricsPublic: boolean;
  /** HTTP authorization (src/auth/config.ts); absent: the flags' principal, loopback only. */
  auth?: AuthConfig;
  /** The environment upstream targets' `env:NAME` references read their secrets from (never stored). */
  secretsEnv: NodeJS.ProcessEnv;
  /** OpenTelemetry tracing by OTLP (src/compose/tracing.ts); absent: off, nothing loaded. */
  tracing?: TracingConfig;
}

/**
 * Tracing is on when an OTLP endpoint is set by the standard variables (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, else
 * OTEL_EXPORTER_OTLP_ENDPOINT), unless OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none. Everything else (service
 * name, resource, sampler, batching, headers, timeouts) is the SDK's own reading of the standard OTEL_* variables;
 * what is checked here is what would otherwise fail silently: the endpoint, the protocol and the exporter.
 */
export interface TracingConfig {
  endpoint: string;
  protocol: 'http/protobuf' | 'http/json' | 'grpc';
  /** OTEL_LOG_LEVEL: the SDK's own diagnostics that reach Estate's log (default warn). */
  diagLevel: 'none' | 'error' | 'warn' | 'info' | 'debug' | 'verbose' | 'all';
}

const OTLP_PROTOCOLS = ['http/protobuf', 'http/json', 'grpc'] as const;
const DIAG_LEVELS = ['none', 'error', 'warn', 'info', 'debug', 'verbose', 'all'] as const;

export const loadTracingConfig = (env: NodeJS.ProcessEnv = process.env): TracingConfig | undefined => {
  const endpoint = (env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim() || env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim()) ?? '';
  if (endpoint === '' || env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return undefined;
  const bad = (what: string) => new DomainError('usage', 'bad-config', `configuration: ${what}`);
  const exporters = (env.OTEL_TRACES_EXPORTER ?? '').split(',').map((x) => x.trim()).filter((x) => x.length > 0);
  if (exporters.includes('none')) return undefined;
  if (exporters.some((x) => x !== 'otlp')) throw bad(`OTEL_TRACES_EXPORTER '${exporters.join(',').slice(0, 60)}': Estate exports traces by OTLP only (otlp, or none to turn tracing off)`);
  let url: URL | undefined;
  try {
    url = new URL(endpoint);
  } catch {
    url = undefined;
  }
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:')) throw bad(`the OTLP endpoint '${endpoint.slice(0, 80)}' is not an http:// or https:// URL`);
  const protocol = (env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL?.trim() || env.OTEL_EXPORTER_OTLP_PROTOCOL?.trim()) || 'http/protobuf';
  if (!(OTLP_PROTOCOLS as readonly string[]).includes(protocol)) throw bad(`OTLP protocol '${protocol.slice(0, 40)}' is not one of ${OTLP_PROTOCOLS.join(', ')}`);
  const diagLevel = env.OTEL_LOG_LEVEL?.trim().toLowerCase() || 'warn';
  if (!(DIAG_LEVELS as readonly string[]).includes(diagLevel)) throw bad(`OTEL_LOG_LEVEL '${diagLevel.slice(0, 40)}' is not one of ${DIAG_LEVELS.join(', ')}`);
  return { endpoint, protocol: protocol as TracingConfig['protocol'], diagLevel: diagLevel as TracingConfig['diagLevel'] };
};

export interface ConsoleSignInConfig {
  /** The console's client id at the issuer: a public client (no secret), redirect URI `<console origin>/console/callback`. */
  clientId: string;
  /** The scopes the console asks for, space-separated. */
  scope: string;
}

/** What the console asks for by default: reading it, and deprecate/retire/approve/reject. */
export const DEFAULT_CONSOLE_SCOPE = 'estate:read estate:lifecycle';

const consoleSignInSchema = z.object({
  clientId: z.string().regex(/^[\x21-\x7e]{1,200}$/, '--console-client-id must be 1 to 200 printable ASCII characters without spaces'),
  scope: z
    .string()
    .regex(/^[\x21\x23-\x5b\x5d-\x7e]+( [\x21\x23-\x5b\x5d-\x7e]+){0,19}$/, '--console-scope must be 1 to 20 scopes (RFC 6749 scope characters) separated by single spaces')
    .max(1000, '--console-scope must be at most 1000 characters'),
});

const loadConsoleSignIn = (flags: ServeFlags, env: NodeJS.ProcessEnv, auth: AuthConfig | undefined): ConsoleSignInConfig | undefined => {
  const clientId = flags.consoleClientId ?? env.ESTATE_CONSOLE_CLIENT_ID;
  const scope = (flags.consoleScope ?? env.ESTATE_CONSOLE_SCOPE ?? DEFAULT_CONSOLE_SCOPE).trim();
  if (clientId === undefined || clientId === '') return undefined;
  if (!auth) throw new DomainError('usage', 'console-client-without-auth', 'serve: --console-client-id signs the console in at the issuer of --auth-issuer: configure authorization (--auth-issuer, --auth-jwks-url, --auth-audience) too');
  const parsed = consoleSignInSchema.safeParse({ clientId, scope });
  if (!parsed.success) throw new DomainError('usage', 'bad-config', `serve: ${firstIssue(parsed.error)}`);
  return parsed.data;
};

/**
 * The shortest `--upstream-sync-interval` (other than 0, never): each sync lists every page of every served upstream
 * and compares each tool. `1ms` made 427 syncs in 5 s against one upstream (probed); changes between syncs are heard
 * at once anyway, from the upstream's list_changed.
 */
export const MIN_SYNC_INTERVAL_MS = 1000;
/** The longest: past 2^31 - 1 ms (24.8 days) Node's timers fire after 1 ms instead, every millisecond. */
export const MAX_SYNC_INTERVAL_MS = 2_147_483_647;

/** `90`, `90s`, `10m`, `1h`, `1500ms` → milliseconds; `0` = never; otherwise at least 1 s and at most 24 days. */
export const parseInterval = (s: string): number => {
  const m = /^(\d+)(ms|s|m|h)?$/.exec(s.trim());
  if (!m) throw new DomainError('usage', 'serve-interval', `serve: --upstream-sync-interval '${s.slice(0, 40)}' is not a duration such as 30s, 10m or 1h`);
  const n = Number(m[1]);
  const ms = n * ({ ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[(m[2] ?? 's') as 'ms' | 's' | 'm' | 'h']);
  if (ms !== 0 && ms < MIN_SYNC_INTERVAL_MS) {
    throw new DomainError('usage', 'serve-interval', `serve: --upstream-sync-interval '${s.trim().slice(0, 40)}' is shorter than the minimum, 1s (0 turns the timed sync off; list_changed still syncs)`);
  }
  if (ms > MAX_SYNC_INTERVAL_MS) throw new DomainError('usage', 'serve-interval', `serve: --upstream-sync-interval '${s.trim().slice(0, 40)}' is longer than the maximum, 24 days (596h)`);
  return ms;
};

const nameList = (s: string | undefined, fallback: readonly string[]): string[] =>
  s === undefined ? [...fallback] : s.split(',').map((x) => x.trim().toLowerCase()).filter((x) => x.length > 0);

/** Without authorization, HTTP serves everyone as the flags' principal: it may bind loopback only. */
const LOOPBACK_HOSTS = new Set(['127.0.0.1', 'localhost', '::1']);

export const loadServeConfig = (flags: ServeFlags, env: NodeJS.ProcessEnv = process.env): ServeConfig => {
  if (Boolean(flags.stdio) === Boolean(flags.http)) throw new DomainError('usage', 'serve-transport', 'serve: choose exactly one of --stdio or --http');
  const port = z.coerce.number().int().min(0).max(65535).safeParse(flags.port);
  if (!port.success) throw new DomainError('usage', 'serve-port', `serve: --port ${flags.port} is not a port number`);
  // Authorization is loaded (and a half configuration refused) for --stdio too; it only applies to --http.
  const loaded = loadAuthConfig(flags, env);
  const auth = flags.http ? loaded : undefined;
  if (auth) {
    // Each request's principal comes from its token: principal flags would be a second, contradicting source.
    const given = (['tenant', 'scopes', 'clearance', 'subject'] as const).filter((k) => flags[k] !== undefined);
    if (given.length > 0) {
      throw new DomainError('usage', 'auth-principal-flags', `serve: with authorization configured each request's principal comes from its token; remove ${given.map((k) => `--${k}`).join(', ')}`);
    }
  }
  const tracing = loadTracingConfig(env);
  const consoleSignIn = flags.http && flags.console !== false ? loadConsoleSignIn(flags, env, auth) : undefined;
  if (flags.http && !auth && !LOOPBACK_HOSTS.has(flags.host)) {
    throw new DomainError('usage', 'serve-host', 'serve: without authorization (--auth-issuer, --auth-jwks-url, --auth-audience) --http binds loopback only (127.0.0.1, localhost or ::1)');
  }
  return {
    transport: flags.http ? 'http' : 'stdio',
    port: port.data,
    host: flags.host,
    allowedHosts: nameList(flags.allowedHosts, LOOPBACK_NAMES),
    allowedOrigins: nameList(flags.allowedOrigins, LOOPBACK_NAMES),
    ...(flags.handlers ? { handlersModule: flags.handlers } : {}),
    demo: Boolean(flags.demo),
    ...(flags.upstreams !== undefined ? { upstreams: flags.upstreams } : {}),
    upstreamSyncIntervalMs: parseInterval(flags.upstreamSyncInterval ?? '10m'),
    console: flags.console !== false,
    ...(consoleSignIn ? { consoleSignIn } : {}),
    metricsPublic: Boolean(flags.metricsPublic),
    ...(auth ? { auth } : {}),
    secretsEnv: env,
    ...(tracing ? { tracing } : {}),
  };
};


/**
 * The CLI's own settings from the environment: the bearer token a `--server` verb sends (ESTATE_TOKEN; never a flag, so
 * it stays out of shell history and `ps`), and whether an unexpected error prints its stack (ESTATE_DEBUG).
 */
export interface CliSettings {
  token: string | undefined;
  debug: boolean;
}

export const loadCliSettings = (env: NodeJS.ProcessEnv = process.env): CliSettings => ({
  token: env.ESTATE_TOKEN,
  debug: Boolean(env.ESTATE_DEBUG),
});

/**
 * The environment an upstream's `${VAR}` references are resolved from, and a stdio upstream is started with
 * (src/upstream/connection.ts; SPEC §7): this process's, read here so that no other module touches process.env.
 */
export const upstreamEnvironment = (env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv => env;
