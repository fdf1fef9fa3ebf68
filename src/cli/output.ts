/**
 * Every line the CLI prints, in one place: what a verb prints is a function of the value an adapter returned, so the
 * local and the remote path cannot drift apart. JSON goes to stdout through `printJson`; human lines are returned as
 * strings and printed by the verbs; error lines go to stderr through `errorLine`.
 */
import { DomainError } from '#domain/errors';
import { jsonVisible, visible } from '#domain/visible-text';
import type { Reason } from '#domain/types';
import type { PendingView, SyncResult } from '#upstream/registry';
import type { CallView, HistoryEntry, LifecycleJson, ToolStatus, VerdictJson } from './commands/port.ts';
import type { RunSummary } from '#app/runs-index';

/** JSON on stdout, hidden characters escaped (`jsonVisible`: the same value to a parser, safe on a terminal). */
export const printJson = (value: unknown): void => {
  process.stdout.write(`${jsonVisible(JSON.stringify(value, null, 2))}\n`);
};

/** `estate: error|refused|not found: <message>`: the one stderr line of a failed verb. */
export const errorLine = (e: unknown): string => {
  const prefix = e instanceof DomainError ? `estate: ${e.kind === 'not-found' ? 'not found' : e.kind === 'usage' ? 'error' : 'refused'}` : 'estate: error';
  return `${prefix}: ${visible(e instanceof Error ? e.message : String(e))}`;
};

/** The stderr line of a refused publish/check verdict (exit 2 for `usage`, 3 for `refused`). */
export const refusalLine = (refusal: 'usage' | 'refused', v: VerdictJson, subject?: string): string =>
  visible(`estate: ${refusal === 'usage' ? 'error' : 'refused'}: ${subject ? `${subject}: ` : ''}${v.error?.message ?? 'refused'}`);

export const BY_IGNORED_NOTE = 'estate: note: --by is ignored with --server; the server records the token\'s subject';

export const reasonLines = (reasons: readonly Reason[]): string => reasons.map((r) => `  ${r.level.padEnd(5)} ${r.path}: ${r.rule} — ${r.detail}`).join('\n');
export const reasonsInline = (reasons: readonly Reason[]): string => reasons.map((r) => `${r.level} ${r.rule} at ${r.path}`).join('; ');

const levelFrom = (v: VerdictJson): string => `${v.level}${v.baseline ? ` from ${v.baseline}` : ''}`;

/** publish: one line, then the reasons indented. */
export const publishedLines = (v: VerdictJson): string[] => [
  v.result === 'unchanged'
    ? `unchanged: ${v.name}@${v.version} is already published with this exact content`
    : `published ${v.name}@${v.version} (${levelFrom(v)}) at position ${v.position}`,
  ...(v.reasons.length ? [reasonLines(v.reasons)] : []),
];

/** check: what publish would do, then the reasons indented. */
export const checkedLines = (v: VerdictJson): string[] => [
  v.result === 'unchanged'
    ? `unchanged: ${v.name}@${v.version} is already published with this exact content (publishing it again changes nothing)`
    : `${v.result}: ${v.name}@${v.version} (${levelFrom(v)})`,
  ...(v.reasons.length ? [reasonLines(v.reasons)] : []),
];

/** deprecate / retire, local or through a server's API. */
export const lifecycleLine = (out: LifecycleJson): string =>
  out.result === 'unchanged'
    ? `unchanged ${out.name}@${out.version} (already in that state; nothing appended)`
    : `${out.result} ${out.name}@${out.version} at position ${out.position ?? '?'}`;

/** list / replay: a table with a header, or `(no tools)`. */
export const toolTable = (rows: readonly ToolStatus[]): string[] => {
  if (rows.length === 0) return ['(no tools)'];
  const w = Math.max(4, ...rows.map((r) => r.name.length));
  const vw = Math.max(7, ...rows.map((r) => r.version.length));
  return [
    `${'NAME'.padEnd(w)}  ${'VERSION'.padEnd(vw)}  ${'STATUS'.padEnd(10)}  TITLE`,
    ...rows.map((r) => {
      const note = r.deprecated ? ` (deprecated: ${r.deprecated.reason})` : '';
      return `${r.name.padEnd(w)}  ${r.version.padEnd(vw)}  ${r.status.padEnd(10)}  ${r.title ?? ''}${note}`;
    }),
  ];
};

export const replayHeader = (at: string, position: string | null, eventCount: number): string =>
  `as of ${at} (position ${position ?? 'none'}, ${eventCount} events):`;

export const historyLines = (versions: readonly HistoryEntry[]): string[] =>
  versions.flatMap((v) => {
    const life = v.retiredAt ? ` retired ${v.retiredAt}` : v.deprecatedAt ? ` deprecated ${v.deprecatedAt}` : '';
    const line = `${v.version.padEnd(10)} ${v.status.padEnd(10)} ${v.level.padEnd(7)} published ${v.publishedAt} by ${v.publishedBy}${life}`;
    return v.reasons.length ? [line, `           ${reasonsInline(v.reasons)}`] : [line];
  });

export const diffLines = (level: string, reasons: readonly Reason[]): string[] => [
  `${level}${reasons.length ? '' : ' (no change)'}`,
  ...(reasons.length ? [reasonLines(reasons)] : []),
];

/** calls without a run id: one line per run, newest first, or `(no runs)`. */
export const runLines = (runs: readonly RunSummary[]): string[] =>
  runs.length === 0
    ? ['(no runs)']
    : runs.map((r) => `${r.runId}  ${r.calls} call${r.calls === 1 ? '' : 's'}${r.unfinished ? ` + ${r.unfinished} started without outcome` : ''}  ${r.first} .. ${r.last}  ${r.subject}/${r.tenant || '(none)'}`);

export const runHeader = (runId: string, owner: { subject: string; tenant: string }): string =>
  `run ${runId}  owner ${owner.subject} (tenant ${owner.tenant || '(none)'})`;

export const callLine = (c: CallView): string =>
  c.outcome === 'started'
    ? // The intent is durable, the outcome is not: the tool ran (or may have) without a record of how it ended.
      `${c.at}  ${c.tool}@${c.version}  ${'started'.padEnd(14)} no outcome recorded  args ${c.argsHash.slice(0, 12)}  ${c.subject}/${c.tenant}`
    : `${c.at}  ${c.tool}@${c.version}  ${c.outcome.padEnd(14)} ${String(c.durationMs).padStart(6)} ms  schema ${c.schemaHash.slice(0, 12)}  args ${c.argsHash.slice(0, 12)}${c.repaired ? '  repaired' : ''}  ${c.subject}/${c.tenant}`;

// The upstream verbs (SPEC §7).

export const registeredLine = (ns: string, transport: string, target: string): string => `registered upstream ${ns} (${transport}: ${target}); next: estate upstream sync ${ns}`;

export const upstreamRow = (r: { ns: string; status: string; transport: string; target: string; tools: number; pending: number }): string =>
  `${r.ns}  ${r.status}  ${r.transport}  ${r.target}  tools=${r.tools} pending=${r.pending}`;

export const syncLines = (ns: string, r: SyncResult & { protocolVersion: string | null }): string[] => [
  `${ns}: ${r.listed} tools listed (${r.protocolVersion ?? '?'}); ${r.drift.length} new drift, ${r.refused.length} refused, ${r.vanished.length} vanished${r.autoApproved.length ? `, ${r.autoApproved.length} auto-approved` : ''}`,
  ...r.drift.map((d) => `  drift ${d.tool} ${d.level}${d.reasons.length ? `: ${reasonsInline(d.reasons)}` : ''}`),
  ...r.refused.map((x) => `  refused ${x.upstreamTool} (${x.code}): ${x.message}`),
  ...r.vanished.map((v) => `  vanished ${v}`),
  ...(r.deferred.length
    ? [`  not recorded yet, past what one change window records (a sync from ${r.retryAt ?? '?'} records them): ${r.deferred.slice(0, 10).join(', ')}${r.deferred.length > 10 ? ` and ${r.deferred.length - 10} more` : ''}`]
    : []),
  ...r.autoApproved.map((a) => `  auto-approved ${a.tool}@${a.version}`),
];

export const pendingLines = (pending: readonly PendingView[]): string[] =>
  pending.length === 0
    ? ['(no pending drift)']
    : pending.flatMap((p) => [
        `${p.tool}  ${p.level}${p.pinned ? ` (pinned ${p.pinned})` : ' (never approved)'}  upstream tool '${p.upstreamTool}'`,
        ...p.reasons.map((r) => `  ${r.level.padEnd(5)} ${r.path}: ${r.rule} — ${r.detail}`),
        ...(p.textDiff ? [p.textDiff.replace(/^/gm, '    ')] : []),
        `  approve exactly this: estate upstream approve ${p.tool} --candidate ${p.candidateHash}`,
      ]);

export const approvedLine = (v: VerdictJson): string => `${v.result} ${v.name}@${v.version} (${v.level})${v.reasons.length ? `: ${reasonsInline(v.reasons)}` : ''}`;

export const noPendingLine = (ns: string): string => `${ns}: no pending drift`;
export const rejectedLine = (tool: string): string => `rejected the pending candidate of ${tool}; the pinned version keeps serving`;
export const removedLine = (ns: string, retired: readonly string[]): string => `removed upstream ${ns}; retired ${retired.length ? retired.join(', ') : 'nothing'}`;

/**
 * Print lines on stdout, one console.log each (a multi-line entry stays one write, as before). What they carry may be
 * an upstream's text: characters a terminal acts on or a person cannot see are shown escaped (#domain/visible-text).
 */
export const say = (lines: readonly string[]): void => {
  for (const line of lines) console.log(visible(line));
};
