/**
 * JWT access tokens checked with jose against the issuer's JWKS: signature, issuer, exp/nbf with a small leeway, and
 * an audience naming this server (RFC 8707), so a token minted for another resource is refused. Only asymmetric
 * algorithms are accepted (`alg: none` and HMAC never). The key set is held by ./jwks-cache.ts: refreshed in the
 * background, kept through an issuer outage up to a bound; a token whose `kid` is not held makes one refetch (at most
 * one per cooldown, whatever the last fetch's outcome, so a stream of made-up kids cannot hammer the issuer; the
 * cooldown grows while fetches keep failing), and is refused if the key is still unknown.
 */
import { errors, jwtVerify, type JWTPayload, type JWTVerifyGetKey } from 'jose';
import type { Log } from '#app/log';
import { DEFAULT_MAX_TOKEN_LIFETIME_SEC } from './config.ts';
import { createJwksKeySet, KeySetUnavailable, type JwksKeySet } from './jwks-cache.ts';

export const ACCEPTED_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA', 'Ed25519'];

export interface JwtVerifierOptions {
  issuer: string;
  jwksUrl: string;
  audience: string;
  clockToleranceSec: number;
  /** The longest token lifetime accepted, in seconds (exp - iat, and exp - now); default a day. */
  maxTokenLifetimeSec?: number;
  /** Minimum time between two fetches of the key set (from the end of one, whatever its outcome, to the next). */
  jwksCooldownMs?: number;
  /** How long a fetched key set is used before it is refreshed (in the background) anyway. */
  jwksMaxAgeMs?: number;
  /** How long a key set is still used while no refresh succeeds (stale-if-error); default a day. */
  jwksMaxStaleMs?: number;
  jwksTimeoutMs?: number;
  /** Bounds on the key set's response: bytes (default 1 MiB) and keys (default 1,000). */
  jwksMaxBytes?: number;
  jwksMaxKeys?: number;
  /** The clock, in ms since the epoch (tests drive it). */
  now?: () => number;
  /** Where a failing key set fetch is told (at most once per minute). */
  log?: Log;
  /** The key set to use instead of one built from the options above (tests hand one in to await its fetches). */
  keySet?: JwksKeySet;
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
const notAnAccessToken = (typ: string | undefined, payload: JWTPayload, maxLifetimeSec: number, toleranceSec: number, now: number): string | undefined => {
  if (typ !== undefined && !ACCESS_TOKEN_TYPES.has(typ.toLowerCase())) {
    return `the token is not an access token (typ '${typ.slice(0, 40)}'; expected 'at+jwt', RFC 9068)`;
  }
  // Issued in the future: a broken or hostile issuer clock; its exp - iat would also slip past the lifetime check.
  if (typeof payload.iat === 'number' && payload.iat > now + toleranceSec) {
    return `the token was issued in the future ('iat' is ${Math.ceil(payload.iat - now)} s ahead of this server's clock)`;
  }
  const exp = payload.exp as number;
  if (typeof payload.iat === 'number' && exp - payload.iat > maxLifetimeSec) {
    return `the token's lifetime (exp - iat = ${exp - payload.iat} s) exceeds the ${maxLifetimeSec} s this server accepts`;
  }
  if (exp - now > maxLifetimeSec + toleranceSec) return `the token expires more than ${maxLifetimeSec} s from now, longer than this server accepts`;
  return undefined;
};

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
  const now = o.now ?? Date.now;
  const keySet = o.keySet ?? createJwksKeySet({
    url: new URL(o.jwksUrl).href,
    cooldownMs: o.jwksCooldownMs,
    maxAgeMs: o.jwksMaxAgeMs,
    maxStaleMs: o.jwksMaxStaleMs,
    timeoutMs: o.jwksTimeoutMs,
    maxBytes: o.jwksMaxBytes,
    maxKeys: o.jwksMaxKeys,
    now,
    log: o.log,
  });
  const keys: JWTVerifyGetKey = async (header, token) => {
    try {
      return await keySet.getKey(header, token);
    } catch (e) {
      // A key that is not there (or not usable) is the token's fault; a key set that cannot be had is ours.
      if (e instanceof errors.JWKSNoMatchingKey || e instanceof errors.JWKSMultipleMatchingKeys || e instanceof errors.JOSENotSupported) throw e;
      throw e instanceof KeySetUnavailable ? e : new KeySetUnavailable(e instanceof Error ? e.message : String(e));
    }
  };
  return {
    async verify(token) {
      try {
        const at = now();
        const { payload, protectedHeader } = await jwtVerify(token, keys, {
          issuer: o.issuer,
          audience: o.audience,
          clockTolerance: o.clockToleranceSec,
          algorithms: ACCEPTED_ALGORITHMS,
          requiredClaims: ['exp'],
          currentDate: new Date(at),
        });
        const shape = notAnAccessToken(protectedHeader.typ, payload, o.maxTokenLifetimeSec ?? DEFAULT_MAX_TOKEN_LIFETIME_SEC, o.clockToleranceSec, Math.floor(at / 1000));
        if (shape) return { ok: false, kind: 'invalid', reason: shape };
        return { ok: true, claims: payload };
      } catch (e) {
        if (e instanceof KeySetUnavailable) return { ok: false, kind: 'unavailable', reason: `the issuer's key set could not be fetched: ${e.message}` };
        return { ok: false, kind: 'invalid', reason: describe(e) };
      }
    },
  };
};
