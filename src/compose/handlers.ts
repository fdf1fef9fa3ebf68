/**
 * What executes tools in a serving process: the demo pack, a handler module, and the upstream MCP servers it fronts
 * (SPEC §6, §7). Upstream tools are served by executors resolved from their handler names `upstream:<ns>/<t>`.
 */
import type { Log } from '#app/log';
import type { ServeConfig } from '#config';
import { demoHandlers } from '#handlers/demo';
import { loadHandlerModule, mergeHandlerMaps } from '#handlers/load-module';
import type { HandlerMap } from '#handlers/types';
import { parseUpstreamSelection, UpstreamPool } from '#upstream/pool';
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
  const pool =
    selection === 'none'
      ? undefined
      : new UpstreamPool({
          registry: new UpstreamRegistry({ store: estate.store, commands: estate.commands, definitions: estate.definitions }),
          selection,
          env: config.secretsEnv,
          log,
          actor: estate.config.actor,
          syncIntervalMs: config.upstreamSyncIntervalMs,
          ...(estate.config.maxUpstreamBufferBytes ? { answerBufferBytes: estate.config.maxUpstreamBufferBytes } : {}),
        });
  return { handlers: pool ? pool.handlers(moduleHandlers) : moduleHandlers, moduleHandlers, ...(pool ? { pool } : {}) };
};
