/**
 * What executes tools in a serving process: the demo pack, a handler module, and the upstream MCP servers it fronts
 * (SPEC §6, §7). Upstream tools are served by executors resolved from their handler names `upstream:<ns>/<t>`.
 */
import type { Log } from '#app/log';
import type { ServeConfig } from '#config';
import { demoHandlers } from '#handlers/demo';
import { loadHandlerModule, mergeHandlerMaps } from '#handlers/load-module';
import type { HandlerMap } from '#handlers/types';
import { DomainError } from '#domain/errors';
import { parseUpstreamSelection, UpstreamPool, type UpstreamSelection } from '#upstream/pool';
import { UpstreamRegistry } from '#upstream/registry';
import type { Estate } from './estate.ts';

export interface ComposedHandlers {
  /** Every handler name this process binds. */
  handlers: HandlerMap;
  /** Those of the demo pack and the handler module alone. */
  moduleHandlers: HandlerMap;
  /** The upstream connections; absent with `--upstreams none`. */
  pool?: UpstreamPool;
}

export const composeHandlers = async (estate: Estate, config: ServeConfig, log: Log): Promise<ComposedHandlers> => {
  const maps: HandlerMap[] = [];
  if (config.demo) maps.push(demoHandlers);
  if (config.handlersModule) maps.push(await loadHandlerModule(config.handlersModule));
  const moduleHandlers = mergeHandlerMaps(...maps);
  const selection = parseUpstreamSelection(config.upstreams);
  const registry = selection === 'none' ? undefined : new UpstreamRegistry({ store: estate.store, commands: estate.commands, definitions: estate.definitions });
  if (registry && typeof selection !== 'string') await checkSelection(registry, selection, log);
  const pool =
    registry === undefined || selection === 'none'
      ? undefined
      : new UpstreamPool({
          registry,
          selection,
          env: config.secretsEnv,
          log,
          actor: estate.config.actor,
          syncIntervalMs: config.upstreamSyncIntervalMs,
          ...(estate.config.maxUpstreamBufferBytes ? { answerBufferBytes: estate.config.maxUpstreamBufferBytes } : {}),
        });
  return { handlers: pool ? pool.handlers(moduleHandlers) : moduleHandlers, moduleHandlers, ...(pool ? { pool } : {}) };
};

/**
 * `--upstreams <ns,...>` names registered upstreams. A name never registered (a typo: `--upstreams gihtub`) fronted
 * nothing, silently, the process serving on as if all were well: it is a usage error (exit 2) naming the registered
 * ones, before anything starts. A name registered and since removed is only warned about: its removal is recorded in
 * the store by whoever removed it, and a restart must not fail because of it.
 */
const checkSelection = async (registry: UpstreamRegistry, selection: Exclude<UpstreamSelection, 'all' | 'none'>, log: Log): Promise<void> => {
  const registered = await registry.namespaces();
  const active: string[] = [];
  for (const ns of registered) if ((await registry.load(ns)).state?.status === 'active') active.push(ns);
  const choices = `registered: ${active.length > 0 ? active.join(', ') : 'none'}; or all | none`;
  if (selection.length === 0) throw new DomainError('usage', 'serve-upstreams', `serve: --upstreams names no upstream (${choices})`);
  const unknown = selection.filter((ns) => !registered.includes(ns));
  if (unknown.length > 0) {
    const names = unknown.slice(0, 10).map((ns) => `'${ns.slice(0, 64)}'`).join(', ');
    throw new DomainError('usage', 'serve-upstreams', `serve: --upstreams ${names}: ${unknown.length === 1 ? 'not a registered upstream' : 'not registered upstreams'} (${choices})`);
  }
  for (const ns of selection) if (!active.includes(ns)) log.warn({ upstream: ns }, 'upstream named by --upstreams was removed: none of its tools is served');
};
