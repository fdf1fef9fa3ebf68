/**
 * Who is calling: the Bearer token of a request, verified, mapped to a Principal; or the refusal to send. A refusal
 * says only what is wrong with the token, never anything about the catalogue.
 */
import type { IncomingMessage } from 'node:http';
import type { Principal } from '#domain/types';
import { principalFromClaims } from './claims.ts';
import type { AuthConfig } from './config.ts';
import type { JwtVerifier } from './jwt-verifier.ts';
import { metadataUrl, wwwAuthenticate } from './resource-metadata.ts';

export interface Caller {
  principal: Principal & { subject: string };
  /** The token's `exp`, in seconds since the epoch (a long-lived stream ends then: src/console/live.ts). */
  expiresAt: number;
}

export interface AuthRefusal {
  status: 401 | 503;
  /** Headers to send (WWW-Authenticate on a 401, Retry-After on a 503). */
  headers: Record<string, string>;
  code: 'unauthorized' | 'invalid_token' | 'temporarily_unavailable';
  message: string;
}

export type AuthOutcome = { ok: true; caller: Caller } | { ok: false; refusal: AuthRefusal };

export interface Authenticator {
  readonly resourceMetadataUrl: string;
  authenticate(req: IncomingMessage): Promise<AuthOutcome>;
}

/** `Bearer <token>`; anything else (another scheme, several headers, a token in the query) is no token. */
export const bearerToken = (req: IncomingMessage): string | undefined => {
  const h = req.headers.authorization;
  if (typeof h !== 'string') return undefined;
  const m = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i.exec(h);
  return m?.[1];
};

export const createAuthenticator = (config: AuthConfig, verifier: JwtVerifier): Authenticator => {
  const resourceMetadataUrl = metadataUrl(config.audience);
  const refuse = (description: string | undefined): AuthOutcome => ({
    ok: false,
    refusal: {
      status: 401,
      headers: { 'www-authenticate': wwwAuthenticate(resourceMetadataUrl, description === undefined ? { kind: 'missing' } : { kind: 'invalid', description }) },
      code: description === undefined ? 'unauthorized' : 'invalid_token',
      message: description === undefined ? 'Unauthorized: a Bearer access token is required' : `Unauthorized: ${description}`,
    },
  });
  return {
    resourceMetadataUrl,
    async authenticate(req) {
      const hasAuthorization = req.headers.authorization !== undefined;
      const token = bearerToken(req);
      if (token === undefined) return refuse(hasAuthorization ? 'the Authorization header is not a Bearer token' : undefined);
      const verified = await verifier.verify(token);
      if (!verified.ok) {
        if (verified.kind === 'unavailable') {
          return { ok: false, refusal: { status: 503, headers: { 'retry-after': '5' }, code: 'temporarily_unavailable', message: 'Service Unavailable: the token cannot be checked right now' } };
        }
        return refuse(verified.reason);
      }
      const mapped = principalFromClaims(verified.claims as Record<string, unknown>, config.claims);
      if (!mapped.ok) return refuse(mapped.reason);
      return { ok: true, caller: { principal: mapped.principal, expiresAt: verified.claims.exp as number } };
    },
  };
};
