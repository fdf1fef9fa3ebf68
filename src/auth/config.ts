/**
 * Authorization at the HTTP edge is configured as a whole or not at all: an issuer, where its keys are, and the
 * resource URL tokens must be minted for. Half a configuration would silently serve everyone, so it is refused.
 */
import { z } from 'zod';
import { DomainError } from '#domain/errors';
import { firstIssue } from '#domain/zod-issues';

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
  /** The longest lifetime (exp - iat, and exp - now) of a token accepted, in seconds (default DEFAULT_MAX_TOKEN_LIFETIME_SEC). */
  maxTokenLifetimeSec?: number;
  /** `scopes_supported` in the Protected Resource Metadata (default: none listed, `[]`). */
  scopesSupported?: string[];
}

export interface AuthFlags {
  authIssuer?: string;
  authJwksUrl?: string;
  authAudience?: string;
}

export const DEFAULT_CLAIMS: ClaimMapping = { subject: 'sub', tenant: 'tenant', scopes: ['scope', 'scp'], clearance: 'clearance' };
export const DEFAULT_CLOCK_TOLERANCE_SEC = 30;
/** A day: far above any access token an issuer should mint (minutes to an hour), far below a stolen-forever token. */
export const DEFAULT_MAX_TOKEN_LIFETIME_SEC = 24 * 60 * 60;

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
  maxTokenLifetimeSec: z.coerce
    .number({ error: 'ESTATE_AUTH_MAX_TOKEN_LIFETIME_S must be a number of seconds' })
    .int('ESTATE_AUTH_MAX_TOKEN_LIFETIME_S must be a whole number of seconds')
    .min(60, 'ESTATE_AUTH_MAX_TOKEN_LIFETIME_S must be at least 60')
    .max(30 * 24 * 60 * 60, 'ESTATE_AUTH_MAX_TOKEN_LIFETIME_S must be at most 2592000 (30 days)'),
  scopesSupported: z.array(z.string().regex(/^[\x21\x23-\x5b\x5d-\x7e]+$/, 'ESTATE_AUTH_SCOPES_SUPPORTED: each scope must be RFC 6749 scope characters')),
});

/**
 * Flag, else environment. Returns undefined when nothing is configured (HTTP then serves the flags' principal on
 * loopback only); throws a usage error when only part is.
 */
export const loadAuthConfig = (flags: AuthFlags, env: NodeJS.ProcessEnv): AuthConfig | undefined => {
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
    maxTokenLifetimeSec: env.ESTATE_AUTH_MAX_TOKEN_LIFETIME_S ?? DEFAULT_MAX_TOKEN_LIFETIME_SEC,
    scopesSupported: (env.ESTATE_AUTH_SCOPES_SUPPORTED ?? '').split(/[\s,]+/).filter((x) => x.length > 0),
  };
  const parsed = authSchema.safeParse(raw);
  if (!parsed.success) {
    throw new DomainError('usage', 'bad-config', `authorization: ${firstIssue(parsed.error)}`);
  }
  return parsed.data;
};
