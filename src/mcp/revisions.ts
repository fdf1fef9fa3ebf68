/**
 * The MCP revisions Estate speaks, how one is chosen, and what each one's Tool looks like.
 */

export const STATELESS_REVISION = '2026-07-28';
/** Stateful revisions, newest first. */
export const STATEFUL_REVISIONS = ['2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05'] as const;
export const SUPPORTED_REVISIONS: readonly string[] = [STATELESS_REVISION, ...STATEFUL_REVISIONS];
export const NEWEST_STATEFUL = STATEFUL_REVISIONS[0];

export const PROTOCOL_VERSION_META = 'io.modelcontextprotocol/protocolVersion';
export const CLIENT_CAPABILITIES_META = 'io.modelcontextprotocol/clientCapabilities';
export const CLIENT_INFO_META = 'io.modelcontextprotocol/clientInfo';
export const SERVER_INFO_META = 'io.modelcontextprotocol/serverInfo';
export const SUBSCRIPTION_ID_META = 'io.modelcontextprotocol/subscriptionId';

/** The MCP rule: a revision we do not speak is answered with the newest one we do (of the stateful family). */
export const negotiate = (requested: unknown): string =>
  typeof requested === 'string' && (STATEFUL_REVISIONS as readonly string[]).includes(requested) ? requested : NEWEST_STATEFUL;

/** Batches exist only in 2025-03-26 (added there, removed in 2025-06-18; 2024-11-05 clients never send them). */
export const allowsBatches = (revision: string | undefined): boolean => revision === '2025-03-26';

export type ToolField = 'name' | 'title' | 'description' | 'inputSchema' | 'outputSchema' | 'annotations' | '_meta';

/**
 * Tool fields per revision. `annotations` arrived in 2025-03-26; `title` and `outputSchema` in 2025-06-18. `_meta` is
 * sent on every revision because it carries `io.estate/version`, the only way an older client can learn which
 * version it may pin (docs/decisions.md, "MCP server").
 */
export const toolFields = (revision: string): readonly ToolField[] => {
  if (revision === '2024-11-05') return ['name', 'description', 'inputSchema', '_meta'];
  if (revision === '2025-03-26') return ['name', 'description', 'inputSchema', 'annotations', '_meta'];
  return ['name', 'title', 'description', 'inputSchema', 'outputSchema', 'annotations', '_meta'];
};

/** Whether structuredContent exists in the revision (outputSchema came with it). */
export const hasStructuredContent = (revision: string): boolean => revision !== '2024-11-05' && revision !== '2025-03-26';
