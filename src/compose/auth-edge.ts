/** The `estate serve` side of authorization: the edge its flags (./flags.ts) configure, or none. */
import type { Logger } from 'pino';
import { DomainError } from '../domain/errors.ts';
import type { Estate } from '../main.ts';
import { loadAuthConfig, type AuthFlags } from './config.ts';
import { createHttpEdge, type HttpEdge } from './http-edge.ts';

interface ServeAuthFlags extends AuthFlags {
  http?: boolean;
  tenant?: string;
  scopes?: string;
  clearance?: string;
  subject?: string;
}

/**
 * The edge for `serve --http` when authorization is configured, else undefined. With it, each request's principal
 * comes from its token, so principal flags would be a second, contradicting source: refused (exit 2).
 */
export const httpEdgeFor = (estate: Estate, flags: ServeAuthFlags, log: Logger, env: NodeJS.ProcessEnv = process.env): HttpEdge | undefined => {
  const config = loadAuthConfig(flags, env);
  if (!config || !flags.http) return undefined;
  const given = (['tenant', 'scopes', 'clearance', 'subject'] as const).filter((k) => flags[k] !== undefined);
  if (given.length > 0) {
    throw new DomainError('usage', 'auth-principal-flags', `serve: with authorization configured each request's principal comes from its token; remove ${given.map((k) => `--${k}`).join(', ')}`);
  }
  log.info({ issuer: config.issuer, audience: config.audience, jwksUrl: config.jwksUrl }, 'authorization: JWT access tokens required on /mcp and /v1');
  return createHttpEdge({ config, commands: estate.commands, compiler: estate.compiler, log });
};
