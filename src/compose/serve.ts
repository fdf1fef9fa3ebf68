/**
 * The composition root of `estate serve` (on top of ./estate.ts): the logger, authorization, handlers and upstreams,
 * the read side and its change feed, store health, metrics and tracing (./tracing.ts, when an OTLP endpoint is set), the protocol core (src/mcp/server-core.ts), and one
 * transport — stdio, or the HTTP listener (./http-listener.ts) with the console and operations routes. It runs until
 * stdin closes (stdio) or a signal arrives, then closes everything it opened, in reverse.
 */
import { randomUUID } from 'node:crypto';
import { createCallRecorder } from '#app/call-recorder';
import type { RootLog } from '#app/log';
import { startupBanner, type BannerFacts } from '#cli/banner';
import type { ServeConfig } from '#config';
import { DomainError } from '#domain/errors';
import type { Principal } from '#domain/types';
import { seedDemoEstate } from '#handlers/demo';
import type { Authenticator } from '#auth/authenticator';
import { resolveConnectionLimits, type ListenerCounts } from '#http/connection-limits';
import type { HttpEdge } from '#http/edge';
import type { UpstreamPool } from '#upstream/pool';
import { resolveStateKey } from '#mcp/input-required';
import { isOfferedBy, ServerCore } from '#mcp/server-core';
import { serveStdio } from '#mcp/stdio-transport';
import { takeStdout } from '#mcp/stdout-guard';
import { loadSdkTransport } from '#mcp/sdk-transport';
import { createStreamableHttp } from '#mcp/streamable-http';
import { catalogueCaughtUp, opsRoutes } from '#ops/http-routes';
import { applyHeapPolicy } from '#ops/heap-policy';
import { heldBackLine, watchHeldBack } from '#ops/held-back-watch';
import { createLagProbe } from '#ops/lag';
import { createMetrics, type EstateMetrics } from '#ops/metrics';
import { createStoreHealth, type StoreHealth } from '#ops/store-health';
import type { Estate } from './estate.ts';
import { composeHandlers } from './handlers.ts';
import { startHttpListener } from './http-listener.ts';
import { upstreamMetricSources } from './upstream-metrics.ts';
import { createLogger } from './logger.ts';
import { startTracing, type Tracing } from './tracing.ts';

const untilSignal = (): Promise<string> =>
  new Promise((resolve) => {
    const on = (sig: string) => () => resolve(sig);
    process.once('SIGTERM', on('SIGTERM'));
    process.once('SIGINT', on('SIGINT'));
  });

/** What both transports are handed once the core is built. */
interface Served {
  estate: Estate;
  config: ServeConfig;
  principal: Principal;
  log: RootLog;
  core: ServerCore;
  storeHealth: StoreHealth;
  metrics: EstateMetrics;
  reader: ServerCore['reader'];
  banner(f: Pick<BannerFacts, 'transport' | 'url'>, perRequestPrincipal: boolean): void;
  batchLimits: { messages: number; bytes: number };
  /** The /metrics sessions gauge reads this; HTTP points it at its sessions. */
  sessionCount: { of: () => number };
  /** The HTTP listener's connection counts, once it listens (metrics). */
  connectionCounts: { of: () => ListenerCounts | undefined };
  /** The upstream connections, for the console's upstreams page. */
  pool?: UpstreamPool;
}

const runStdio = async (s: Served, writeFrame: (line: string) => void): Promise<void> => {
  const connectionId = randomUUID();
  const conn = serveStdio({ core: s.core, principal: s.principal, connectionId, input: process.stdin, write: writeFrame, batchLimits: s.batchLimits });
  s.banner({ transport: 'stdio' }, false);
  // Listening before the ready line: a process manager may signal the moment it reads it (a clean stop, not a kill).
  const signalled = untilSignal();
  s.log.info({ transport: 'stdio', connectionId, principal: s.principal, store: s.estate.store.kind, tools: s.reader.catalogue.size }, 'estate serve ready');
  s.core.startWarmup();
  applyHeapPolicy(s.estate.config.heapGrowingPercent, s.log);
  await Promise.race([conn.closed, signalled]);
  conn.close();
  await conn.closed;
};

const runHttp = async (s: Served, auth: { edge: HttpEdge; authenticator: Authenticator } | undefined): Promise<void> => {
  const { estate, config, log } = s;
  const edge = auth?.edge;
  // The console: the local operator on loopback; with authorization, people sign in at the issuer (./console.ts).
  // Loaded only when on (like the authorization edge and the upstream client below): what a server does not use, its
  // start does not pay for.
  const consoleRoutes = config.console
    ? (await import('./console.ts')).composeConsole({ estate, config, reader: s.reader, log, ...(auth ? { authenticator: auth.authenticator } : {}), ...(s.pool ? { pool: s.pool } : {}) })
    : undefined;
  const mcp = createStreamableHttp({
    core: s.core,
    principal: s.principal,
    sessionIdleMs: estate.config.sessionIdleMs,
    sessionCaps: { perSubject: estate.config.maxSessionsPerSubject, total: estate.config.maxSessions },
    batchLimits: s.batchLimits,
    maxListensPerSubject: estate.config.maxListensPerSubject,
  });
  s.sessionCount.of = () => mcp.sessions.size;
  const http = await startHttpListener({
    mcp,
    host: config.host,
    port: config.port,
    allowedHosts: config.allowedHosts,
    allowedOrigins: config.allowedOrigins,
    log,
    connections: resolveConnectionLimits({
      ...(estate.config.maxConnections ? { max: estate.config.maxConnections } : {}),
      ...(estate.config.maxConnectionsPerPeer ? { perPeer: estate.config.maxConnectionsPerPeer } : {}),
      ...(estate.config.maxBodyBufferBytes ? { bodyBytes: estate.config.maxBodyBufferBytes } : {}),
    }),
    ...(edge ? { edge } : {}),
    ...(consoleRoutes ? { console: consoleRoutes } : {}),
    ops: opsRoutes({
      health: s.storeHealth,
      readModels: catalogueCaughtUp(estate.store, s.reader),
      metrics: s.metrics,
      // Without authorization HTTP binds loopback only anyway; with it, metrics stay loopback unless asked.
      metricsLoopbackOnly: Boolean(edge) && !config.metricsPublic,
    }),
  }).catch((e: unknown) => {
    mcp.close();
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE') {
      throw new DomainError('usage', 'port-in-use', `serve: port ${config.port} on ${config.host} is already in use (another estate serve?): choose another with --port <n>, or --port 0 for any free port`);
    }
    if (code === 'EACCES') throw new DomainError('usage', 'port-denied', `serve: not allowed to listen on port ${config.port}: choose a port above 1023 with --port <n>`);
    throw e;
  });
  s.connectionCounts.of = http.connections;
  if (!edge) log.warn({ principal: s.principal }, 'NO AUTHORIZATION: every HTTP request is served as the principal given by the flags; bound to loopback only');
  s.banner({ transport: 'http', url: http.url }, Boolean(edge));
  if (consoleRoutes) log.info({ console: http.url.replace(/\/mcp$/, '/console/') }, 'web console served');
  // Listening before the ready line: a process manager may signal the moment it reads it (a clean stop, not a kill).
  const signalled = untilSignal();
  log.info({ transport: 'http', url: http.url, principal: s.principal, store: estate.store.kind, tools: s.reader.catalogue.size }, 'estate serve ready');
  s.core.startWarmup();
  // Loaded now rather than by the first 2025 session's initialize (src/mcp/sdk-transport.ts).
  void loadSdkTransport().catch((e: unknown) => log.error({ err: e }, 'the SDK transport could not be loaded: 2025 sessions will fail'));
  applyHeapPolicy(estate.config.heapGrowingPercent, log);
  const sig = await signalled;
  log.info({ signal: sig }, 'stopping');
  consoleRoutes?.close();
  await http.close();
};

export const runServe = async (estate: Estate, config: ServeConfig, principal: Principal): Promise<void> => {
  // On stdio, stdout is the protocol: take it before anything (a handler module's top level included) can print.
  const writeFrame = config.transport === 'stdio' ? takeStdout() : null;
  const log = createLogger(estate.config.logLevel);
  const edge = config.auth ? (await import('./auth-edge.ts')).composeHttpEdge(estate, config.auth, log) : undefined;
  const { handlers, moduleHandlers, pool } = await composeHandlers(estate, config, log);
  if (config.demo) {
    const seeded = await seedDemoEstate(estate);
    log.info(seeded, 'demo estate published');
  }

  // Records hold what discovery and serving decide on; schemas and the rest are read on demand and cached (a large
  // catalogue does not have to fit in memory whole).
  const reader = estate.reader({ isOffered: isOfferedBy(handlers), keepDetails: false });
  // From the store's snapshot, when it has one: the catch-up below then reads only the events after it.
  const keepSnapshots = await estate.restoreReader(reader, log);
  // --bus local: catch up and tail the store; --bus kafka://...: relay candidate + topic consumer (./estate.ts).
  const following = await estate.followChanges(reader, log);
  // Caught up: a publish here (the API, the console, an upstream's mirror) of a tool this catalogue does not know skips
  // reading its stream; a catalogue that is behind costs that publish a conflict and a re-read (src/app/command-handler.ts).
  estate.commands.useReadModel((name) => reader.catalogue.tool(name) !== undefined);
  // The upstream streams are followed from the catalogue's position, so a removal or a new registration by another
  // process (the CLI, the console of another server) reaches this process's links: no link outlives its registration.
  const upstreams = (await pool?.start({ store: estate.store, after: reader.position })) ?? 0;
  // Fronting an upstream: the definitions worker starts now, beside the upstreams' connecting (their syncs have just
  // begun), so the first sync's checks find it ready and its duration (which paces the next ones) is its own work. Not
  // otherwise: a process without upstreams need not hold an idle thread.
  if (upstreams > 0) void estate.definitions.warm();
  if (Object.keys(moduleHandlers).length === 0 && upstreams === 0) log.warn({}, 'no handlers bound (--handlers <module> or --demo): no tool will be offered');
  // A store that cannot write is found now, not by the first call after its handler ran (src/ops/store-health.ts).
  // Logged on each change of state, with the driver's text that /readyz does not give its callers.
  const storeHealth = createStoreHealth(estate.config.store, (reason) => {
    if (reason) log.error({ reason }, 'the store cannot write: every tools/call is refused (-32050) until it can; /readyz answers 503');
    else log.info({}, 'the store can write again: tools/calls are served; /readyz answers 200 when the read models have caught up');
  });
  await storeHealth.check();
  storeHealth.start();
  // PostgreSQL: a long transaction anywhere in the cluster stalls this process's reads silently; the log says who holds.
  const heldWatch = estate.store.heldBack
    ? watchHeldBack({
        read: estate.store.heldBack.bind(estate.store),
        held: (h) => log.warn({ events: h.events, seconds: Math.round(h.oldestSeconds), holder: h.holder }, heldBackLine(h)),
        released: () => log.info({}, 'no committed event waits behind an open transaction any more: the log is read on'),
      })
    : undefined;
  const sessionCount = { of: (): number => 0 };
  const connectionCounts = { of: (): ListenerCounts | undefined => undefined };
  const metrics = createMetrics({
    catalogue: () => ({ size: reader.catalogue.size, position: reader.position }),
    sessions: () => sessionCount.of(),
    connections: () => connectionCounts.of(),
    lag: createLagProbe({ store: estate.store, readerPosition: () => reader.position, ...(estate.config.bus === 'local' ? {} : { topic: estate.config.topic }) }),
    ...(estate.store.heldBack ? { heldBack: estate.store.heldBack.bind(estate.store) } : {}),
    ...(pool ? upstreamMetricSources(pool, () => reader.position) : {}),
  });
  const core = new ServerCore({
    reader,
    handlers,
    compiler: estate.compiler,
    offThread: (schema, where) => estate.definitions.source(schema, where),
    // Started once ready (runStdio, runHttp): compiling ahead must not delay readiness.
    deferWarmup: true,
    recorder: createCallRecorder(estate.store),
    log,
    pageSize: estate.config.pageSize,
    listTtlMs: estate.config.listTtlMs,
    stateKey: resolveStateKey(estate.config.stateKey),
    stateTtlMs: estate.config.stateTtlMs,
    storeRefusal: () => storeHealth.refusal(),
    maxCallsPerSubject: estate.config.maxCallsPerSubject,
    maxUntakenBytesPerSubject: estate.config.maxUntakenBytesPerSubject,
    metrics,
  });
  // After the notifier's own listener, so this line follows any notification the update caused.
  reader.onUpdate((u) => log.debug({ position: u.position, tools: u.tools, viewChanges: u.viewChanges.length }, 'catalogue updated'));
  const served: Served = {
    estate,
    config,
    principal,
    log,
    core,
    storeHealth,
    metrics,
    reader,
    sessionCount,
    connectionCounts,
    ...(pool ? { pool } : {}),
    batchLimits: { messages: estate.config.maxBatchMessages, bytes: estate.config.maxBatchBytes },
    banner: (f, perRequestPrincipal) => {
      process.stderr.write(
        startupBanner({
          ...f,
          store: estate.config.store,
          visible: reader.discovery.view(principal).entries.length,
          total: reader.catalogue.size,
          ...(perRequestPrincipal ? {} : { principal }),
          demo: config.demo,
          handlers: Object.keys(moduleHandlers).length,
        }),
      );
    },
  };
  const snapshots = keepSnapshots();
  // OpenTelemetry only when an OTLP endpoint is configured (./tracing.ts); flushed last, after everything that traces.
  let tracing: Tracing | null = null;
  try {
    tracing = await startTracing(config.tracing, log);
    if (writeFrame) await runStdio(served, writeFrame);
    else await runHttp(served, edge);
  } finally {
    heldWatch?.stop();
    await core.close();
    await pool?.close();
    await following.close();
    // A clean shutdown leaves a snapshot at the last position this process read: the next start reads no tail.
    await snapshots?.close();
    await storeHealth.close();
    await tracing?.shutdown();
  }
};
