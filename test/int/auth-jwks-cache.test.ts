/**
 * The issuer's key set as Estate holds it (src/auth/jwks-cache.ts), against a JWKS served on loopback that can fail,
 * hang or grow, with the clock driven by the test: an outage past the max age keeps the held keys verifying with no
 * fetch per request (and is bounded), a refresh is one fetch at a time in the background, every fetch (failed ones
 * too) starts the cooldown, failures in a row grow it (capped) and a success resets it, unknown keys are 401 while
 * keys are held and 503 only with none, an oversized key set is refused and nothing of it is held.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { Log } from '#app/log';
import { createJwksKeySet, DEFAULT_JWKS_MAX_BYTES, DEFAULT_JWKS_MAX_KEYS, type JwksKeySet, type JwksKeySetOptions } from '#auth/jwks-cache';
import { createJwtVerifier, type JwtVerifier } from '#auth/jwt-verifier';
import { startTestIssuer, type MintOptions, type TestIssuer } from '../fixtures/jwks.ts';

const AUDIENCE = 'https://estate.example/mcp';
const MAX_AGE = 600_000;
const COOLDOWN = 5_000;
const UNKNOWN = { ok: false, kind: 'invalid', reason: 'the token was signed with an unknown key' };

interface Rig {
  idp: TestIssuer;
  keySet: JwksKeySet;
  verifier: JwtVerifier;
  /** The clock the key set and the verifier read, in ms. */
  clock: { t: number };
  warnings: Record<string, unknown>[];
  infos: string[];
  /** A token in date by the test's clock. */
  token(o?: MintOptions): Promise<string>;
}

const started: TestIssuer[] = [];
afterEach(async () => {
  await Promise.all(started.splice(0).map((i) => i.close()));
});

const rig = async (options: Partial<JwksKeySetOptions> = {}): Promise<Rig> => {
  const idp = await startTestIssuer(AUDIENCE);
  started.push(idp);
  const clock = { t: Date.now() };
  const warnings: Record<string, unknown>[] = [];
  const infos: string[] = [];
  const log: Log = { debug: () => undefined, info: (_f, m) => infos.push(String(m)), warn: (f) => warnings.push(f as Record<string, unknown>), error: () => undefined };
  const keySet = createJwksKeySet({ url: idp.jwksUrl, cooldownMs: COOLDOWN, maxAgeMs: MAX_AGE, now: () => clock.t, log, ...options });
  const verifier = createJwtVerifier({ issuer: idp.issuer, jwksUrl: idp.jwksUrl, audience: AUDIENCE, clockToleranceSec: 30, now: () => clock.t, keySet });
  const token = (o: MintOptions = {}) => {
    const sec = Math.floor(clock.t / 1000);
    return idp.mint({ ...o, claims: { iat: sec, exp: sec + 300, ...o.claims } });
  };
  return { idp, keySet, verifier, clock, warnings, infos, token };
};

const times = <T>(n: number, f: () => Promise<T>): Promise<T[]> => Promise.all(Array.from({ length: n }, f));

describe('the issuer\'s key set through an outage', () => {
  it('past the max age with the issuer failing, the held keys keep verifying, with no fetch per request', async () => {
    const r = await rig();
    expect((await r.verifier.verify(await r.token())).ok).toBe(true);
    expect(r.idp.fetches).toBe(1);
    r.idp.setDown(true);
    r.clock.t += MAX_AGE + 1;
    const tokens = await times(20, () => r.token());
    for (const out of await Promise.all(tokens.map((t) => r.verifier.verify(t)))) expect(out.ok).toBe(true);
    await r.keySet.idle();
    expect(r.idp.fetches).toBe(2); // one background refresh for 20 requests, and it failed
    for (const t of tokens) expect((await r.verifier.verify(t)).ok).toBe(true);
    await r.keySet.idle();
    expect(r.idp.fetches).toBe(2); // the failed refresh started the cooldown
    expect(r.warnings).toHaveLength(1);
    expect(r.warnings[0]).toMatchObject({ reason: 'the issuer answered HTTP 500', failed: 1, keySetAgeSec: 600 });

    // One more attempt per cooldown (doubling with each failure in a row), told at most once a minute.
    r.clock.t += COOLDOWN;
    expect((await r.verifier.verify(await r.token())).ok).toBe(true);
    await r.keySet.idle();
    expect(r.idp.fetches).toBe(3);
    expect(r.warnings).toHaveLength(1);
    r.clock.t += 60_000;
    expect((await r.verifier.verify(await r.token())).ok).toBe(true);
    await r.keySet.idle();
    expect(r.idp.fetches).toBe(4);
    expect(r.warnings).toHaveLength(2);
    expect(r.warnings[1]).toMatchObject({ failed: 2 });

    // The issuer back: the next refresh (three failures in a row: the cooldown is 4×) takes, and the key set is fresh
    // again (no fetch within the max age).
    r.idp.setDown(false);
    r.clock.t += 4 * COOLDOWN;
    expect((await r.verifier.verify(await r.token())).ok).toBe(true);
    await r.keySet.idle();
    expect(r.idp.fetches).toBe(5);
    expect(r.infos).toContain('the issuer\'s key set was fetched again');
    r.clock.t += MAX_AGE - 1;
    expect((await r.verifier.verify(await r.token())).ok).toBe(true);
    await r.keySet.idle();
    expect(r.idp.fetches).toBe(5);
  });

  it('a refresh is one fetch, in the background: requests do not wait for a hanging issuer', async () => {
    const r = await rig();
    expect((await r.verifier.verify(await r.token())).ok).toBe(true);
    r.idp.hold();
    r.clock.t += MAX_AGE;
    const tokens = await times(10, () => r.token());
    // Were these waiting for the held fetch, they would never resolve.
    for (const out of await Promise.all(tokens.map((t) => r.verifier.verify(t)))) expect(out.ok).toBe(true);
    await r.idp.fetched(2);
    expect(r.idp.fetches).toBe(2);
    r.idp.release();
    await r.keySet.idle();
    expect(r.idp.fetches).toBe(2);
    // Refreshed at the advanced clock: fresh for another max age.
    r.clock.t += MAX_AGE - 1;
    expect((await r.verifier.verify(await r.token())).ok).toBe(true);
    await r.keySet.idle();
    expect(r.idp.fetches).toBe(2);
  });

  it('the held keys are used up to the staleness bound, and not past it: then 503 until the issuer answers', async () => {
    const r = await rig({ maxStaleMs: 3_600_000 });
    expect((await r.verifier.verify(await r.token())).ok).toBe(true);
    r.idp.setDown(true);
    r.clock.t += 3_600_000;
    expect((await r.verifier.verify(await r.token())).ok).toBe(true);
    await r.keySet.idle();
    r.clock.t += COOLDOWN;
    const fetches = r.idp.fetches;
    expect(await r.verifier.verify(await r.token())).toEqual({ ok: false, kind: 'unavailable', reason: 'the issuer\'s key set could not be fetched: the issuer answered HTTP 500' });
    expect(r.idp.fetches).toBe(fetches + 1);
    for (const out of await Promise.all((await times(10, () => r.token())).map((t) => r.verifier.verify(t)))) expect(out).toMatchObject({ ok: false, kind: 'unavailable' });
    expect(r.idp.fetches).toBe(fetches + 1);
    r.idp.setDown(false);
    r.clock.t += 2 * COOLDOWN; // two failures in a row: the cooldown has doubled
    expect((await r.verifier.verify(await r.token())).ok).toBe(true);
    expect(r.idp.fetches).toBe(fetches + 2);
  });
});

describe('unknown keys and the cooldown', () => {
  it('a flood of unknown kids while the issuer fails: one fetch per cooldown, and 401 (not 503) while keys are held', async () => {
    const r = await rig();
    expect((await r.verifier.verify(await r.token())).ok).toBe(true);
    r.idp.setDown(true);
    r.clock.t += COOLDOWN;
    const flood = async () => Promise.all((await times(50, () => r.token({ key: 'unpublished' }))).map((t) => r.verifier.verify(t)));
    for (const out of await flood()) expect(out).toEqual(UNKNOWN);
    expect(r.idp.fetches).toBe(2);
    for (const out of await flood()) expect(out).toEqual(UNKNOWN);
    expect(r.idp.fetches).toBe(2);
    r.clock.t += COOLDOWN - 1;
    for (const out of await flood()) expect(out).toEqual(UNKNOWN);
    expect(r.idp.fetches).toBe(2);
    r.clock.t += 1;
    for (const out of await flood()) expect(out).toEqual(UNKNOWN);
    expect(r.idp.fetches).toBe(3);
    // A valid token is served throughout.
    expect((await r.verifier.verify(await r.token())).ok).toBe(true);
  });

  it('unknown kids while the issuer hangs join the one fetch in flight', async () => {
    const r = await rig();
    expect((await r.verifier.verify(await r.token())).ok).toBe(true);
    r.idp.setDown(true);
    r.idp.hold();
    r.clock.t += COOLDOWN;
    const pending = Promise.all((await times(20, () => r.token({ key: 'unpublished' }))).map((t) => r.verifier.verify(t)));
    await r.idp.fetched(2);
    r.idp.release();
    for (const out of await pending) expect(out).toEqual(UNKNOWN);
    expect(r.idp.fetches).toBe(2);
  });

  it('with no key set ever fetched: 503, and the failed fetch starts the cooldown too', async () => {
    const r = await rig();
    r.idp.setDown(true);
    expect(await r.verifier.verify(await r.token())).toMatchObject({ ok: false, kind: 'unavailable' });
    expect(r.idp.fetches).toBe(1);
    const tokens = [...(await times(10, () => r.token())), ...(await times(10, () => r.token({ key: 'unpublished' })))];
    for (const out of await Promise.all(tokens.map((t) => r.verifier.verify(t)))) expect(out).toMatchObject({ ok: false, kind: 'unavailable' });
    expect(r.idp.fetches).toBe(1);
    r.idp.setDown(false);
    r.clock.t += COOLDOWN;
    expect((await r.verifier.verify(await r.token())).ok).toBe(true);
    expect(r.idp.fetches).toBe(2);
  });

  it('a fetch that gets no answer in time fails (and is not waited for longer)', async () => {
    const r = await rig({ timeoutMs: 50 });
    r.idp.hold();
    expect(await r.verifier.verify(await r.token())).toEqual({ ok: false, kind: 'unavailable', reason: 'the issuer\'s key set could not be fetched: no complete answer within 50 ms' });
    r.idp.release();
  });
});

describe('a failing issuer: the cooldown grows', () => {
  const HOUR = 3_600_000;
  /** The gaps, in s, between the fetches a held key set makes while the issuer fails for an hour, probed each second. */
  const failingHour = async (r: Rig): Promise<number[]> => {
    const start = r.clock.t;
    // One token for the hour (a 2 h lifetime is within the 24 h accepted), so each second costs a verify, not a mint.
    const token = await r.idp.mint({ claims: { iat: Math.floor(start / 1000), exp: Math.floor(start / 1000) + 7_200 } });
    const at: number[] = [];
    for (let s = 0; s <= HOUR / 1000; s++) {
      r.clock.t = start + s * 1000;
      const before = r.idp.fetches;
      expect((await r.verifier.verify(token)).ok).toBe(true);
      await r.keySet.idle();
      if (r.idp.fetches > before) at.push(s);
    }
    return at.slice(1).map((s, i) => s - at[i]!);
  };

  it('failed fetches in a row double the cooldown up to the 5-minute cap: 17 fetches in a failing hour, not 720', async () => {
    const r = await rig();
    expect((await r.verifier.verify(await r.token())).ok).toBe(true);
    r.idp.setDown(true);
    r.clock.t += MAX_AGE; // due for a refresh: the first one fails at once
    const gaps = await failingHour(r);
    expect(gaps.slice(0, 7)).toEqual([5, 10, 20, 40, 80, 160, 300]);
    expect(gaps.slice(7).every((g) => g === 300)).toBe(true);
    expect(r.idp.fetches - 1).toBe(17); // 1 + 6 growing + 10 at the cap
    // The held keys verified throughout; the log still counts every failed fetch, at most one line a minute.
    expect(r.warnings.reduce((n, w) => n + (w.failed as number), 0)).toBe(17);
    // Each line says how long the wait before the next fetch has grown to: the first 5 s, the last at the cap.
    expect(r.warnings[0]).toMatchObject({ nextFetchAfterSec: 5 });
    expect(r.warnings.at(-1)).toMatchObject({ nextFetchAfterSec: 300 });
  });

  it('the cap is an option', async () => {
    const r = await rig({ maxCooldownMs: 30_000 });
    expect((await r.verifier.verify(await r.token())).ok).toBe(true);
    r.idp.setDown(true);
    r.clock.t += MAX_AGE;
    const gaps = await failingHour(r);
    expect(gaps.slice(0, 4)).toEqual([5, 10, 20, 30]);
    expect(gaps.slice(4).every((g) => g === 30)).toBe(true);
  });

  /** A token with a kid not held: a fetch if one may start. The number of fetches after it. */
  const probe = async (r: Rig, expected: object = UNKNOWN): Promise<number> => {
    expect(await r.verifier.verify(await r.token({ key: 'unpublished' }))).toMatchObject(expected);
    await r.keySet.idle();
    return r.idp.fetches;
  };

  it('one fetch that succeeds brings the cooldown back to the plain one', async () => {
    const r = await rig();
    expect((await r.verifier.verify(await r.token())).ok).toBe(true);
    r.idp.setDown(true);
    for (const [i, wait] of [COOLDOWN, COOLDOWN, 2 * COOLDOWN, 4 * COOLDOWN].entries()) {
      r.clock.t += wait;
      expect(await probe(r)).toBe(i + 2);
    }
    // Four failed in a row: the cooldown is now 8×.
    r.idp.setDown(false);
    r.clock.t += 8 * COOLDOWN - 1;
    expect(await probe(r)).toBe(5);
    r.clock.t += 1;
    expect(await probe(r)).toBe(6); // it succeeded (the kid is still unknown)
    // Failing again, the cooldown starts over at the plain one.
    r.idp.setDown(true);
    r.clock.t += COOLDOWN;
    expect(await probe(r)).toBe(7);
    r.clock.t += COOLDOWN;
    expect(await probe(r)).toBe(8);
  });

  it('unknown kids within the grown cooldown make no fetch: 401 while keys are held', async () => {
    const r = await rig();
    expect((await r.verifier.verify(await r.token())).ok).toBe(true);
    r.idp.setDown(true);
    for (const [i, wait] of [COOLDOWN, COOLDOWN, 2 * COOLDOWN].entries()) {
      r.clock.t += wait;
      expect(await probe(r)).toBe(i + 2);
    }
    // Three failed in a row: the cooldown is now 4×.
    r.clock.t += 4 * COOLDOWN - 1;
    const flood = await Promise.all((await times(50, () => r.token({ key: 'unpublished' }))).map((t) => r.verifier.verify(t)));
    for (const out of flood) expect(out).toEqual(UNKNOWN);
    await r.keySet.idle();
    expect(r.idp.fetches).toBe(4);
    r.clock.t += 1;
    expect(await probe(r)).toBe(5);
  });

  it('with no key set held, requests within the grown cooldown make no fetch: 503', async () => {
    const r = await rig();
    r.idp.setDown(true);
    const unavailable = { ok: false, kind: 'unavailable' };
    expect(await probe(r, unavailable)).toBe(1);
    for (const [i, wait] of [COOLDOWN, 2 * COOLDOWN].entries()) {
      r.clock.t += wait;
      expect(await probe(r, unavailable)).toBe(i + 2);
    }
    // Three failed in a row: the cooldown is now 4×.
    r.idp.setDown(false);
    r.clock.t += 4 * COOLDOWN - 1;
    const tokens = [...(await times(10, () => r.token())), ...(await times(10, () => r.token({ key: 'unpublished' })))];
    for (const out of await Promise.all(tokens.map((t) => r.verifier.verify(t)))) expect(out).toMatchObject(unavailable);
    expect(r.idp.fetches).toBe(3);
    r.clock.t += 1;
    expect((await r.verifier.verify(await r.token())).ok).toBe(true);
    expect(r.idp.fetches).toBe(4);
  });
});

describe('the size of the key set', () => {
  const oversized = (idp: TestIssuer) => JSON.stringify({ keys: idp.publicKeys(true), padding: 'x'.repeat(DEFAULT_JWKS_MAX_BYTES) });

  it.each([
    ['with a Content-Length', false],
    ['chunked, read until past the bound', true],
  ])('a key set over 1 MiB is refused (%s)', async (_how, chunked) => {
    const r = await rig();
    r.idp.setBody(oversized(r.idp), { chunked });
    expect(await r.verifier.verify(await r.token())).toEqual({ ok: false, kind: 'unavailable', reason: `the issuer's key set could not be fetched: the key set is larger than ${DEFAULT_JWKS_MAX_BYTES} bytes` });
  });

  it('a key set of more than 1,000 keys is refused', async () => {
    const r = await rig();
    const [key] = r.idp.publicKeys();
    r.idp.setBody(JSON.stringify({ keys: Array.from({ length: DEFAULT_JWKS_MAX_KEYS + 1 }, (_, i) => ({ ...key, kid: `k-${i}` })) }));
    expect(await r.verifier.verify(await r.token())).toEqual({
      ok: false,
      kind: 'unavailable',
      reason: `the issuer's key set could not be fetched: the key set has ${DEFAULT_JWKS_MAX_KEYS + 1} keys, more than the ${DEFAULT_JWKS_MAX_KEYS} accepted`,
    });
  });

  it('nothing of a refused key set is held: its keys are unknown, the keys held before still verify', async () => {
    const r = await rig();
    expect((await r.verifier.verify(await r.token())).ok).toBe(true);
    r.idp.setBody(oversized(r.idp));
    r.clock.t += COOLDOWN;
    // key-2 is only in the oversized set.
    expect(await r.verifier.verify(await r.token({ key: 'unpublished' }))).toEqual(UNKNOWN);
    expect(r.idp.fetches).toBe(2);
    expect(r.warnings[0]).toMatchObject({ reason: `the key set is larger than ${DEFAULT_JWKS_MAX_BYTES} bytes` });
    expect((await r.verifier.verify(await r.token())).ok).toBe(true);
  });
});
