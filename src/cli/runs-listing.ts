/** `estate calls` flags for the run listing (src/app/runs.ts), checked with errors that name the flag. */
import { DomainError } from '#domain/errors';
import type { RunFilter } from '#app/runs-index';

export const parseRunFilter = (f: { since?: string; tool?: string; limit?: string }): RunFilter => {
  const out: RunFilter = {};
  if (f.since !== undefined) {
    const t = Date.parse(f.since);
    if (!/^\d{4}-\d{2}-\d{2}/.test(f.since) || Number.isNaN(t)) throw new DomainError('usage', 'bad-since', `--since ${JSON.stringify(f.since.slice(0, 40))} is not an ISO-8601 time (e.g. 2026-11-30T12:00:00Z)`);
    out.since = new Date(t).toISOString();
  }
  if (f.tool !== undefined) out.tool = f.tool;
  if (f.limit !== undefined) {
    if (!/^\d{1,6}$/.test(f.limit) || Number(f.limit) < 1) throw new DomainError('usage', 'bad-limit', `--limit ${JSON.stringify(f.limit.slice(0, 40))} is not a whole number from 1 to 999999`);
    out.limit = Number(f.limit);
  }
  return out;
};
