/**
 * Authorization at the HTTP edge is configured as a whole or not at all: an issuer, where its keys are, and the
 * resource URL tokens must be minted for. Half a configuration would silently serve everyone, so it is refused.
 */
import { z } from 'zod';
import { DomainError } from '../domain/errors.ts';

/** Which token claims carry the principal. The defaults are the claim names most issuers use. */
export interface ClaimMapping {
  subject: string;
  tenant: string;
  /** Tried in order; a string is space-separated (RFC 8693 `scope`), an array is taken as is (`scp`). */
  scopes: string[];
  clearance: string;
}

export interface AuthConfig {
  issuer: string;
  jwksUrl: string;
  /** This server's resource URL (RFC 8707 / RFC 9728 `resource`): the `aud` every accepted token must name. */
  audience: string;
  claims: ClaimMapping;
  /** Leeway for exp / nbf / iat, in seconds: clocks drift a little, never much. */
  clockToleranceSec: number;
}

export interface AuthFlags {
  authIssuer?: string;
  authJwksUrl?: string;
  authAudience?: string;
}

export const DEFAULT_CLAIMS: ClaimMapping = { subject: 'sub', tenant: 'tenant', scopes: ['scope', 'scp'], clearance: 'clearance' };
export const DEFAULT_CLOCK_TOLERANCE_SEC = 30;

const httpUrl = (what: string) =>
  z.string().refine((s) => {
    try {
      const u = new URL(s);
      return (u.protocol === 'https:' || u.protocol === 'http:') && u.hash === '';
    } catch {
      return false;
    }
  }, `${what} must be an absolute http(s) URL without a fragment`);

const claimName = z.string().min(1).max(200);

const authSchema = z.object({
  issuer: z.string().min(1, 'the issuer must not be empty'),
  jwksUrl: httpUrl('--auth-jwks-url'),
  audience: httpUrl('--auth-audience'),
  claims: z.object({ subject: claimName, tenant: claimName, scopes: z.array(claimName).min(1), clearance: claimName }),
  clockToleranceSec: z.coerce.number().int().min(0).max(300),
});

/**
 * Flag, else environment. Returns undefined when nothing is configured (HTTP then serves the flags' principal on
 * loopback only); throws a usage error when only part is.
 */
export const loadAuthConfig = (flags: AuthFlags, env: NodeJS.ProcessEnv = process.env): AuthConfig | undefined => {
  const issuer = flags.authIssuer ?? env.ESTATE_AUTH_ISSUER;
  const jwksUrl = flags.authJwksUrl ?? env.ESTATE_AUTH_JWKS_URL;
  const audience = flags.authAudience ?? env.ESTATE_AUTH_AUDIENCE;
  const given = { '--auth-issuer': issuer, '--auth-jwks-url': jwksUrl, '--auth-audience': audience };
  const missing = Object.entries(given).filter(([, v]) => v === undefined || v === '').map(([k]) => k);
  if (missing.length === 3) return undefined;
  if (missing.length > 0) {
    throw new DomainError('usage', 'auth-incomplete', `authorization: ${missing.join(', ')} ${missing.length > 1 ? 'are' : 'is'} missing (set all of --auth-issuer, --auth-jwks-url, --auth-audience, or none)`);
  }
  const raw = {
    issuer,
    jwksUrl,
    audience,
    claims: {
      subject: env.ESTATE_AUTH_SUBJECT_CLAIM ?? DEFAULT_CLAIMS.subject,
      tenant: env.ESTATE_AUTH_TENANT_CLAIM ?? DEFAULT_CLAIMS.tenant,
      scopes: env.ESTATE_AUTH_SCOPES_CLAIM ? env.ESTATE_AUTH_SCOPES_CLAIM.split(',').map((s) => s.trim()).filter((s) => s.length > 0) : DEFAULT_CLAIMS.scopes,
      clearance: env.ESTATE_AUTH_CLEARANCE_CLAIM ?? DEFAULT_CLAIMS.clearance,
    },
    clockToleranceSec: env.ESTATE_AUTH_CLOCK_TOLERANCE_S ?? DEFAULT_CLOCK_TOLERANCE_SEC,
  };
  const parsed = authSchema.safeParse(raw);
  if (!parsed.success) {
    const i = parsed.error.issues[0];
    throw new DomainError('usage', 'bad-config', `authorization: ${i?.path.join('.') ?? ''}: ${i?.message ?? 'invalid'}`);
  }
  return parsed.data;
};
