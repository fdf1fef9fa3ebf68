/**
 * The issuer's key set, held here rather than in jose's remote set, so that an issuer's JWKS outage is not an Estate
 * outage and a stream of made-up `kid`s cannot make Estate hammer an issuer that is failing:
 *
 * - The last good key set is kept. Once it is older than `maxAgeMs` it is refreshed in the background, one fetch at a
 *   time, while the held keys keep verifying: no request waits for the issuer, none makes a fetch of its own.
 * - A failed refresh keeps the held keys (stale-if-error) until they are `maxStaleMs` old; the failure is logged at
 *   most once per minute. Past that bound nothing held is used: tokens cannot be judged (503) until a fetch succeeds.
 *   The bound is what limits how long a key the issuer has withdrawn (rotated out after a compromise) stays accepted
 *   by a replica that cannot reach the issuer; a day by default, the longest token lifetime accepted.
 * - Every fetch, whatever its outcome, starts the cooldown: no fetch starts within `cooldownMs` of the end of the last
 *   one. A token whose `kid` is not held makes a fetch only outside the cooldown (or joins the one in flight); within
 *   it, or when that fetch fails, it is an unknown key (401) as long as a key set is held, and 503 only with none.
 * - Failed fetches in a row grow the cooldown (#app/backoff: after n of them it is `cooldownMs`·2^(n-1), capped at
 *   `maxCooldownMs`), so a failing issuer is asked less and less often by every replica instead of every 5 s forever;
 *   one fetch that succeeds brings it back to `cooldownMs`. The rules above hold with the grown cooldown in place of
 *   the plain one.
 * - A response is read as a stream and dropped past `maxBytes`, or with more than `maxKeys` keys, within `timeoutMs`
 *   for the whole of it: nothing from a refused response is held.
 *
 * Key selection and import stay jose's (`createLocalJWKSet`): algorithms, `use`, `key_ops`, curves.
 */
import { createLocalJWKSet, errors, type CryptoKey, type FlattenedJWSInput, type JWSHeaderParameters } from 'jose';
import { exponentialBackoff } from '#app/backoff';
import { silentLog, type Log } from '#app/log';
import { readBounded } from './read-bounded.ts';

/** Short, so a key the issuer has just rotated in is picked up within seconds; long enough to spare the issuer. */
export const DEFAULT_JWKS_COOLDOWN_MS = 5_000;
/**
 * 5 minutes: the longest the cooldown grows to while fetches keep failing. It is how late a replica may notice that
 * the issuer is back (a key rotated in meanwhile is unknown, or with no keys held tokens get 503, for up to that
 * long), against sparing a failing issuer: 12 fetches an hour per replica at the cap instead of 720.
 */
export const DEFAULT_JWKS_MAX_COOLDOWN_MS = 5 * 60_000;
export const DEFAULT_JWKS_MAX_AGE_MS = 10 * 60_000;
/** A day: the longest token lifetime accepted by default; see the module comment for what it bounds. */
export const DEFAULT_JWKS_MAX_STALE_MS = 24 * 60 * 60_000;
export const DEFAULT_JWKS_TIMEOUT_MS = 5_000;
/** 1 MiB: a key set of 1,000 RSA-4096 keys is ~800 KB; real ones are a few KB. */
export const DEFAULT_JWKS_MAX_BYTES = 1024 * 1024;
export const DEFAULT_JWKS_MAX_KEYS = 1_000;
/** A failing issuer is logged at most once per this long (with how many fetches failed since the last line). */
export const JWKS_WARN_INTERVAL_MS = 60_000;

export interface JwksKeySetOptions {
  url: string;
  /**
   * Minimum time between the end of one fetch and the start of the next, whatever the first one's outcome; it grows
   * after failed fetches in a row, up to `maxCooldownMs`.
   */
  cooldownMs?: number;
  /** The longest the cooldown grows to after failed fetches in a row (it doubles with each); at least `cooldownMs`. */
  maxCooldownMs?: number;
  /** Age after which the held key set is refreshed (in the background, while it keeps verifying). */
  maxAgeMs?: number;
  /** Age after which the held key set is no longer used, when no refresh has succeeded since. */
  maxStaleMs?: number;
  /** For one fetch, headers and body together. */
  timeoutMs?: number;
  maxBytes?: number;
  maxKeys?: number;
  /** The clock, in ms since the epoch (tests drive it). */
  now?: () => number;
  log?: Log;
}

/** The key set could not be obtained (or is too old to be used): nothing can be judged. */
export class KeySetUnavailable extends Error {}

type LocalSet = ReturnType<typeof createLocalJWKSet>;

interface Held {
  local: LocalSet;
  fetchedAt: number;
}

export interface JwksKeySet {
  /** jose's key lookup. Throws jose's JWKSNoMatchingKey for an unknown key, KeySetUnavailable when none can be used. */
  getKey(protectedHeader: JWSHeaderParameters, token: FlattenedJWSInput): Promise<CryptoKey>;
  /** Resolves once no fetch is in flight. */
  idle(): Promise<void>;
}

const messageOf = (e: unknown): string => (e instanceof Error ? e.message : String(e));

/** The JWKS document, read within the bounds; throws KeySetUnavailable with the reason. */
const fetchKeySet = async (url: string, timeoutMs: number, maxBytes: number): Promise<unknown> => {
  const signal = AbortSignal.timeout(timeoutMs);
  const timedOut = `no complete answer within ${timeoutMs} ms`;
  let res: Response;
  try {
    res = await fetch(url, { method: 'GET', redirect: 'manual', signal, headers: { accept: 'application/json, application/jwk-set+json' } });
  } catch (e) {
    throw new KeySetUnavailable(signal.aborted ? timedOut : `the fetch failed (${messageOf(e)})`);
  }
  const tooLarge = `the key set is larger than ${maxBytes} bytes`;
  if (res.status !== 200) {
    await res.body?.cancel().catch(() => undefined);
    throw new KeySetUnavailable(`the issuer answered HTTP ${res.status}`);
  }
  const declared = Number(res.headers.get('content-length') ?? Number.NaN);
  if (declared > maxBytes) {
    await res.body?.cancel().catch(() => undefined);
    throw new KeySetUnavailable(tooLarge);
  }
  let text: string | null;
  try {
    text = await readBounded(res, maxBytes);
  } catch (e) {
    throw new KeySetUnavailable(signal.aborted ? timedOut : `the answer broke off (${messageOf(e)})`);
  }
  if (text === null) throw new KeySetUnavailable(tooLarge);
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new KeySetUnavailable('the key set is not JSON');
  }
};

const localSetOf = (doc: unknown, maxKeys: number): LocalSet => {
  const keys = typeof doc === 'object' && doc !== null ? (doc as { keys?: unknown }).keys : undefined;
  if (!Array.isArray(keys)) throw new KeySetUnavailable('the key set has no "keys" array');
  if (keys.length > maxKeys) throw new KeySetUnavailable(`the key set has ${keys.length} keys, more than the ${maxKeys} accepted`);
  try {
    return createLocalJWKSet(doc as { keys: [] });
  } catch (e) {
    throw new KeySetUnavailable(`the key set is malformed (${messageOf(e)})`);
  }
};

export const createJwksKeySet = (o: JwksKeySetOptions): JwksKeySet => {
  const cooldownMs = o.cooldownMs ?? DEFAULT_JWKS_COOLDOWN_MS;
  const cooldownAfter = exponentialBackoff({ initialMs: cooldownMs, maxMs: Math.max(cooldownMs, o.maxCooldownMs ?? DEFAULT_JWKS_MAX_COOLDOWN_MS) });
  const maxAgeMs = o.maxAgeMs ?? DEFAULT_JWKS_MAX_AGE_MS;
  const maxStaleMs = o.maxStaleMs ?? DEFAULT_JWKS_MAX_STALE_MS;
  const timeoutMs = o.timeoutMs ?? DEFAULT_JWKS_TIMEOUT_MS;
  const maxBytes = o.maxBytes ?? DEFAULT_JWKS_MAX_BYTES;
  const maxKeys = o.maxKeys ?? DEFAULT_JWKS_MAX_KEYS;
  const now = o.now ?? Date.now;
  const log = o.log ?? silentLog;

  let held: Held | undefined;
  let inFlight: Promise<void> | undefined;
  let lastAttemptEndedAt = Number.NEGATIVE_INFINITY;
  let lastError: string | undefined;
  /** Failed fetches since the last that succeeded: what the cooldown has grown by. */
  let failedInARow = 0;
  let failedSinceWarning = 0;
  let warnedAt = Number.NEGATIVE_INFINITY;

  const usable = (): Held | undefined => (held !== undefined && now() - held.fetchedAt <= maxStaleMs ? held : undefined);
  /** `cooldownMs` after a success (exponentialBackoff's first step for 0 and 1), grown after failures in a row. */
  const cooldownNow = (): number => cooldownAfter(failedInARow);
  const mayFetch = (): boolean => inFlight === undefined && now() - lastAttemptEndedAt >= cooldownNow();

  const failed = (reason: string): void => {
    lastError = reason;
    failedInARow++;
    failedSinceWarning++;
    if (now() - warnedAt < JWKS_WARN_INTERVAL_MS) return;
    const h = usable();
    log.warn(
      { jwksUrl: o.url, reason, failed: failedSinceWarning, keySetAgeSec: h ? Math.round((now() - h.fetchedAt) / 1000) : null, maxStaleSec: Math.round(maxStaleMs / 1000), nextFetchAfterSec: Math.round(cooldownNow() / 1000) },
      h ? 'the issuer\'s key set could not be refreshed: the key set held is still used' : 'the issuer\'s key set could not be fetched: tokens cannot be checked',
    );
    warnedAt = now();
    failedSinceWarning = 0;
  };

  /** One fetch at a time: a caller while one is in flight joins it. Never rejects; the outcome is in `held`/`lastError`. */
  const refresh = (): Promise<void> => {
    if (inFlight) return inFlight;
    const attempt = (async () => {
      try {
        const local = localSetOf(await fetchKeySet(o.url, timeoutMs, maxBytes), maxKeys);
        held = { local, fetchedAt: now() };
        lastError = undefined;
        if (failedInARow > 0) log.info({ jwksUrl: o.url }, 'the issuer\'s key set was fetched again');
        failedInARow = 0;
        failedSinceWarning = 0;
        warnedAt = Number.NEGATIVE_INFINITY;
      } catch (e) {
        failed(e instanceof KeySetUnavailable ? e.message : messageOf(e));
      } finally {
        lastAttemptEndedAt = now();
        inFlight = undefined;
      }
    })();
    inFlight = attempt;
    return attempt;
  };

  return {
    async getKey(protectedHeader, token) {
      let keys = usable();
      if (keys === undefined) {
        // Nothing held (or too old to use): this request waits for a fetch, the one in flight or a new one.
        if (inFlight !== undefined || mayFetch()) await refresh();
        keys = usable();
        if (keys === undefined) throw new KeySetUnavailable(lastError ?? 'no key set is held');
      } else if (now() - keys.fetchedAt >= maxAgeMs && mayFetch()) {
        void refresh();
      }
      try {
        return await keys.local(protectedHeader, token);
      } catch (e) {
        if (!(e instanceof errors.JWKSNoMatchingKey)) throw e;
        // Perhaps a key the issuer has just rotated in: one fetch per cooldown (or the one in flight), shared.
        if (inFlight === undefined && !mayFetch()) throw e;
        await refresh();
        const after = usable();
        if (after === undefined) throw new KeySetUnavailable(lastError ?? 'no key set is held');
        if (after === keys) throw e;
        return after.local(protectedHeader, token);
      }
    },
    idle: async () => {
      while (inFlight !== undefined) await inFlight;
    },
  };
};
