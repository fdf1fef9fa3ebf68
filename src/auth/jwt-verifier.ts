/**
 * JWT access tokens checked with jose against the issuer's JWKS: signature, issuer, exp/nbf with a small leeway, and
 * an audience naming this server (RFC 8707), so a token minted for another resource is refused. Only asymmetric
 * algorithms are accepted (`alg: none` and HMAC never). The key set is cached; a token whose `kid` is not in the
 * cache makes one refetch (at most one per cooldown, so a stream of made-up kids cannot hammer the issuer), and is
 * refused if the key is still unknown.
 */
import { createRemoteJWKSet, errors, jwtVerify, type JWTPayload, type JWTVerifyGetKey } from 'jose';
import { DEFAULT_MAX_TOKEN_LIFETIME_SEC } from './config.ts';

export const ACCEPTED_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA', 'Ed25519'];

/** Short, so a key the issuer has just rotated in is picked up within seconds; long enough to spare the issuer. */
export const DEFAULT_JWKS_COOLDOWN_MS = 5_000;

export interface JwtVerifierOptions {
  issuer: string;
  jwksUrl: string;
  audience: string;
  clockToleranceSec: number;
  /** The longest token lifetime accepted, in seconds (exp - iat, and exp - now); default a day. */
  maxTokenLifetimeSec?: number;
  /** Minimum time between two refetches of the key set. */
  jwksCooldownMs?: number;
  /** How long a fetched key set is trusted before it is refetched anyway. */
  jwksMaxAgeMs?: number;
  jwksTimeoutMs?: number;
}

/**
 * `invalid`: the token is refused (401 invalid_token). `unavailable`: the key set could not be fetched, so nothing
 * can be judged (503): the caller's token may be fine.
 */
export type VerifyOutcome = { ok: true; claims: JWTPayload } | { ok: false; kind: 'invalid' | 'unavailable'; reason: string };

export interface JwtVerifier {
  verify(token: string): Promise<VerifyOutcome>;
}

const ACCESS_TOKEN_TYPES = new Set(['at+jwt', 'application/at+jwt']);

/**
 * Why a verified JWT is still not an access token this server takes, or undefined. RFC 9068: an access token's `typ` is
 * `at+jwt`; an ID token (typ `JWT`, or anything else) replayed as a bearer token is refused — absent `typ` is taken,
 * as many issuers omit it. And a token living longer than the configured maximum is refused, whether it says so
 * (exp - iat) or not (exp - now): a leaked long-lived token is a standing credential.
 */
const notAnAccessToken = (typ: string | undefined, payload: JWTPayload, maxLifetimeSec: number, toleranceSec: number): string | undefined => {
  if (typ !== undefined && !ACCESS_TOKEN_TYPES.has(typ.toLowerCase())) {
    return `the token is not an access token (typ '${typ.slice(0, 40)}'; expected 'at+jwt', RFC 9068)`;
  }
  const exp = payload.exp as number;
  if (typeof payload.iat === 'number' && exp - payload.iat > maxLifetimeSec) {
    return `the token's lifetime (exp - iat = ${exp - payload.iat} s) exceeds the ${maxLifetimeSec} s this server accepts`;
  }
  const now = Math.floor(Date.now() / 1000);
  if (exp - now > maxLifetimeSec + toleranceSec) return `the token expires more than ${maxLifetimeSec} s from now, longer than this server accepts`;
  return undefined;
};

/** Marks a failure to obtain keys, as opposed to a token that does not match them. */
class KeySetUnavailable extends Error {}

const describe = (e: unknown): string => {
  if (e instanceof errors.JWTExpired) return 'the token is expired';
  if (e instanceof errors.JWTClaimValidationFailed) {
    if (e.claim === 'nbf') return 'the token is not valid yet';
    if (e.claim === 'iss') return 'the token was issued by another issuer';
    if (e.claim === 'aud') return 'the token was issued for another resource';
    return `the token's '${e.claim}' claim is invalid`;
  }
  if (e instanceof errors.JOSEAlgNotAllowed) return 'the token\'s algorithm is not accepted';
  if (e instanceof errors.JWKSNoMatchingKey) return 'the token was signed with an unknown key';
  if (e instanceof errors.JWSSignatureVerificationFailed) return 'the token\'s signature does not verify';
  if (e instanceof errors.JWTInvalid || e instanceof errors.JWSInvalid) return 'the token is malformed';
  return 'the token is invalid';
};

export const createJwtVerifier = (o: JwtVerifierOptions): JwtVerifier => {
  const remote = createRemoteJWKSet(new URL(o.jwksUrl), {
    cooldownDuration: o.jwksCooldownMs ?? DEFAULT_JWKS_COOLDOWN_MS,
    cacheMaxAge: o.jwksMaxAgeMs ?? 600_000,
    timeoutDuration: o.jwksTimeoutMs ?? 5_000,
  });
  const keys: JWTVerifyGetKey = async (header, token) => {
    try {
      return await remote(header, token);
    } catch (e) {
      // A key that is not there (or not usable) is the token's fault; a fetch that failed is ours.
      if (e instanceof errors.JWKSNoMatchingKey || e instanceof errors.JWKSMultipleMatchingKeys || e instanceof errors.JOSENotSupported) throw e;
      throw new KeySetUnavailable(e instanceof Error ? e.message : String(e));
    }
  };
  return {
    async verify(token) {
      try {
        const { payload, protectedHeader } = await jwtVerify(token, keys, {
          issuer: o.issuer,
          audience: o.audience,
          clockTolerance: o.clockToleranceSec,
          algorithms: ACCEPTED_ALGORITHMS,
          requiredClaims: ['exp'],
        });
        const shape = notAnAccessToken(protectedHeader.typ, payload, o.maxTokenLifetimeSec ?? DEFAULT_MAX_TOKEN_LIFETIME_SEC, o.clockToleranceSec);
        if (shape) return { ok: false, kind: 'invalid', reason: shape };
        return { ok: true, claims: payload };
      } catch (e) {
        if (e instanceof KeySetUnavailable) return { ok: false, kind: 'unavailable', reason: `the issuer's key set could not be fetched: ${e.message}` };
        return { ok: false, kind: 'invalid', reason: describe(e) };
      }
    },
  };
};
