/**
 * Where the configured issuer signs people in: its authorization and token endpoints, read from its metadata
 * (OpenID Connect Discovery, else RFC 8414) by the server, so the console's page can be told them and the page's
 * Content-Security-Policy can name the one other origin it talks to. The document is bounded in size and time, must
 * name the configured issuer (RFC 8414 §3.3: a document for another issuer is refused), and must offer PKCE with S256
 * (OAuth 2.1). A good answer is kept; a failure is retried at most once per cooldown, so a down issuer is not hammered,
 * and failures in a row grow the cooldown (#app/backoff: after n of them `cooldownMs`·2^(n-1), capped at
 * `maxCooldownMs`), so a failing issuer is asked less and less often instead of every 5 s forever.
 */
import { exponentialBackoff } from '#app/backoff';
import { readBounded } from './read-bounded.ts';

/** The wait after a failed lookup before the next one. */
export const DEFAULT_ISSUER_METADATA_COOLDOWN_MS = 5_000;
/**
 * 5 minutes: the longest the wait grows to while lookups keep failing. It is how late a server may notice that the
 * issuer is back (the console's sign-in stays unavailable up to that long), against sparing a failing issuer: 12
 * lookups an hour per server process at the cap instead of 720.
 */
export const DEFAULT_ISSUER_METADATA_MAX_COOLDOWN_MS = 5 * 60_000;

export interface IssuerEndpoints {
  issuer: string;
  authorizationEndpoint: string;
  tokenEndpoint: string;
}

export type IssuerLookup = { ok: true; endpoints: IssuerEndpoints } | { ok: false; reason: string };

export interface IssuerMetadata {
  get(): Promise<IssuerLookup>;
}

export interface IssuerMetadataOptions {
  timeoutMs?: number;
  /** The wait after a failed lookup before the next one; it doubles with each failure in a row, up to `maxCooldownMs`. */
  cooldownMs?: number;
  /** The longest the wait after failures grows to; at least `cooldownMs`. */
  maxCooldownMs?: number;
  maxBytes?: number;
  fetch?: typeof fetch;
  /** The clock, in ms since the epoch (tests drive it). */
  now?: () => number;
}

/** OpenID Connect Discovery appends to the issuer; RFC 8414 inserts the well-known segment before the issuer's path. */
export const metadataUrls = (issuer: string): string[] => {
  const u = new URL(issuer);
  const path = u.pathname.replace(/\/+$/, '');
  return [`${u.origin}${path}/.well-known/openid-configuration`, `${u.origin}/.well-known/oauth-authorization-server${path}`];
};

/** https, or http on a loopback host (a local issuer): never a page that could be read in transit. */
const endpointOk = (s: unknown): s is string => {
  if (typeof s !== 'string' || s.length > 2000) return false;
  try {
    const u = new URL(s);
    return u.hash === '' && (u.protocol === 'https:' || (u.protocol === 'http:' && ['127.0.0.1', 'localhost', '[::1]'].includes(u.hostname)));
  } catch {
    return false;
  }
};

/** Why this metadata document cannot be used for the console's sign-in, or the endpoints. */
export const readIssuerMetadata = (issuer: string, doc: unknown): IssuerLookup => {
  const d = (doc ?? {}) as Record<string, unknown>;
  if (d.issuer !== issuer) return { ok: false, reason: `the metadata names the issuer ${JSON.stringify(String(d.issuer).slice(0, 200))}, not ${JSON.stringify(issuer)}` };
  if (!endpointOk(d.authorization_endpoint)) return { ok: false, reason: 'the metadata has no usable authorization_endpoint (https, or http on loopback)' };
  if (!endpointOk(d.token_endpoint)) return { ok: false, reason: 'the metadata has no usable token_endpoint (https, or http on loopback)' };
  const methods = d.code_challenge_methods_supported;
  if (!Array.isArray(methods) || !methods.includes('S256')) return { ok: false, reason: 'the issuer does not offer PKCE with S256 (code_challenge_methods_supported)' };
  return { ok: true, endpoints: { issuer, authorizationEndpoint: d.authorization_endpoint, tokenEndpoint: d.token_endpoint } };
};


export const createIssuerMetadata = (issuer: string, o: IssuerMetadataOptions = {}): IssuerMetadata => {
  const doFetch = o.fetch ?? fetch;
  const maxBytes = o.maxBytes ?? 64 * 1024;
  const now = o.now ?? Date.now;
  const cooldownMs = o.cooldownMs ?? DEFAULT_ISSUER_METADATA_COOLDOWN_MS;
  const waitAfter = exponentialBackoff({ initialMs: cooldownMs, maxMs: Math.max(cooldownMs, o.maxCooldownMs ?? DEFAULT_ISSUER_METADATA_MAX_COOLDOWN_MS) });
  let found: IssuerLookup | undefined;
  /** The last lookup's failure, and how many lookups have failed in a row (a success is kept: none follows it). */
  let failed: { at: number; lookup: IssuerLookup; inARow: number } | undefined;
  let running: Promise<IssuerLookup> | undefined;

  const fetchOne = async (url: string): Promise<IssuerLookup> => {
    const res = await doFetch(url, { signal: AbortSignal.timeout(o.timeoutMs ?? 5_000), redirect: 'error', headers: { accept: 'application/json' } });
    if (!res.ok) {
      await res.body?.cancel();
      return { ok: false, reason: `${url} answered ${res.status}` };
    }
    const text = await readBounded(res, maxBytes);
    if (text === null) return { ok: false, reason: `${url} is larger than ${maxBytes} bytes` };
    let doc: unknown;
    try {
      doc = JSON.parse(text);
    } catch {
      return { ok: false, reason: `${url} is not JSON` };
    }
    return readIssuerMetadata(issuer, doc);
  };

  const lookup = async (): Promise<IssuerLookup> => {
    const reasons: string[] = [];
    for (const url of metadataUrls(issuer)) {
      try {
        const r = await fetchOne(url);
        if (r.ok) return r;
        reasons.push(r.reason);
      } catch (e) {
        reasons.push(`${url}: ${e instanceof Error ? e.message : String(e)}`);
      }
    }
    return { ok: false, reason: `the issuer's metadata cannot be used: ${reasons.join('; ')}` };
  };

  return {
    get() {
      if (found) return Promise.resolve(found);
      if (failed && now() - failed.at < waitAfter(failed.inARow)) return Promise.resolve(failed.lookup);
      running ??= lookup().then((r) => {
        running = undefined;
        if (r.ok) found = r;
        else failed = { at: now(), lookup: r, inARow: (failed?.inARow ?? 0) + 1 };
        return r;
      });
      return running;
    },
  };
};
