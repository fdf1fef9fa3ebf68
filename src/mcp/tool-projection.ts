/**
 * A catalogue version as an MCP Tool: only the fields the negotiated revision defines, plus `io.estate/version`.
 * Access fields (scopes, tenants, classification), the handler name and side-effect policy never leave the server.
 */
import { servedAnnotations } from '#domain/tool-definition';
import type { ToolDefinition } from '#domain/types';
import type { CatalogueVersion, VersionDetails } from '#projections/catalogue';
import { toolFields } from './revisions.ts';

export const VERSION_META = 'io.estate/version';
export const DEPRECATED_META = 'io.estate/deprecated';
export const RUN_ID_META = 'io.estate/runId';
/** On a tools/call result whose arguments repair changed: `[{path, action}]` (SPEC §3). */
export const REPAIRS_META = 'io.estate/repairs';
export const INCLUDE_DEPRECATED_META = 'io.estate/includeDeprecated';

export const deprecationNotice = (v: CatalogueVersion): { reason: string; at: string } | undefined =>
  v.deprecated ? { reason: v.deprecated.reason, at: v.deprecated.at } : undefined;

/**
 * A version's Tool for a revision is built once and shared by every listing that shows it, for as long as its details
 * are held (a record's own, or the reader's cache): keyed by the details, so a Tool never outlives them. Records are
 * immutable (a deprecation makes a new one, with the notice in `_meta`), hence the deprecation in the key. Callers must
 * not mutate the returned object.
 */
const projected = new WeakMap<VersionDetails, Map<string, Readonly<Record<string, unknown>>>>();

export const toMcpTool = (v: CatalogueVersion, details: VersionDetails, revision: string): Readonly<Record<string, unknown>> => {
  let byRevision = projected.get(details);
  if (!byRevision) projected.set(details, (byRevision = new Map()));
  const key = v.deprecated ? `${revision}|deprecated` : revision;
  let tool = byRevision.get(key);
  if (!tool) byRevision.set(key, (tool = project(v, details.definition, revision)));
  return tool;
};

const project = (v: CatalogueVersion, def: ToolDefinition, revision: string): Record<string, unknown> => {
  const tool: Record<string, unknown> = {};
  for (const field of toolFields(revision)) {
    switch (field) {
      case 'name':
        tool.name = def.name;
        break;
      case 'title':
        if (def.title !== undefined) tool.title = def.title;
        break;
      case 'description':
        tool.description = def.description;
        break;
      case 'inputSchema':
        tool.inputSchema = def.inputSchema;
        break;
      case 'outputSchema':
        if (def.outputSchema !== undefined) tool.outputSchema = def.outputSchema;
        break;
      case 'annotations':
        tool.annotations = servedAnnotations(def);
        break;
      case '_meta': {
        const notice = deprecationNotice(v);
        tool._meta = { [VERSION_META]: v.version, ...(notice ? { [DEPRECATED_META]: notice } : {}) };
        break;
      }
    }
  }
  return tool;
};
