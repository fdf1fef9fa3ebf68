/**
 * Signing in to the console with authorization on, in Chromium, against a real OpenID provider (oidc-provider, the
 * test's own process): the authorization code flow with PKCE from the console's page, the token kept in the page's
 * memory only (no storage, no cookie at Estate's origin), pages followed in place with the token as a Bearer header,
 * a live update without reload, a deprecation recorded as the signed-in person; a viewer without the lifecycle scope
 * is offered no action and refused when it tries anyway (nothing changes); a token with no console scope is not let
 * in; a forged or an expired token signs the page out. axe-core on each page (no serious or critical violation).
 */
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOidcIssuer, type OidcIssuer } from '../fixtures/oidc-issuer.ts';
import { checkConsolePage } from './console-page-check.ts';
import { makeTempStore, runCli, startHttpServer, toolDefinition, type HttpServer, type TempStore } from './helpers.ts';

const CHROMIUM = '/usr/bin/chromium';
const AUDIENCE = 'https://estate.test/mcp';
const ACCOUNTS = {
  ops: { password: 'ops-password', tenant: 'acme', clearance: 'restricted', scopes: ['estate:read', 'estate:lifecycle'] },
  viewer: { password: 'viewer-password', tenant: 'acme', clearance: 'public', scopes: ['estate:read'] },
  agent: { password: 'agent-password', tenant: 'acme', clearance: 'public', scopes: [] },
};


describe('console sign-in through an OpenID provider, in Chromium', () => {
  let tmp: TempStore;
  let idp: OidcIssuer;
  let srv: HttpServer;
  let base: string;
  let browser: Browser;

  const check = (page: Page, name: string): Promise<void> => checkConsolePage(page, name);

  /** A fresh browser context (no issuer session), signed in as `who` from `path`. */
  const signIn = async (who: keyof typeof ACCOUNTS, path = ''): Promise<{ context: BrowserContext; page: Page }> => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    await page.goto(`${base}${path}`);
    await page.waitForSelector('html[data-console-ready="1"]');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(`${idp.issuer}/interaction/**`);
    await page.getByLabel('Username').fill(who);
    await page.getByLabel('Password').fill(ACCOUNTS[who].password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(`${base}${path}`);
    return { context, page };
  };

  const history = async (name: string): Promise<string> => (await runCli(['history', name, '--json', '--store', tmp.store])).stdout;

  beforeAll(async () => {
    tmp = makeTempStore('estate-console-signin-');
    idp = await startOidcIssuer({ audience: AUDIENCE, accounts: ACCOUNTS });
    srv = await startHttpServer(['--demo', '--store', tmp.store, '--auth-issuer', idp.issuer, '--auth-jwks-url', idp.jwksUrl, '--auth-audience', AUDIENCE, '--console-client-id', idp.clientId]);
    base = srv.url.replace(/\/mcp$/, '/console/');
    idp.registerConsole(new URL(base).origin);
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'] });
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    await srv?.stop();
    await idp?.close();
    tmp?.cleanup();
  });

  it('signs in with the code flow and PKCE, keeps the token in memory only, and follows pages in place', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    await page.goto(base);
    await check(page, 'sign-in');
    expect(await page.locator('main').textContent()).not.toContain('payments.');
    await context.close();

    const { context: c2, page: p2 } = await signIn('ops');
    try {
      await expect.poll(() => p2.locator('#result-count').textContent()).toMatch(/tools? match/);
      expect(await p2.locator('#who').textContent()).toContain('signed in as ops');
      expect(idp.tokensIssued).toBeGreaterThan(0);
      // Nothing of the sign-in is kept: no storage, no cookie at Estate's origin, the code gone from the address.
      expect(await p2.evaluate('JSON.stringify([localStorage.length, sessionStorage.length, document.cookie])')).toBe('[0,0,""]');
      expect(p2.url()).not.toContain('code=');
      await check(p2, 'catalogue-signed-in');
      await p2.evaluate('window.__notReloaded = true');
      await p2.getByLabel('Search').fill('transfer');
      await p2.getByRole('button', { name: 'Search' }).click();
      await expect.poll(() => p2.locator('#result-count').textContent()).toContain('1 tool matches');
      await p2.getByRole('link', { name: 'payments.transfer', exact: true }).click();
      await expect.poll(() => p2.locator('h1').textContent()).toBe('payments.transfer');
      expect(await p2.evaluate('window.__notReloaded')).toBe(true);
      await p2.goBack();
      await expect.poll(() => p2.locator('#result-count').textContent()).toContain('1 tool matches');
    } finally {
      await c2.close();
    }
  });

  it('deprecates with a reason as the signed-in person, and shows a CLI publish without reload', async () => {
    const { context, page } = await signIn('ops', 'tools/payments.lookup/versions/1.0.0');
    try {
      await expect.poll(() => page.locator('h1').textContent()).toBe('payments.lookup@1.0.0');
      await page.evaluate('window.__notReloaded = true');
      await page.getByLabel('Reason').fill('superseded by 2.0.0');
      await page.getByRole('button', { name: 'Deprecate 1.0.0' }).click();
      await expect.poll(() => page.locator('#live').textContent()).toContain('deprecated: payments.lookup@1.0.0');
      expect(await history('payments.lookup')).toContain('superseded by 2.0.0');
      await page.getByRole('link', { name: 'All versions of payments.lookup' }).click();
      await expect.poll(() => page.locator('main').textContent()).toMatch(/Deprecated by ops at \S+: superseded by 2\.0\.0/);
      const r = await runCli(['publish', tmp.file('live.json', toolDefinition({ name: 'live.signed', version: '1.0.0', handler: 'live.signed' })), '--store', tmp.store]);
      expect(r.code, r.stderr).toBe(0);
      await expect.poll(() => page.locator('#live').textContent(), { timeout: 20_000 }).toContain('Catalogue changed: live.signed');
      expect(await page.evaluate('window.__notReloaded')).toBe(true);
    } finally {
      await context.close();
    }
  });

  it('offers a viewer without the lifecycle scope no action, and refuses one sent anyway: nothing changes', async () => {
    const { context, page } = await signIn('viewer', 'tools/payments.cancel/versions/1.0.0');
    try {
      await expect.poll(() => page.locator('h1').textContent()).toBe('payments.cancel@1.0.0');
      expect(await page.getByRole('button', { name: /Deprecate|Retire/ }).count()).toBe(0);
      await check(page, 'version-viewer');
      // The viewer's own token, taken off its next request, sent to the action by hand.
      const seen = page.waitForRequest((r) => r.url().includes('/console/') && r.headers().authorization !== undefined);
      await page.getByRole('link', { name: 'Runs' }).click();
      const authorization = (await seen).headers().authorization as string;
      const res = await fetch(`${base}api/tools/payments.cancel/versions/1.0.0/lifecycle`, { method: 'POST', headers: { authorization, 'content-type': 'application/json', 'x-estate-console': '1' }, body: JSON.stringify({ action: 'retire', reason: 'not mine' }) });
      expect(res.status).toBe(403);
      expect(((await res.json()) as { error: { message: string } }).error.message).toContain('estate:lifecycle:payments');
      expect(await history('payments.cancel')).not.toContain('not mine');
    } finally {
      await context.close();
    }
  });

  it('says so when the issuer refuses the sign-in, and does not let in a token holding no console scope', async () => {
    // The issuer grants `agent` none of the scopes asked for and answers access_denied: the page says why.
    const refused = await signIn('agent');
    try {
      await expect.poll(() => refused.page.locator('#signed-out-reason').textContent()).toContain('Sign-in failed: access_denied');
      expect(await refused.page.locator('main').textContent()).not.toContain('payments.');
    } finally {
      await refused.context.close();
    }
    const again = await signIn('ops');
    try {
      await expect.poll(() => again.page.locator('#result-count').textContent()).toMatch(/tools? match/);
      // A token the issuer really signed, for this resource, but carrying only a tool scope.
      const token = await idp.mint({ sub: 'agent', scope: 'payments.read', tenant: 'acme' });
      await again.page.route('**/console/**', (route) => {
        const h = route.request().headers();
        return route.continue(h.authorization ? { headers: { ...h, authorization: `Bearer ${token}` } } : {});
      });
      await again.page.getByRole('link', { name: 'Runs' }).click();
      await expect.poll(() => again.page.locator('h1').textContent()).toBe('Signed out');
      expect(await again.page.locator('#signed-out-reason').textContent()).toContain('holds none of estate:read');
      expect(await again.page.locator('main').textContent()).not.toContain('payments.');
    } finally {
      await again.context.close();
    }
  });

  it('signs the page out on a forged token and on an expired one', async () => {
    const { context, page } = await signIn('ops');
    try {
      await expect.poll(() => page.locator('#result-count').textContent()).toMatch(/tools? match/);
      for (const [token, says] of [
        [await idp.mint({ sub: 'ops', scope: 'estate:read estate:lifecycle', tenant: 'acme' }, { key: 'forged' }), "the token's signature does not verify"],
        [await idp.mint({ sub: 'ops', scope: 'estate:read estate:lifecycle', tenant: 'acme', iat: Math.floor(Date.now() / 1000) - 600, exp: Math.floor(Date.now() / 1000) - 300 }), 'the token is expired'],
      ] as const) {
        await page.route('**/console/**', (route) => {
          const h = route.request().headers();
          return route.continue(h.authorization ? { headers: { ...h, authorization: `Bearer ${token}` } } : {});
        });
        await page.getByRole('link', { name: 'Try a principal' }).click();
        await expect.poll(() => page.locator('h1').textContent()).toBe('Signed out');
        expect(await page.locator('#signed-out-reason').textContent()).toContain(says);
        expect(await page.locator('#who').textContent()).toContain('signed out');
        await check(page, 'signed-out');
        await page.unrouteAll();
        // Signed out means the token is gone: the next page asks to sign in again.
        await page.getByRole('link', { name: 'Catalogue' }).click();
        await page.waitForURL(base);
        expect(await page.locator('h1').textContent()).toBe('Sign in');
        await page.getByRole('button', { name: 'Sign in' }).click();
        await expect.poll(() => page.locator('#result-count').textContent()).toMatch(/tools? match/);
      }
    } finally {
      await context.close();
    }
  });
});
