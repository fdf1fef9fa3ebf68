/**
 * The publish guard and the lifecycle as a decider (Emmett style): decide(command, state) -> verdict with events,
 * evolve(state, event) -> state. Synchronous, no I/O: time, the actor and hashes come in with the command.
 */
import { classifyDefinition } from './classify.ts';
import { DomainError } from './errors.ts';
import type { CatalogueEvent, ToolVersionPublished } from './events.ts';
import { compareVersions, parseVersion, type Version } from './semver.ts';
import type { Classified, LifecycleMark, Reason, ToolDefinition, VersionStatus } from './types.ts';

export interface ToolVersionState {
  definition: ToolDefinition;
  definitionHash: string;
  status: VersionStatus;
  deprecated?: LifecycleMark;
  retired?: LifecycleMark;
}

/** The state of one tool stream: all that the guard needs. */
export interface ToolState {
  name: string;
  /** Keyed by version text. */
  versions: Map<string, ToolVersionState>;
}

export const initialToolState = (name: string): ToolState => ({ name, versions: new Map() });

export const evolve = (state: ToolState, event: CatalogueEvent): ToolState => {
  const versions = new Map(state.versions);
  switch (event.type) {
    case 'ToolVersionPublished': {
      const { definition, definitionHash } = event.data;
      versions.set(definition.version, { definition, definitionHash, status: 'active' });
      break;
    }
    case 'ToolVersionDeprecated': {
      const v = versions.get(event.data.version);
      if (v) versions.set(event.data.version, { ...v, status: 'deprecated', deprecated: markOf(event.data) });
      break;
    }
    case 'ToolVersionRetired': {
      const v = versions.get(event.data.version);
      if (v) versions.set(event.data.version, { ...v, status: 'retired', retired: markOf(event.data) });
      break;
    }
  }
  return { name: state.name, versions };
};

const markOf = (d: { reason: string; at: string; by: string }): LifecycleMark => ({ reason: d.reason, at: d.at, by: d.by });

/**
 * The baseline a new version is judged against: the newest active version; if none is active, the newest deprecated
 * one; if none, the newest retired one.
 */
export const baselineOf = (state: ToolState): ToolVersionState | undefined => {
  for (const status of ['active', 'deprecated', 'retired'] as const) {
    let best: ToolVersionState | undefined;
    for (const v of state.versions.values()) {
      if (v.status === status && (!best || compareVersions(v.definition.version, best.definition.version) > 0)) best = v;
    }
    if (best) return best;
  }
  return undefined;
};

// ───────────────────────────── commands ─────────────────────────────

export interface PublishCommand {
  type: 'Publish';
  definition: ToolDefinition;
  definitionHash: string;
  schemaHash: string;
  by: string;
  at: string;
}

/**
 * The longest lifecycle reason (deprecate, retire; an upstream drift's rejection) taken from a remote caller: the console's
 * actions and the publishing API. A reason is recorded in its event and shown on every page of the tool.
 */
export const MAX_REASON_CHARS = 500;

export interface LifecycleCommand {
  type: 'Deprecate' | 'Retire';
  name: string;
  version: string;
  reason: string;
  by: string;
  at: string;
}

export type CatalogueCommand = PublishCommand | LifecycleCommand;

export interface PublishVerdict {
  result: 'published' | 'unchanged' | 'refused';
  name: string;
  version: string;
  level: Classified['level'] | 'initial';
  reasons: Reason[];
  baseline?: string;
  events: CatalogueEvent[];
  error?: DomainError;
}

/** The smallest version the verdict allows, for a helpful message. */
const requiredBump = (level: Classified['level'], base: Version): string => {
  if (level === 'major') return `${base.major + 1}.0.0`;
  if (level === 'minor') return `${base.major}.${base.minor + 1}.0`;
  return `${base.major}.${base.minor}.${base.patch + 1}`;
};

const summarise = (reasons: Reason[]): string =>
  reasons.length === 0 ? 'no change' : reasons.map((r) => `${r.level} ${r.rule} at ${r.path}`).join('; ');

/** Whether `next` is a legal version for a change of `level` against `base` (SPEC §2 "Publish guard", rule 3). */
export const bumpAllowed = (level: Classified['level'], base: Version, next: Version): boolean => {
  if (next.major > base.major + 1) return false; // skipping a major never is
  if (level === 'major') return next.major === base.major + 1;
  if (level === 'minor') return next.major === base.major + 1 || (next.major === base.major && next.minor > base.minor);
  return compareVersions(next.text, base.text) > 0;
};

/**
 * `classified`: the classification of this definition against `baselineOf(state)`, when the caller made it elsewhere
 * (the publishing API classifies in a worker under a time budget: a costly pair of schemas must not stall the server).
 * Absent: classified here.
 */
export const decidePublish = (cmd: PublishCommand, state: ToolState, classified?: Classified): PublishVerdict => {
  const def = cmd.definition;
  const head = { name: def.name, version: def.version };
  const existing = state.versions.get(def.version);
  if (existing) {
    if (existing.definitionHash === cmd.definitionHash) {
      return { ...head, result: 'unchanged', level: 'patch', reasons: [], events: [] };
    }
    return refuse(head, 'patch', [], undefined, 'immutable', `immutability: ${def.name}@${def.version} is already published with different content; publish a new version`);
  }
  const base = baselineOf(state);
  if (!base) {
    return { ...head, result: 'published', level: 'initial', reasons: [], events: [published(cmd, 'initial', [], undefined)] };
  }
  const { level, reasons } = classified ?? classifyDefinition(base.definition, def);
  const baseVersion = base.definition.version;
  const b = parseVersion(baseVersion);
  const n = parseVersion(def.version);
  if (!b || !n) throw new Error(`unparseable version in state: ${baseVersion} / ${def.version}`);
  if (compareVersions(def.version, baseVersion) <= 0) {
    return refuse(head, level, reasons, baseVersion, 'not-monotonic', `monotonicity: ${def.version} is not greater than the baseline ${baseVersion} (${base.status})`);
  }
  if (!bumpAllowed(level, b, n)) {
    const skipped = n.major > b.major + 1;
    const message = skipped
      ? `bump: ${def.version} skips a major version after ${baseVersion}; the next major is ${b.major + 1}.0.0`
      : `bump: a ${level} change from ${baseVersion} needs at least ${requiredBump(level, b)}${level === 'major' ? ` (major ${b.major + 1})` : ''}, got ${def.version}: ${summarise(reasons)}`;
    return refuse(head, level, reasons, baseVersion, skipped ? 'major-skipped' : 'bump-too-small', message);
  }
  return { ...head, result: 'published', level, reasons, baseline: baseVersion, events: [published(cmd, level, reasons, baseVersion)] };
};

const refuse = (
  head: { name: string; version: string },
  level: PublishVerdict['level'],
  reasons: Reason[],
  baseline: string | undefined,
  code: string,
  message: string,
): PublishVerdict => ({
  ...head,
  result: 'refused',
  level,
  reasons,
  ...(baseline !== undefined ? { baseline } : {}),
  events: [],
  error: new DomainError('guard', code, message, reasons),
});

const published = (cmd: PublishCommand, level: PublishVerdict['level'], reasons: Reason[], baseline: string | undefined): ToolVersionPublished => ({
  type: 'ToolVersionPublished',
  data: {
    definition: cmd.definition,
    schemaHash: cmd.schemaHash,
    definitionHash: cmd.definitionHash,
    level,
    reasons,
    ...(baseline !== undefined ? { baseline } : {}),
    by: cmd.by,
    at: cmd.at,
  },
});

/**
 * active → deprecated → retired, or active → retired. Never back (deprecating a retired version is refused). Asking for
 * the state a version already has (deprecate a deprecated one, retire a retired one) decides NO events: the caller
 * answers `unchanged`, so a retried pipeline step is safe (SPEC §2 Lifecycle). Throws DomainError.
 */
export const decideLifecycle = (cmd: LifecycleCommand, state: ToolState): CatalogueEvent[] => {
  const ref = `${cmd.name}@${cmd.version}`;
  if (state.versions.size === 0) throw new DomainError('not-found', 'unknown-tool', `unknown tool '${cmd.name}'`);
  const v = state.versions.get(cmd.version);
  if (!v) throw new DomainError('not-found', 'unknown-version', `unknown version ${ref}`);
  if (!cmd.reason.trim()) throw new DomainError('usage', 'reason-required', `${cmd.type.toLowerCase()} ${ref}: --reason is required`);
  const data = { name: cmd.name, version: cmd.version, reason: cmd.reason, by: cmd.by, at: cmd.at };
  if (cmd.type === 'Deprecate') {
    if (v.status === 'deprecated') return [];
    if (v.status === 'retired') throw new DomainError('lifecycle', 'already-retired', `lifecycle: ${ref} is retired; a retired version cannot be deprecated`);
    return [{ type: 'ToolVersionDeprecated', data }];
  }
  if (v.status === 'retired') return [];
  return [{ type: 'ToolVersionRetired', data }];
};
