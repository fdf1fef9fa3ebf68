/**
 * The web console's wiring (src/console): who may look (the local operator without authorization; with it, the
 * authenticator of /mcp and /v1 plus the OAuth client the page signs in as), the upstream room behind its port, and
 * the same reader, command handler and store the rest of the server uses.
 */
import type { CatalogueReader } from '#app/catalogue-reader';
import type { Log } from '#app/log';
import type { Authenticator } from '#auth/authenticator';
import { createIssuerMetadata } from '#auth/issuer-metadata';
import type { ServeConfig } from '#config';
import { operatorAccess, tokenAccess } from '#console/access';
import { consoleSignInUnconfigured, createConsole, type ConsoleRoutes } from '#console/console';
import type { UpstreamPool } from '#upstream/pool';
import { UpstreamRegistry } from '#upstream/registry';
import { consoleUpstreams } from './console-upstreams.ts';
import type { Estate } from './estate.ts';

export interface ConsoleParts {
  estate: Estate;
  config: ServeConfig;
  reader: CatalogueReader;
  log: Log;
  /** Present with authorization. */
  authenticator?: Authenticator;
  pool?: UpstreamPool;
}

export const composeConsole = (p: ConsoleParts): ConsoleRoutes | undefined => {
  const { estate, config } = p;
  if (!config.console) return undefined;
  if (p.authenticator && config.auth && !config.consoleSignIn) {
    p.log.warn({}, 'console: authorization is on but --console-client-id is not set: /console/ answers 503 until it is');
    return consoleSignInUnconfigured();
  }
  const access =
    p.authenticator && config.auth && config.consoleSignIn
      ? tokenAccess(p.authenticator, { ...config.consoleSignIn, resource: config.auth.audience, issuer: createIssuerMetadata(config.auth.issuer) })
      : operatorAccess(estate.config.actor);
  const registry = new UpstreamRegistry({ store: estate.store, commands: estate.commands, definitions: estate.definitions });
  return createConsole({ reader: p.reader, commands: estate.commands, store: estate.store, access, upstreams: consoleUpstreams(registry, p.pool), runs: estate.runsIndex({ log: p.log }) });
};
