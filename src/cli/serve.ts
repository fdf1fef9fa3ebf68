/** `estate serve --stdio | --http`: compose the MCP server (src/mcp) from an opened estate and run it until stopped. */
import { randomUUID } from 'node:crypto';
import { createCallRecorder } from '../app/call-recorder.ts';
import type { AuthFlags } from '../auth/config.ts';
import { httpEdgeFor } from '../auth/serve-options.ts';
import { DomainError } from '../domain/errors.ts';
import { demoHandlers, seedDemoEstate } from '../handlers/demo.ts';
import { loadHandlerModule, mergeHandlerMaps } from '../handlers/load-module.ts';
import type { HandlerMap } from '../handlers/types.ts';
import { LOOPBACK_NAMES } from '../mcp/http-guards.ts';
import { startHttpServer } from '../mcp/http-server.ts';
import { catalogueCaughtUp, opsRoutes } from '../ops/http-routes.ts';
import { createLagProbe } from '../ops/lag.ts';
import { createMetrics } from '../ops/metrics.ts';
import { createStoreHealth } from '../ops/store-health.ts';
import { createLogger } from '../mcp/logger.ts';
import { isOfferedBy, ServerCore } from '../mcp/server-core.ts';
import { resolveStateKey } from '../mcp/input-required.ts';
import { serveStdio } from '../mcp/stdio-transport.ts';
import { takeStdout } from '../mcp/stdout-guard.ts';
import type { Estate } from '../main.ts';
import { principalFromFlags, type PrincipalFlags } from './catalogue-commands.ts';
import type { GlobalOptions } from './run.ts';
import { startupBanner, type BannerFacts } from './banner.ts';
import { parseUpstreamSelection, UpstreamPool } from '../upstream/pool.ts';
import { UpstreamRegistry } from '../upstream/registry.ts';
import { LIFECYCLE_SCOPE } from '../auth/api-scopes.ts';
import { consoleSignInUnavailable, createConsole } from '../console/console.ts';

export interface ServeFlags extends PrincipalFlags, AuthFlags {
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
  metricsPublic?: boolean;
}

/** `90`, `90s`, `10m`, `1h`, `500ms` → milliseconds; `0` = never. */
export const parseInterval = (s: string): number => {
  const m = /^(\d+)(ms|s|m|h)?$/.exec(s.trim());
  if (!m) throw new DomainError('usage', 'serve-interval', `serve: --upstream-sync-interval '${s.slice(0, 40)}' is not a duration such as 30s, 10m or 1h`);
  const n = Number(m[1]);
  return n * ({ ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[(m[2] ?? 's') as 'ms' | 's' | 'm' | 'h']);
};

const list = (s: string | undefined, fallback: readonly string[]): string[] =>
  s === undefined ? [...fallback] : s.split(',').map((x) => x.trim().toLowerCase()).filter((x) => x.length > 0);

const untilSignal = (): Promise<string> =>
  new Promise((resolve) => {
    const on = (sig: string) => () => resolve(sig);
    process.once('SIGTERM', on('SIGTERM'));
    process.once('SIGINT', on('SIGINT'));
  });

export const serve = async (estate: Estate, _opts: GlobalOptions, flags: ServeFlags): Promise<number | void> => {
  if (Boolean(flags.stdio) === Boolean(flags.http)) throw new DomainError('usage', 'serve-transport', 'serve: choose exactly one of --stdio or --http');
  const port = Number(flags.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new DomainError('usage', 'serve-port', `serve: --port ${flags.port} is not a port number`);
  // On stdio, stdout is the protocol: take it before anything (a handler module's top level included) can print.
  const writeFrame = flags.stdio ? takeStdout() : null;
  const log = createLogger(estate.config.logLevel);
  const edge = httpEdgeFor(estate, flags, log);

  const maps: HandlerMap[] = [];
  if (flags.demo) maps.push(demoHandlers);
  if (flags.handlers) maps.push(await loadHandlerModule(flags.handlers));
  const moduleHandlers = mergeHandlerMaps(...maps);
  const selection = parseUpstreamSelection(flags.upstreams);
  const syncIntervalMs = parseInterval(flags.upstreamSyncInterval ?? '10m');
  // Upstream tools (SPEC §7) are served by executors resolved from their handler names `upstream:<ns>/<t>`.
  const pool =
    selection === 'none'
      ? undefined
      : new UpstreamPool({
          registry: new UpstreamRegistry({ store: estate.store, commands: estate.commands, compiler: estate.compiler }),
          selection,
          env: process.env,
          log,
          actor: estate.config.actor,
          syncIntervalMs,
        });
  const handlers = pool ? pool.handlers(moduleHandlers) : moduleHandlers;
  if (flags.demo) {
    const seeded = await seedDemoEstate(estate);
    log.info(seeded, 'demo estate published');
  }

  const principal = principalFromFlags(flags);
  const reader = estate.reader({ isOffered: isOfferedBy(handlers) });
  // --bus local: catch up and tail the store; --bus kafka://...: relay candidate + topic consumer (src/main.ts).
  const following = await estate.followChanges(reader, log);
  const upstreams = (await pool?.start()) ?? 0;
  if (Object.keys(moduleHandlers).length === 0 && upstreams === 0) log.warn('no handlers bound (--handlers <module> or --demo): no tool will be offered');
  // A store that cannot write is found now, not by the first call after its handler ran (src/ops/store-health.ts).
  const storeHealth = createStoreHealth(estate.config.store);
  const unwritable = await storeHealth.check();
  if (unwritable) log.error({ reason: unwritable }, 'the store cannot write: every tools/call is refused (-32050) until it can; /readyz answers 503');
  storeHealth.start();
  let sessionCount = (): number => 0;
  const metrics = createMetrics({
    catalogue: () => ({ size: reader.catalogue.size, position: reader.position }),
    sessions: () => sessionCount(),
    lag: createLagProbe({ store: estate.store, readerPosition: () => reader.position, ...(estate.config.bus === 'local' ? {} : { topic: estate.config.topic }) }),
  });
  const core = new ServerCore({
    reader,
    handlers,
    compiler: estate.compiler,
    recorder: createCallRecorder(estate.store),
    log,
    pageSize: estate.config.pageSize,
    listTtlMs: estate.config.listTtlMs,
    stateKey: resolveStateKey(estate.config.stateKey),
    storeRefusal: () => storeHealth.refusal(),
    metrics,
  });
  // After the notifier's own listener, so this line follows any notification the update caused.
  reader.onUpdate((u) => log.debug({ position: u.position, tools: u.tools, viewChanges: u.viewChanges.length }, 'catalogue updated'));
  const banner = (f: Pick<BannerFacts, 'transport' | 'url'>, perRequestPrincipal: boolean): void => {
    process.stderr.write(
      startupBanner({
        ...f,
        store: estate.config.store,
        visible: reader.discovery.view(principal).entries.length,
        total: reader.catalogue.size,
        ...(perRequestPrincipal ? {} : { principal }),
        demo: Boolean(flags.demo),
        handlers: Object.keys(moduleHandlers).length,
      }),
    );
  };
  const batchLimits = { messages: estate.config.maxBatchMessages, bytes: estate.config.maxBatchBytes };
  try {
    if (writeFrame) {
      const connectionId = randomUUID();
      const conn = serveStdio({ core, principal, connectionId, input: process.stdin, write: writeFrame, batchLimits });
      banner({ transport: 'stdio' }, false);
      log.info({ transport: 'stdio', connectionId, principal, store: estate.store.kind, tools: reader.catalogue.size }, 'estate serve ready');
      await Promise.race([conn.closed, untilSignal()]);
      conn.close();
      await conn.closed;
    } else {
      if (!edge && flags.host !== '127.0.0.1' && flags.host !== 'localhost' && flags.host !== '::1') {
        throw new DomainError('usage', 'serve-host', 'serve: without authorization (--auth-issuer, --auth-jwks-url, --auth-audience) --http binds loopback only (127.0.0.1, localhost or ::1)');
      }
      // The console: the local operator on loopback; with authorization, sign-in is not available yet (src/console).
      const consoleRoutes = flags.console === false
        ? undefined
        : edge
          ? consoleSignInUnavailable()
          : createConsole({ reader, commands: estate.commands, store: estate.store, actor: { by: estate.config.actor, scopes: [LIFECYCLE_SCOPE] } });
      const http = await startHttpServer({
        core,
        principal,
        host: flags.host,
        port,
        allowedHosts: list(flags.allowedHosts, LOOPBACK_NAMES),
        allowedOrigins: list(flags.allowedOrigins, LOOPBACK_NAMES),
        sessionIdleMs: estate.config.sessionIdleMs,
        sessionCaps: { perSubject: estate.config.maxSessionsPerSubject, total: estate.config.maxSessions },
        batchLimits,
        ...(edge ? { edge } : {}),
        ...(consoleRoutes ? { console: consoleRoutes } : {}),
        ops: opsRoutes({
          health: storeHealth,
          readModels: catalogueCaughtUp(estate.store, reader),
          metrics,
          // Without authorization HTTP binds loopback only anyway; with it, metrics stay loopback unless asked.
          metricsLoopbackOnly: Boolean(edge) && !flags.metricsPublic,
        }),
      }).catch((e: unknown) => {
        const code = (e as NodeJS.ErrnoException).code;
        if (code === 'EADDRINUSE') {
          throw new DomainError('usage', 'port-in-use', `serve: port ${port} on ${flags.host} is already in use (another estate serve?): choose another with --port <n>, or --port 0 for any free port`);
        }
        if (code === 'EACCES') throw new DomainError('usage', 'port-denied', `serve: not allowed to listen on port ${port}: choose a port above 1023 with --port <n>`);
        throw e;
      });
      sessionCount = () => http.sessions.size;
      if (!edge) log.warn({ principal }, 'NO AUTHORIZATION: every HTTP request is served as the principal given by the flags; bound to loopback only');
      banner({ transport: 'http', url: http.url }, Boolean(edge));
      if (consoleRoutes) log.info({ console: http.url.replace(/\/mcp$/, '/console/') }, 'web console served');
      log.info({ transport: 'http', url: http.url, principal, store: estate.store.kind, tools: reader.catalogue.size }, 'estate serve ready');
      const sig = await untilSignal();
      log.info({ signal: sig }, 'stopping');
      consoleRoutes?.close();
      await http.close();
    }
  } finally {
    await core.close();
    await pool?.close();
    await following.close();
    await storeHealth.close();
  }
};
