/** The run log's pages: recent runs, and one run's calls each linked to the exact version it ran (src/app/runs.ts). */
import type { CallView, OwnedRun } from '#app/runs';
import type { RunsListing } from '#app/runs-index';
import { html, seg, type Html } from './html.ts';
import { versionHref } from './pages.ts';

const fmt = new Intl.NumberFormat('en-US');

export const runsPage = ({ runs, reading }: RunsListing): Html =>
  html`<h1>Recent runs</h1>${reading ? html`<p class="muted" role="status">Reading the call log: ${fmt.format(reading.events)} call records so far. Reload in a moment.</p>` : runs.length === 0 ? html`<p>No calls are recorded yet.</p>` : html`<table><caption>The ${runs.length} most recent runs, newest last call first.</caption><thead><tr><th scope="col">Run</th><th scope="col">Calls</th><th scope="col">Unfinished</th><th scope="col">First call</th><th scope="col">Last call</th><th scope="col">Subject</th><th scope="col">Tenant</th><th scope="col">Tools</th></tr></thead><tbody>${runs.map(
    (r) => html`<tr><td><a href="/console/runs/${seg(r.runId)}">${r.runId}</a></td><td>${r.calls}</td><td>${r.unfinished}</td><td>${r.first}</td><td>${r.last}</td><td>${r.subject}</td><td>${r.tenant}</td><td>${r.tools.join(', ')}${r.moreTools ? ', and more' : ''}</td></tr>`,
  )}</tbody></table>`}`;

const callRow = (c: CallView): Html =>
  c.outcome === 'started'
    ? html`<tr><td>${c.at}</td><td><a href="${versionHref(c.tool, c.version)}">${c.tool}@${c.version}</a></td><td class="muted">not recorded</td><td>started, no outcome on record</td><td class="muted">not recorded</td><td class="muted">not recorded</td></tr>`
    : html`<tr><td>${c.at}</td><td><a href="${versionHref(c.tool, c.version)}">${c.tool}@${c.version}</a></td><td><code>${c.schemaHash.slice(0, 12)}</code></td><td>${c.outcome}</td><td>${c.repairs.length === 0 ? 'none' : c.repairs.map((r) => `${r.action} ${r.path}`).join(', ')}</td><td>${c.durationMs} ms</td></tr>`;

/** What a run's section says when it shows only its newest calls. */
const earlierNote = (runId: string, r: OwnedRun): Html | string =>
  r.earlier === 0 ? '' : html`<p class="muted">The newest ${r.calls.length} calls are shown; ${r.earlier} earlier ones are not. <code>estate calls ${runId}</code> lists every one.</p>`;

export const runPage = (runId: string, runs: readonly OwnedRun[]): Html =>
  html`<h1>Run ${runId}</h1>${runs.map(
    (r) => html`<section class="run"><h2>Calls by ${r.owner.subject} (tenant ${r.owner.tenant})</h2>${earlierNote(runId, r)}<table class="calls"><thead><tr><th scope="col">At</th><th scope="col">Tool version</th><th scope="col">Schema hash</th><th scope="col">Outcome</th><th scope="col">Repairs</th><th scope="col">Duration</th></tr></thead><tbody>${r.calls.map(callRow)}</tbody></table></section>`,
  )}`;
