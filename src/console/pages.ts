/**
 * The console's pages, rendered on the server from the same read models the CLI and MCP paths use: the catalogue
 * projection, the discovery rule (newestVisible/isVisible), the classifier (classifyDefinition) and the call records.
 */
import { jsonVisible, visible } from '#domain/visible-text';
import { isVisible, makePrincipal } from '#domain/access';
import { classifyDefinition } from '#domain/classify';
import { CLASSIFICATIONS, type Principal, type Reason } from '#domain/types';
import type { CatalogueProjection, CatalogueTool, CatalogueVersion, VersionDetails } from '#projections/catalogue';
import { discoverNaive } from '#projections/discovery';
import { PAGE_SIZE, searchCatalogue, STATUSES, type CatalogueQuery, type CatalogueSearchResult } from './catalogue-search.ts';
import { html, seg, typed, type Html } from './html.ts';
import { diffLines, placeReasons, printWithPaths, type DiffRow } from './schema-diff.ts';

export const toolHref = (name: string): string => `/console/tools/${seg(name)}`;
export const versionHref = (name: string, version: string): string => `/console/tools/${seg(name)}/versions/${seg(version)}`;

const option = (value: string, label: string, selected: string): Html => html`<option value="${value}"${selected === value ? html` selected` : ''}>${label}</option>`;

/** Past this many namespaces the filter is a text field: a page never lists the whole catalogue's names. */
export const MAX_NAMESPACE_OPTIONS = 200;

const namespaceFilter = (namespaces: readonly string[], chosen: string): Html =>
  namespaces.length > MAX_NAMESPACE_OPTIONS
    ? html`<label>Namespace <input name="namespace" value="${typed(chosen)}" placeholder="exact namespace"></label>`
    : html`<label>Namespace <select name="namespace">${option('', 'any', chosen)}${namespaces.map((n) => option(n, n, chosen))}</select></label>`;

/**
 * `found`: the search's result (the route searches first, to read the shown rows' details); `detailsOf`: a row's details
 * (default: what its record holds).
 */
export const cataloguePage = (
  catalogue: CatalogueProjection,
  q: CatalogueQuery,
  found: CatalogueSearchResult = searchCatalogue(catalogue, q),
  detailsOf: (v: CatalogueVersion) => VersionDetails | undefined = (v) => v.details,
): Html => {
  const { total, rows, namespaces } = found;
  const pages = Math.max(1, Math.ceil(total / PAGE_SIZE));
  const link = (page: number): string => {
    const p = new URLSearchParams();
    for (const [k, v] of Object.entries({ ...q, page: String(page) })) if (v !== '' && !(k === 'page' && v === '1')) p.set(k, String(v));
    const s = p.toString();
    return `/console/${s ? `?${s}` : ''}`;
  };
  return html`<h1>Catalogue</h1>
<form class="filters" method="get" action="/console/" role="search" data-live-refresh>
<label>Search <input type="search" name="q" value="${typed(q.q)}" placeholder="name, title or description"></label>
${namespaceFilter(namespaces, q.namespace)}
<label>Classification <select name="classification">${option('', 'any', q.classification)}${CLASSIFICATIONS.map((c) => option(c, c, q.classification))}</select></label>
<label>Status <select name="status">${option('', 'any', q.status)}${STATUSES.map((s) => option(s, s, q.status))}</select></label>
<label>Upstream <select name="upstream">${option('', 'any', q.upstream)}${option('yes', 'mirrored', q.upstream)}${option('no', 'local', q.upstream)}</select></label>
<button type="submit">Search</button>
</form>
<p id="result-count">${total} ${total === 1 ? 'tool' : 'tools'} match${total === 1 ? 'es' : ''} (${catalogue.size} in the catalogue); page ${Math.min(q.page, pages)} of ${pages}.</p>
<table class="catalogue">
<thead><tr><th scope="col">Tool</th><th scope="col">Newest version</th><th scope="col">Title</th><th scope="col">Classification</th><th scope="col">Status</th><th scope="col">Published</th></tr></thead>
<tbody>${rows.map(
    (v) => html`<tr><td><a href="${toolHref(v.name)}">${v.name}</a></td><td><a href="${versionHref(v.name, v.version)}">${v.version}</a></td><td>${catalogue.tool(v.name)?.title ?? ''}</td><td>${v.access.classification}</td><td><span class="status ${v.status}">${v.status}</span></td><td><time datetime="${detailsOf(v)?.publishedAt ?? ''}">${detailsOf(v)?.publishedAt ?? ''}</time></td></tr>`,
  )}</tbody>
</table>
<nav class="pager" aria-label="Pages">${q.page > 1 ? html`<a rel="prev" href="${link(q.page - 1)}">Previous page</a>` : ''} ${q.page < pages ? html`<a rel="next" href="${link(q.page + 1)}">Next page</a>` : ''}</nav>`;
};

/** The most characters of a reason's detail a page shows: a description-changed reason quotes both texts whole. */
const DETAIL_CHARS = 400;
const cut = (s: string, n: number): string => (s.length > n ? `${s.slice(0, n)}… (${s.length - n} more characters)` : s);

export const reasonsList = (reasons: readonly Reason[]): Html =>
  reasons.length === 0 ? html`<span class="muted">first version or no change</span>` : html`<ul class="reasons">${reasons.map((r) => html`<li><span class="level ${r.level}">${r.level}</span> <code>${visible(cut(r.path, DETAIL_CHARS))}</code> ${r.rule}: ${visible(cut(r.detail, DETAIL_CHARS))}</li>`)}</ul>`;

const lifecycleForm = (v: CatalogueVersion): Html =>
  v.status === 'retired'
    ? html``
    : html`<form class="lifecycle" method="post" action="/console/api/tools/${seg(v.name)}/versions/${seg(v.version)}/lifecycle" data-action>
<label>Reason <input name="reason" required maxlength="500"></label>
${v.status === 'active' ? html`<button type="submit" name="action" value="deprecate">Deprecate ${v.version}</button>` : ''}
<button type="submit" name="action" value="retire">Retire ${v.version}</button>
</form>`;

/** The most versions a tool's page lists (newest first); `estate history` lists them all. */
export const TOOL_PAGE_VERSIONS = 100;

/** `details`: each version's, in the tool's order (only the newest TOOL_PAGE_VERSIONS are read: toolPageVersions). */
export const toolPageVersions = (tool: CatalogueTool): readonly CatalogueVersion[] => tool.versions.slice(-TOOL_PAGE_VERSIONS);

/** `details`: those of toolPageVersions(tool), in the tool's order. */
export const toolPage = (tool: CatalogueTool, details: readonly VersionDetails[]): Html => {
  const versions = toolPageVersions(tool).slice().reverse();
  const newestFirst = [...details].reverse();
  const older = tool.versions.length - versions.length;
  const compare = versions.length >= 2 ? html`<form method="get" action="${toolHref(tool.name)}/diff" class="compare">
<label>From <select name="a">${versions.map((v, i) => option(v.version, v.version, (versions[1] ?? versions[0])?.version === v.version && i > 0 ? v.version : ''))}</select></label>
<label>To <select name="b">${versions.map((v) => option(v.version, v.version, (versions[0] as CatalogueVersion).version))}</select></label>
<button type="submit">Compare versions</button></form>` : html`<p>Only one version: nothing to compare yet.</p>`;
  return html`<h1>${tool.name}</h1>
${compare}
<h2>Version timeline</h2>
${older > 0 ? html`<p class="muted">The newest ${versions.length} of ${tool.versions.length} versions; <code>estate history ${tool.name}</code> lists all of them.</p>` : ''}
<ol class="timeline">${versions.map(
    (v, i, _all, d = newestFirst[i] as VersionDetails) => html`<li class="version"><h3><a href="${versionHref(v.name, v.version)}">${v.version}</a> <span class="level ${d.level}">${d.level}</span> <span class="status ${v.status}">${v.status}</span></h3>
<p>Published by <strong>${d.publishedBy}</strong> at <time datetime="${d.publishedAt}">${d.publishedAt}</time>; schema <code>${d.schemaHash.slice(0, 12)}</code></p>
${v.deprecated ? html`<p>Deprecated by <strong>${v.deprecated.by}</strong> at ${v.deprecated.at}: ${v.deprecated.reason}</p>` : ''}
${v.retired ? html`<p>Retired by <strong>${v.retired.by}</strong> at ${v.retired.at}: ${v.retired.reason}</p>` : ''}
${reasonsList(d.reasons)}</li>`,
  )}</ol>`;
};

const diffCell = (side: 'left' | 'right', row: DiffRow): Html => {
  const line = side === 'left' ? (row.kind === 'added' ? undefined : row.left) : row.kind === 'removed' ? undefined : row.right;
  const cls = row.kind === 'same' ? 'same' : line === undefined ? 'empty' : side === 'left' ? 'del' : 'ins';
  return html`<td class="${cls}"><pre>${line?.text ?? ''}</pre></td>`;
};

/**
 * The most printed lines of a definition the side-by-side diff takes: the line diff costs their product in time and
 * memory, on the serving thread. Two versions of 10,000 properties each (259 KB, well inside what a definition may be)
 * held every route 12.9 s and took 3.8 GB. Past it the page gives the classifier's verdict and reasons alone.
 */
export const MAX_DIFF_LINES = 3000;

export const diffPage = (a: CatalogueVersion, da: VersionDetails, b: CatalogueVersion, db: VersionDetails): Html => {
  const { level, reasons } = classifyDefinition(da.definition, db.definition);
  const left = printWithPaths(da.definition);
  const right = printWithPaths(db.definition);
  const verdict = html`<h1>${a.name}: ${a.version} → ${b.version}</h1>
<p>The classifier says <span class="level ${level}">${level}</span>${reasons.length === 0 ? ' (no change)' : ''}.</p>`;
  if (left.length > MAX_DIFF_LINES || right.length > MAX_DIFF_LINES) {
    return html`${verdict}
<p class="muted" id="diff-too-large">These definitions are too large to show side by side (${left.length} and ${right.length} lines, at most ${MAX_DIFF_LINES} each); <code>estate diff ${a.name}@${a.version} ${a.name}@${b.version}</code> prints the verdict, and each version's page shows its definition.</p>
${reasonsList(reasons)}`;
  }
  const rows = diffLines(left, right);
  const placed = placeReasons(rows, reasons);
  return html`${verdict}
<table class="diff">
<caption>Definition of ${a.version} (left) beside ${b.version} (right); reasons sit on the lines they concern.</caption>
<thead><tr><th scope="col">${a.version}</th><th scope="col">${b.version}</th><th scope="col">Reasons</th></tr></thead>
<tbody>${rows.map(
    (row, i) => html`<tr class="${row.kind}">${diffCell('left', row)}${diffCell('right', row)}<td class="why">${(placed.get(i) ?? []).map((r) => html`<p class="reason"><span class="level ${r.level}">${r.level}</span> <code>${visible(cut(r.path, DETAIL_CHARS))}</code> ${r.rule}: ${visible(cut(r.detail, DETAIL_CHARS))}</p>`)}</td></tr>`,
  )}</tbody>
</table>`;
};

export const parsePrincipal = (params: URLSearchParams): Principal | null => {
  if (!params.has('tenant') && !params.has('scopes') && !params.has('clearance')) return null;
  const scopes = (params.get('scopes') ?? '').slice(0, 4000).split(/[\s,]+/).filter((s) => s.length > 0).slice(0, 100);
  return makePrincipal({ tenant: (params.get('tenant') ?? '').trim().slice(0, 200) || 'default', scopes, clearance: params.get('clearance') });
};

const principalForm = (action: string, p: Principal | null): Html => html`<form method="get" action="${action}" class="principal">
<fieldset><legend>Try a principal</legend>
<label>Tenant <input name="tenant" value="${typed(p?.tenant ?? 'default')}"></label>
<label>Scopes <input name="scopes" value="${typed(p?.scopes.join(' ') ?? '')}" placeholder="space separated"></label>
<label>Clearance <select name="clearance">${CLASSIFICATIONS.map((c) => option(c, c, p?.clearance ?? 'public'))}</select></label>
<button type="submit">Try</button></fieldset></form>`;

const discoveryTable = (catalogue: CatalogueProjection, p: Principal): Html => {
  const seen = discoverNaive(catalogue, p);
  return html`<p id="discovers">This principal discovers ${seen.length} ${seen.length === 1 ? 'tool' : 'tools'}.</p>
<ul class="discovered">${seen.slice(0, 200).map((v) => html`<li><a href="${versionHref(v.name, v.version)}">${v.name}@${v.version}</a></li>`)}</ul>${seen.length > 200 ? html`<p>… and ${seen.length - 200} more.</p>` : ''}`;
};

export const versionPage = (catalogue: CatalogueProjection, v: CatalogueVersion, details: VersionDetails, tried: Principal | null, canAct: boolean): Html => {
  const a = v.access;
  const verdict = tried
    ? html`<p id="verdict" class="verdict">${isVisible(a, tried) ? html`<strong>Visible</strong> to this principal${v.status === 'active' ? '' : html` by access, but the version is ${v.status} and is not offered in discovery`}.` : html`<strong>Not visible</strong> to this principal.`}</p>${discoveryTable(catalogue, tried)}`
    : '';
  return html`<h1>${v.name}@${v.version}</h1>
<p><a href="${toolHref(v.name)}">All versions of ${v.name}</a> · <span class="status ${v.status}">${v.status}</span> · <span class="level ${details.level}">${details.level}</span></p>
<p>${details.definition.description}</p>
<h2>Who can see this version</h2>
<ul class="access">
<li>Tenants: ${a.tenants.length === 0 ? 'every tenant' : a.tenants.join(', ')}</li>
<li>Scopes required (all of): ${a.requiredScopes.length === 0 ? 'none' : a.requiredScopes.join(', ')}</li>
<li>Clearance at least: ${a.classification}</li>
</ul>
${principalForm(versionHref(v.name, v.version), tried)}
${verdict}
${canAct ? html`<h2>Lifecycle</h2>${lifecycleForm(v)}<p id="action-result" role="status"></p>` : ''}
<h2>Definition</h2>
<pre class="definition">${jsonVisible(JSON.stringify(details.definition, null, 2))}</pre>`;
};

export const principalPage = (catalogue: CatalogueProjection, tried: Principal | null): Html =>
  html`<h1>What a principal sees</h1>${principalForm('/console/principal', tried)}${tried ? discoveryTable(catalogue, tried) : ''}`;

export const notFoundPage = (what: string): Html => html`<h1>Not found</h1><p class="not-found">${what}</p><p><a href="/console/">Back to the catalogue</a></p>`;
