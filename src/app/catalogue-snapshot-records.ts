/**
 * How one tool of the catalogue is laid out in a snapshot chunk: `[name, [version record, ...]]`, each record an
 * array (no repeated keys: smaller, and faster to parse than objects). Reading checks every field's type and throws
 * a TypeError naming the first one that is wrong; the snapshot is then treated as corrupt.
 * Any change here bumps LAYOUT in catalogue-snapshot.ts.
 */
import type { LifecycleMark, Reason, ToolDefinition, VersionStatus } from '#domain/types';
import { parseTriple, type CatalogueTool, type CatalogueVersion } from '#projections/catalogue';

type Mark = [reason: string, at: string, by: string] | null;

const markOut = (m: LifecycleMark | undefined): Mark => (m ? [m.reason, m.at, m.by] : null);

export const encodeTool = (tool: CatalogueTool): unknown[] => [
  tool.name,
  tool.versions.map((v) => [
    v.version,
    v.status,
    v.level,
    v.publishedAt,
    v.publishedBy,
    v.position,
    v.schemaHash,
    v.definitionHash,
    v.reasons,
    v.definition,
    markOut(v.deprecated),
    markOut(v.retired),
  ]),
];

const STATUSES: readonly string[] = ['active', 'deprecated', 'retired'];

const fail = (what: string): never => {
  throw new TypeError(`snapshot record: ${what}`);
};

const str = (x: unknown, what: string): string => (typeof x === 'string' ? x : fail(`${what} is not a string`));

const markIn = (x: unknown, what: string): LifecycleMark | undefined => {
  if (x === null) return undefined;
  if (!Array.isArray(x) || x.length !== 3) return fail(`${what} is not a lifecycle mark`);
  return { reason: str(x[0], what), at: str(x[1], what), by: str(x[2], what) };
};

const decodeVersion = (name: string, x: unknown): CatalogueVersion => {
  if (!Array.isArray(x) || x.length !== 12) return fail(`a version of ${name} is not a record`);
  const version = str(x[0], 'version');
  const status = str(x[1], 'status');
  if (!STATUSES.includes(status)) fail(`status '${status.slice(0, 20)}'`);
  const definition = x[9] as ToolDefinition;
  if (typeof definition !== 'object' || definition === null || definition.name !== name || definition.version !== version) {
    fail(`the definition of ${name}@${version} does not match its record`);
  }
  if (typeof definition.access !== 'object' || definition.access === null) fail(`${name}@${version} has no access`);
  if (!Array.isArray(x[8])) fail(`reasons of ${name}@${version}`);
  const deprecated = markIn(x[10], 'deprecated');
  const retired = markIn(x[11], 'retired');
  return {
    name,
    version,
    semver: parseTriple(version),
    definition,
    status: status as VersionStatus,
    schemaHash: str(x[6], 'schemaHash'),
    definitionHash: str(x[7], 'definitionHash'),
    level: str(x[2], 'level'),
    reasons: x[8] as Reason[],
    publishedAt: str(x[3], 'publishedAt'),
    publishedBy: str(x[4], 'publishedBy'),
    position: str(x[5], 'position'),
    ...(deprecated ? { deprecated } : {}),
    ...(retired ? { retired } : {}),
  };
};

export const decodeTool = (x: unknown): CatalogueTool => {
  if (!Array.isArray(x) || x.length !== 2 || !Array.isArray(x[1])) return fail('a tool entry is not [name, versions]');
  const name = str(x[0], 'tool name');
  return { name, versions: (x[1] as unknown[]).map((v) => decodeVersion(name, v)) };
};
