/**
 * The `CatalogueCommands` port: what the catalogue verbs ask of a catalogue, whether it is a store opened in this
 * process (./local.ts) or a server's publishing API (./http.ts). Adapters return SPEC §5's JSON shapes as values and
 * never print: the verbs (../verbs/) turn the values into lines and exit codes, so both adapters print alike.
 *
 * The publishing API serves only the write verbs, so the HTTP adapter implements `CatalogueWrites`; the read verbs
 * (list, show, history, diff, calls, replay) and `publish --module` need the store and take the local adapter.
 */
import { definitionErrorJson } from '#app/results-json';
import type { DomainError } from '#domain/errors';
import type { Principal, Reason } from '#domain/types';
import type { OwnedRun } from '#app/runs';
import type { RunFilter, RunSummary } from '#app/runs-index';

/** A definition as read from a file: parsed, not yet validated (the local adapter validates, the server does). */
export interface DefinitionSource {
  file: string;
  raw: unknown;
}

/** publish / check: `{result, name, version, level, reasons, baseline?, position?, error?}` (SPEC §5). */
export interface VerdictJson {
  result: string;
  name: string | null;
  version: string | null;
  level: string | null;
  reasons: readonly Reason[];
  baseline?: string;
  position?: string;
  error?: { code: string; message: string };
}

export interface VerdictOutcome {
  json: VerdictJson;
  /** Set when the definition or the guard refused: `usage` ends with exit 2, `refused` with exit 3. */
  refusal?: 'usage' | 'refused';
}

/** deprecate / retire: the command handler's outcome, as the API answers it too. */
export interface LifecycleJson {
  result: string;
  name: string;
  version: string;
  position?: string;
}

export interface VersionRef {
  name: string;
  version: string;
}

/** One row of list / replay. */
export interface ToolStatus {
  name: string;
  version: string;
  title: string | null;
  status: string;
  deprecated?: { reason: string; at: string };
}

export interface HistoryEntry {
  version: string;
  status: string;
  level: string;
  reasons: readonly Reason[];
  publishedAt: string;
  publishedBy: string;
  deprecatedAt?: string;
  deprecatedReason?: string;
  retiredAt?: string;
  retiredReason?: string;
}

export type { CallView, OwnedRun } from '#app/runs';

export interface CatalogueWrites {
  publish(source: DefinitionSource): Promise<VerdictOutcome>;
  /** What the guard would decide; `result` is `would-publish` where publish would say `published`. */
  check(source: DefinitionSource): Promise<VerdictOutcome>;
  deprecate(ref: VersionRef, reason: string): Promise<LifecycleJson>;
  retire(ref: VersionRef, reason: string): Promise<LifecycleJson>;
  close(): Promise<void>;
}

export interface CatalogueCommands extends CatalogueWrites {
  /** Every tool of an ES module defined with zod: all validated first, then published one by one as iterated. */
  publishModule(module: string): AsyncIterable<VerdictJson>;
  /** With a principal, what it discovers; without, every tool's latest active (or deprecated) version. */
  list(filter: { principal?: Principal; includeDeprecated: boolean }): Promise<ToolStatus[]>;
  /** One version's definition with its status and hashes; no version: the latest active one. */
  show(ref: { name: string; version?: string }): Promise<Record<string, unknown>>;
  history(name: string): Promise<HistoryEntry[]>;
  /** Each side a definition file, else `name@version` of a published version (read in that order, a then b). */
  diff(a: string, b: string): Promise<{ level: string; reasons: readonly Reason[] }>;
  runs(filter: RunFilter): Promise<RunSummary[]>;
  calls(runId: string): Promise<OwnedRun[]>;
  replay(at: string, includeDeprecated: boolean): Promise<{ tools: ToolStatus[]; position: string | null; eventCount: number }>;
}

/** The server refused at its edge (token, scope, size...) or could not be reached: reported as is, exit 1. */
export class RemoteRefusal extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** A definition that could not be read, parsed or validated: the publish/check shape, carrying the error. */
export const definitionRefusal = (e: DomainError, raw?: unknown): VerdictOutcome => ({
  json: definitionErrorJson(e, raw),
  refusal: e.kind === 'usage' ? 'usage' : 'refused',
});
