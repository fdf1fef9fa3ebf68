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
  code: 'unauthorized' | 'invalid_token' | 'invalid_request' | 'temporarily_unavailable';
  message: string;
}

export type AuthOutcome = { ok: true; caller: Caller } | { ok: false; refusal: AuthRefusal };

export interface Authenticator {
  readonly resourceMetadataUrl: string;
  authenticate(req: IncomingMessage): Promise<AuthOutcome>;
}

/**
 * How many Authorization headers the request carried. Node keeps only the first of several in `req.headers`, so a
 * second one (a proxy's, a smuggled one) would otherwise go unseen: the raw headers tell.
 */
export const authorizationHeaderCount = (req: IncomingMessage): number => {
  const raw: readonly string[] = req.rawHeaders ?? [];
  let n = 0;
  for (let i = 0; i < raw.length; i += 2) if (raw[i]?.toLowerCase() === 'authorization') n++;
  return n;
};

/** `Bearer <token>`; anything else (another scheme, a token in the query) is no token. Several headers: see authenticate. */
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
      // RFC 6750 §2: one method, one token. Which of two headers a proxy or a client meant is not for us to guess.
      if (authorizationHeaderCount(req) > 1) {
        const description = 'the request has more than one Authorization header';
        return {
          ok: false,
          refusal: {
            status: 401,
            headers: { 'www-authenticate': wwwAuthenticate(resourceMetadataUrl, { kind: 'invalid-request', description }) },
            code: 'invalid_request',
            message: `Unauthorized: ${description}`,
          },
        };
      }
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
