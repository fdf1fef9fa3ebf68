/**
 * What one console page may cost the serving thread, whoever published what it shows: a tool of many versions lists
 * the newest TOOL_PAGE_VERSIONS, a reason quoting two long descriptions is cut, and two versions too large to diff line
 * by line (the diff costs the product of their lengths) get the classifier's verdict alone. The drift review writes
 * out a bidirectional override in an upstream tool's name.
 */
import { describe, expect, it } from 'vitest';
import { diffPage, MAX_DIFF_LINES, TOOL_PAGE_VERSIONS, toolPage, toolPageVersions } from '#console/pages';
import { upstreamsPage } from '#console/upstream-page';
import { printWithPaths } from '#console/schema-diff';
import type { ToolDefinition } from '#domain/types';
import type { CatalogueTool, CatalogueVersion, VersionDetails } from '#projections/catalogue';
import { aDefinition } from '../fixtures/builders.ts';

const versionOf = (d: ToolDefinition, i: number): { v: CatalogueVersion; details: VersionDetails } => ({
  v: { name: d.name, version: d.version, status: 'active', access: d.access, handler: d.handler, sideEffect: d.sideEffect, timeoutMs: d.timeoutMs, revision: i },
  details: {
    definition: d,
    schemaHash: 'ab'.repeat(32),
    definitionHash: 'cd'.repeat(32),
    level: i === 0 ? 'initial' : 'patch',
    reasons: i === 0 ? [] : [{ level: 'patch', path: 'description', rule: 'description-changed', detail: `description: "${'a'.repeat(20_000)}" -> "${'b'.repeat(20_000)}"` }],
    publishedAt: '2026-12-07T00:00:00.000Z',
    publishedBy: 'pipeline',
    position: String(i + 1),
  },
});

describe('console pages stay bounded', () => {
  it('a tool of 300 versions lists the newest 100, says so, and cuts each reason\'s text', () => {
    const made = Array.from({ length: 300 }, (_, i) => versionOf(aDefinition({ name: 'team.many', version: `1.0.${i}` }), i));
    const tool: CatalogueTool = { name: 'team.many', versions: made.map((m) => m.v), description: 'd' };
    const shown = toolPageVersions(tool);
    expect(shown).toHaveLength(TOOL_PAGE_VERSIONS);
    expect(shown[0]?.version).toBe('1.0.200');
    const page = toolPage(tool, shown.map((v) => made[v.revision]!.details)).text;
    expect(page).toContain('The newest 100 of 300 versions; <code>estate history team.many</code> lists all of them.');
    expect(page).not.toContain('>1.0.199<');
    expect(page).toContain('(39621 more characters)');
    // 100 versions of two 20,000-character descriptions each were ~4 MB of page; cut, well under a megabyte.
    expect(page.length).toBeLessThan(1_000_000);
  });

  it('two versions too large to diff line by line get the verdict and its reasons, not the table', () => {
    const properties = (tag: string) => Object.fromEntries(Array.from({ length: 1000 }, (_, i) => [`p${i}`, { type: 'string', description: `${tag}${i}` }]));
    const a = versionOf(aDefinition({ name: 'team.big', version: '1.0.0', inputSchema: { type: 'object', properties: properties('a') } }), 0);
    const b = versionOf(aDefinition({ name: 'team.big', version: '2.0.0', inputSchema: { type: 'object', properties: properties('b') } }), 1);
    expect(printWithPaths(a.details.definition).length).toBeGreaterThan(MAX_DIFF_LINES);
    const page = diffPage(a.v, a.details, b.v, b.details).text;
    expect(page).toContain('id="diff-too-large"');
    expect(page).toContain('estate diff team.big@1.0.0 team.big@2.0.0');
    expect(page).not.toContain('<table class="diff">');
    expect(page).toContain('The classifier says <span class="level patch">patch</span>');
    // Small ones still get the table.
    const s1 = versionOf(aDefinition({ name: 'team.small', version: '1.0.0' }), 0);
    const s2 = versionOf(aDefinition({ name: 'team.small', version: '1.1.0', description: 'changed' }), 1);
    expect(diffPage(s1.v, s1.details, s2.v, s2.details).text).toContain('<table class="diff">');
  });

  it('the drift review writes out a bidirectional override in the upstream tool\'s name', () => {
    const drift = { tool: 'ev.safe_exe_txt', upstreamTool: 'safe\u202Eexe.txt', level: 'initial' as const, reasons: [], candidateHash: 'ef'.repeat(32), at: 't' };
    const page = upstreamsPage([{ ns: 'ev', transport: 'stdio', target: 'node x', tools: 0, status: 'active', link: 'up', pending: [drift] }], () => true).text;
    expect(page).toContain('Upstream tool <code>safe\\u{202E}exe.txt</code>');
    expect(page).not.toContain('\u202E');
  });
});
