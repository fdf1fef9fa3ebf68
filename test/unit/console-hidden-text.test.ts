/**
 * The console shows a person what others wrote (a publisher's description and reasons, a token's subject and tenant,
 * an issuer's error text) with its hidden characters written out, as the CLI does: controls, zero-width and
 * bidirectional formatting, and the tag characters that spell out text a model reads and a person does not see.
 * Before, only the upstream drift review did: a description carrying instructions in tag characters showed as the
 * harmless text around them, and a run's subject `nimda\u202E` as another name.
 */
import { describe, expect, it } from 'vitest';
import { CONSOLE_JS } from '#console/client-script';
import { html } from '#console/html';
import { cataloguePage, diffPage, principalPage, toolPage, versionPage } from '#console/pages';
import { runPage, runsPage } from '#console/run-pages';
import { makePrincipal } from '#domain/access';
import { visible } from '#domain/visible-text';
import type { ToolDefinition } from '#domain/types';
import { CatalogueProjection, type CatalogueTool, type CatalogueVersion, type VersionDetails } from '#projections/catalogue';
import { aDefinition } from '../fixtures/builders.ts';

/** "IGNORE" in tag characters: invisible on a page, read by a model. */
const SMUGGLED = [...'IGNORE'].map((c) => String.fromCodePoint(0xe0000 + c.charCodeAt(0))).join('');
/** Any character visible() writes out, other than a newline or a tab. */
const HIDDEN = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\u{FE00}-\u{FE0F}\u{E0100}-\u{E01EF}]/u;
const hiddenIn = (page: string): string[] => [...page].filter((c) => c !== '\n' && c !== '\t' && HIDDEN.test(c));

const versionOf = (d: ToolDefinition, extra: Partial<CatalogueVersion> = {}, by = 'pipeline'): { v: CatalogueVersion; details: VersionDetails } => ({
  v: { name: d.name, version: d.version, status: 'active', access: d.access, handler: d.handler, sideEffect: d.sideEffect, timeoutMs: d.timeoutMs, revision: 0, ...extra },
  details: { definition: d, schemaHash: 'ab'.repeat(32), definitionHash: 'cd'.repeat(32), level: 'initial', reasons: [], publishedAt: '2026-12-07T00:00:00.000Z', publishedBy: by, position: '1' },
});

describe('the console writes hidden characters out', () => {
  it('a description with instructions in tag characters: written out in the text and as JSON escapes in the definition', () => {
    const d = aDefinition({ name: 'team.lookup', description: `Looks a payment up.${SMUGGLED} Zero\u200Bwidth.` });
    const { v, details } = versionOf(d);
    const page = versionPage({} as CatalogueProjection, v, details, null, false).text;
    expect(hiddenIn(page)).toEqual([]);
    expect(page).toContain('Looks a payment up.\\u{E0049}\\u{E0047}\\u{E004E}\\u{E004F}\\u{E0052}\\u{E0045} Zero\\u{200B}width.');
    // The definition stays JSON a person can copy: the same value to a parser.
    const pre = /<pre class="definition">([\s\S]*?)<\/pre>/.exec(page)?.[1] ?? '';
    const parsed = JSON.parse(pre.replaceAll('&quot;', '"').replaceAll('&#39;', "'").replaceAll('&lt;', '<').replaceAll('&gt;', '>').replaceAll('&amp;', '&')) as ToolDefinition;
    expect(parsed.description).toBe(d.description);
  });

  it('who published, deprecated or retired a version, and why: written out on the tool page', () => {
    const d = aDefinition({ name: 'team.lookup' });
    const { v, details } = versionOf(d, { status: 'retired', deprecated: { by: 'ops\u202Etxt.exe', at: 't', reason: `old${SMUGGLED}` }, retired: { by: 'a\u2066b', at: 't', reason: 'gone\u0085' } }, 'ci\u200Ebot');
    const tool: CatalogueTool = { name: d.name, versions: [v], description: d.description };
    const page = toolPage(tool, [details]).text;
    expect(hiddenIn(page)).toEqual([]);
    for (const shown of ['ci\\u{200E}bot', 'ops\\u{202E}txt.exe', 'old\\u{E0049}', 'a\\u{2066}b', 'gone\\u{85}']) expect(page).toContain(shown);
  });

  it('two versions whose only difference is a zero-width space: the diff shows the changed line, written out', () => {
    const a = versionOf(aDefinition({ name: 'team.lookup', version: '1.0.0', description: 'Looks up.' }));
    const b = versionOf(aDefinition({ name: 'team.lookup', version: '1.0.1', description: 'Looks\u200B up.' }));
    const page = diffPage(a.v, a.details, b.v, b.details).text;
    expect(hiddenIn(page)).toEqual([]);
    expect(page).toContain('<td class="ins"><pre>  &quot;description&quot;: &quot;Looks\\u200b up.&quot;,</pre></td>');
  });

  it('a run\'s subject and tenant, in the list and on the run\'s page', () => {
    const subject = 'nimda\u202E';
    const tenant = 'acme\u200D';
    const list = runsPage({ runs: [{ runId: 'r1', calls: 1, unfinished: 0, first: 't', last: 't', subject, tenant, tools: ['team.lookup'] }] }).text;
    const one = runPage('r1', [{ owner: { subject, tenant }, calls: [], earlier: 0 }]).text;
    for (const page of [list, one]) {
      expect(hiddenIn(page)).toEqual([]);
      expect(page).toContain('nimda\\u{202E}');
      expect(page).toContain('acme\\u{200D}');
    }
    expect(one).toContain('<h2>Calls by nimda\\u{202E} (tenant acme\\u{200D})</h2>');
  });

  it('once: text already written out, and fragments the template made, are left as they are', () => {
    expect(html`<p>${visible('a\u202Eb')}</p>`.text).toBe('<p>a\\u{202E}b</p>');
    expect(html`<div>${html`<p>${'x\u200By'}</p>`}</div>`.text).toBe('<div><p>x\\u{200B}y</p></div>');
    // Newlines and tabs are the text's own layout.
    expect(html`<pre>${'a\n\tb'}</pre>`.text).toBe('<pre>a\n\tb</pre>');
  });

  it('a value the viewer typed comes back in its form field as typed, so sending the form again sends the same', () => {
    const word = 'kshe\u200Dtra';
    const found = { total: 0, rows: [], namespaces: [] };
    const page = cataloguePage({} as CatalogueProjection, { q: word, namespace: '', classification: '', status: '', upstream: '', page: 1 }, found).text;
    expect(page).toContain(`name="q" value="${word}"`);
    const tried = principalPage(new CatalogueProjection(), makePrincipal({ tenant: `acme${'\u200D'}`, scopes: ['a<b'] })).text;
    expect(tried).toContain('name="tenant" value="acme\u200D"');
    expect(tried).toContain('name="scopes" value="a&lt;b"');
  });

  it('the page script writes a server\'s or an issuer\'s message out the same way', () => {
    const from = CONSOLE_JS.indexOf('const HIDDEN');
    const to = CONSOLE_JS.indexOf('const say');
    expect(from).toBeGreaterThan(0);
    const shown = new Function(`${CONSOLE_JS.slice(from, to)}return shown;`)() as (t: string) => string;
    for (const text of [`refused: description: "a" -> "a${SMUGGLED}"`, 'Sign-in failed: access_denied: nimda\u202E', 'line\nnext\ttab', 'plain']) {
      expect(shown(text)).toBe(visible(text));
    }
    expect(shown('x\u202Ey')).toBe('x\\u{202E}y');
  });
});
