/**
 * The adapters behind authorization on `estate serve --http`: the JWT verifier (jose, the issuer's key set held by it),
 * the authenticator over it (shared with the console), the publishing API and the edge that mounts both (src/http/edge.ts).
 */
import type { Log } from '#app/log';
import { createAuthenticator, type Authenticator } from '#auth/authenticator';
import type { AuthConfig } from '#auth/config';
import { createJwtVerifier } from '#auth/jwt-verifier';
import { createHttpEdge, type HttpEdge } from '#http/edge';
import { createPublishApi } from '#http/publish-api';
import type { Estate } from './estate.ts';

export const composeHttpEdge = (estate: Estate, auth: AuthConfig, log: Log): { edge: HttpEdge; authenticator: Authenticator } => {
  log.info({ issuer: auth.issuer, audience: auth.audience, jwksUrl: auth.jwksUrl }, 'authorization: JWT access tokens required on /mcp and /v1');
  const authenticator = createAuthenticator(auth, createJwtVerifier({ ...auth, log }));
  const api = createPublishApi({ commands: estate.commands, compiler: estate.compiler, authenticator, log, checker: estate.definitions });
  return { edge: createHttpEdge({ config: auth, authenticator, api, log }), authenticator };
};
