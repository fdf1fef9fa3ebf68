/**
 * The adapters behind authorization on `estate serve --http`: the JWT verifier (jose, the issuer's remote key set),
 * the authenticator over it, the publishing API and the edge that mounts both (src/http/edge.ts).
 */
import { createDefinitionChecker } from '../app/definition-budget.ts';
import type { Log } from '../app/log.ts';
import { createAuthenticator } from '../auth/authenticator.ts';
import type { AuthConfig } from '../auth/config.ts';
import { createJwtVerifier } from '../auth/jwt-verifier.ts';
import { createHttpEdge, type HttpEdge } from '../http/edge.ts';
import { createPublishApi } from '../http/publish-api.ts';
import type { Estate } from './estate.ts';

export const composeHttpEdge = (estate: Estate, auth: AuthConfig, log: Log): HttpEdge => {
  log.info({ issuer: auth.issuer, audience: auth.audience, jwksUrl: auth.jwksUrl }, 'authorization: JWT access tokens required on /mcp and /v1');
  const authenticator = createAuthenticator(auth, createJwtVerifier(auth));
  const checker = createDefinitionChecker({ budgetMs: estate.config.schemaBudgetMs });
  const api = createPublishApi({ commands: estate.commands, compiler: estate.compiler, authenticator, log, checker });
  return createHttpEdge({ config: auth, authenticator, api, log });
};
