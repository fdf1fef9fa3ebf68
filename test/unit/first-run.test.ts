/** The start-up banner and the browser page as pure functions: wording, redaction, escaping. */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { startupBanner } from '#cli/banner';
import { SERVER_INFO } from '#mcp/server-info';
import { redactStoreUrl } from '#store/store-url';
import { browserPage, escapeHtml } from '#mcp/browser-page';

describe('startupBanner', () => {
  const base = { transport: 'http' as const, url: 'http://127.0.0.1:8080/mcp', store: 'sqlite:.estate/estate.db', visible: 1, total: 7, demo: true, handlers: 7 };
  it('names URL, store and the principal, and how to see more when the view is partial', () => {
    const text = startupBanner({ ...base, principal: { tenant: 'default', scopes: [], clearance: 'public' } });
    expect(text.split('\n').slice(0, 3)).toEqual([
      'Estate: MCP server at http://127.0.0.1:8080/mcp (store sqlite:.estate/estate.db)',
      '  serving 1 of 7 tools to tenant=default, scopes=(none), clearance=public',
      '  to see more, serve a richer principal, e.g.: npm start -- --tenant acme --scopes payments.read,accounts.read --clearance confidential',
    ]);
  });
  it('says nothing about "more" when everything is seen, and per-token principals under authorization', () => {
    expect(startupBanner({ ...base, visible: 7, principal: { tenant: 'acme', scopes: ['a', 'b'], clearance: 'restricted' } })).not.toContain('to see more');
    expect(startupBanner({ ...base })).toContain('each request is served as the principal of its access token');
    expect(startupBanner({ ...base, handlers: 0, principal: { tenant: 't', scopes: [], clearance: 'public' } })).toContain('no handlers bound');
  });
  it('never prints a store password', () => {
    expect(redactStoreUrl('postgres://estate:s3cret@db:5432/estate')).toBe('postgres://estate:***@db:5432/estate');
    expect(redactStoreUrl('sqlite:/tmp/a:b@c.db')).toBe('sqlite:/tmp/a:b@c.db');
    expect(startupBanner({ ...base, store: 'postgres://u:pw@h/db' })).not.toContain('pw');
  });
  it('says the version package.json has (initialize, server/discover and estate --version say it)', () => {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
    expect(SERVER_INFO.version).toBe(pkg.version);
  });
});

describe('browserPage', () => {
  it('escapes everything it interpolates, and has no script or external asset', () => {
    const page = browserPage('http://evil"><script>alert(1)</script>/mcp');
    expect(page).not.toContain('<script');
    expect(page).toContain('&lt;script&gt;');
    expect(page).not.toMatch(/\ssrc=|<link|<img|<iframe/i);
    expect(escapeHtml(`<&>"'`)).toBe('&lt;&amp;&gt;&quot;&#39;');
  });
});
