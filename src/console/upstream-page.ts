/** The upstreams page: each registered upstream with its status, and its pending drift with the text diff to review. */
import { visible } from '#domain/visible-text';
import { html, seg, type Html } from './html.ts';
import { reasonsList, versionHref } from './pages.ts';
import type { UpstreamDriftView, UpstreamRefusalView, UpstreamView } from './upstreams.ts';

/** A unified diff, each line marked as removed, added or context (the text is escaped like any other). */
const diffText = (diff: string): Html =>
  html`<pre class="text-diff">${diff.split('\n').map((line) => {
    const cls = line.startsWith('+') && !line.startsWith('+++') ? 'ins' : line.startsWith('-') && !line.startsWith('---') ? 'del' : 'ctx';
    // What a terminal or a reader would not see (tag characters, bidirectional overrides, escapes) is shown escaped.
    return html`<span class="${cls}">${visible(line)}</span>`; // one block per line (console.css): no newline between them
  })}</pre>`;

const driftForm = (u: UpstreamView, d: UpstreamDriftView): Html =>
  html`<form class="lifecycle" method="post" action="/console/api/upstreams/${seg(u.ns)}/drift/${seg(d.tool)}" data-action>
<input type="hidden" name="candidateHash" value="${d.candidateHash}">
<label>Reason (required to reject) <input name="reason" maxlength="500"></label>
<button type="submit" name="action" value="approve">Approve ${d.tool}</button>
<button type="submit" name="action" value="reject">Reject ${d.tool}</button>
</form>`;

const drift = (u: UpstreamView, d: UpstreamDriftView, canAct: boolean): Html =>
  html`<article class="drift"><h3>${d.tool} <span class="level ${d.level}">${d.level}</span></h3>
<p>Upstream tool <code>${visible(d.upstreamTool)}</code>, detected at <time datetime="${d.at}">${d.at}</time>; ${d.pinned ? html`clients see <a href="${versionHref(d.tool, d.pinned)}">${d.tool}@${d.pinned}</a> until a person approves` : 'never approved: clients see nothing of it yet'}.</p>
${d.newerWaiting ? html`<p class="newer-waiting"><strong>The upstream has changed this tool again since.</strong> That change is recorded after <time datetime="${d.newerWaiting}">${d.newerWaiting}</time> (an upstream's changes are recorded at a bounded pace); approving now publishes what is shown here.</p>` : d.nextRecordedAfter ? html`<p class="newer-waiting">This tool's recent changes are all undecided, so a change the upstream makes to it now is recorded no sooner than <time datetime="${d.nextRecordedAfter}">${d.nextRecordedAfter}</time> (an upstream's changes are recorded at a bounded pace); approving or rejecting this one lets the next through at once.</p>` : ''}
${reasonsList(d.reasons)}
${d.textDiff ? diffText(d.textDiff) : html`<p class="muted">No change to the title, description or annotations.</p>`}
${canAct ? driftForm(u, d) : ''}</article>`;

/** What the definition rules refused at this server's last sync: shown so a person can see why a tool never appears. */
const refusedList = (r: { shown: readonly UpstreamRefusalView[]; total: number }): Html =>
  html`<details class="refused"><summary>${r.total} ${r.total === 1 ? 'tool' : 'tools'} refused by the definition rules at this server's last sync: never offered to clients</summary>
<ul>${r.shown.map((x) => html`<li><code>${visible(x.upstreamTool)}</code> (as ${x.tool}): <span class="code">${x.code}</span>: ${visible(x.message)}</li>`)}</ul>
${r.total > r.shown.length ? html`<p class="muted">and ${r.total - r.shown.length} more (<code>estate upstream sync</code> lists them all).</p>` : ''}</details>`;

export const upstreamsPage = (upstreams: readonly UpstreamView[], canActOn: (tool: string) => boolean): Html =>
  html`<h1>Upstreams</h1>${upstreams.length === 0 ? html`<p id="no-upstreams">No upstream MCP servers are registered.</p>` : upstreams.map(
    (u) => html`<section class="upstream"><h2>${u.ns} <span class="status ${u.status}">${u.status}</span></h2>
<ul class="facts"><li>Connection from this server: <strong class="link">${u.link}</strong></li><li>${u.transport}: <code>${u.target}</code></li><li>${u.tools} approved ${u.tools === 1 ? 'tool' : 'tools'}; ${u.pending.length} pending</li></ul>
${u.refused ? refusedList(u.refused) : ''}
${u.pending.length === 0 ? html`<p>No pending drift.</p>` : u.pending.map((d) => drift(u, d, canActOn(d.tool)))}
<p class="action-result" role="status"></p></section>`,
  )}`;
