/** The upstream registry's (registry.ts) words about a target and a drift: how a target is shown, the next pinned
 * version for a drift level, and the text diff a reviewer reads. */
import { createTwoFilesPatch } from 'diff';
import { DomainError } from '#domain/errors';
import type { UpstreamCandidate, UpstreamTarget } from '#domain/events';
import { canonicalJson } from '#domain/hash';
import { parseVersion } from '#domain/semver';
import type { ToolDefinition } from '#domain/types';
import type { DriftData } from '#projections/upstreams';

export const describeTarget = (t: UpstreamTarget): string =>
  t.transport === 'http' ? t.url : [t.command, ...t.args].map((a) => (/^[\w@%+=:,./-]+$/.test(a) ? a : JSON.stringify(a))).join(' ');

export const sameText = (pinned: ToolDefinition, c: UpstreamCandidate): boolean =>
  pinned.title === c.title && pinned.description === c.description && canonicalJson(pinned.annotations ?? null) === canonicalJson(c.annotations ?? null);

export const nextVersion = (pinned: string | undefined, level: DriftData['level']): string => {
  const p = pinned ? parseVersion(pinned) : null;
  if (!p || level === 'initial') return '1.0.0';
  if (level === 'major') return `${p.major + 1}.0.0`;
  if (level === 'minor') return `${p.major}.${p.minor + 1}.0`;
  return `${p.major}.${p.minor}.${p.patch + 1}`;
};

const textOf = (d: { title?: string | undefined; description: string; annotations?: unknown }): string =>
  [`title: ${d.title ?? ''}`, 'description:', d.description, `annotations: ${d.annotations === undefined ? '' : canonicalJson(d.annotations)}`].join('\n') + '\n';

/** A unified line diff of the text a model reads (title, description, annotations); undefined when it did not change. */
export const textDiff = (pinned: ToolDefinition, c: UpstreamCandidate): string | undefined => {
  const a = textOf(pinned);
  const b = textOf(c);
  if (a === b) return undefined;
  const patch = createTwoFilesPatch(`${pinned.name}@${pinned.version}`, `${c.name} (upstream)`, a, b, undefined, undefined, { context: 2 });
  // Drop the "Index"/separator preamble: keep from the first ---.
  return patch.slice(patch.indexOf('---'));
};

/**
 * A reviewer decides on the candidate they were shown: if the upstream changed it again since (a second drift), the
 * decision is refused rather than applied to text nobody read.
 */
export const stillTheCandidate = (tool: string, pending: string, shown: string | undefined): void => {
  if (shown !== undefined && shown !== pending) {
    throw new DomainError('conflict', 'drift-changed', `the pending candidate for ${tool} changed since it was shown (now ${pending.slice(0, 12)}): review the new one`);
  }
};
