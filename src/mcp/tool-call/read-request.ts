/**
 * Step 0 of tools/call: read what the request says before anything is resolved. Every malformed part is a protocol
 * error (-32602) whatever the tool, so nothing about the catalogue is consulted until the request itself is sound.
 */
import { isRunId } from '#domain/events';
import { invalidParams, unknownTool } from '../error-map.ts';
import { parseInputResponses } from '../input-required.ts';
import { isPlainObject } from '../jsonrpc.ts';
import { RUN_ID_META, VERSION_META } from '../tool-projection.ts';
import type { ToolCallRequest } from './types.ts';

export interface CallParams {
  name: string;
  meta: Record<string, unknown>;
  /** `_meta["io.estate/version"]`. */
  pinned?: string;
  runId: string;
  /** The arguments as sent (`{}` when absent): what is hashed, validated and repaired. */
  received: unknown;
  /** A stateless 2026-07-28 call's input round: answers sent, the state of earlier rounds, declared capabilities. */
  input?: { responses: Record<string, Record<string, unknown>>; state?: string; capabilities: Record<string, unknown> };
}

/** What was wrong with a run id, in a bounded message (the id itself may be 900 KB). */
const describeRunId = (v: unknown): string => {
  const rule = `1 to 128 characters of A-Z a-z 0-9 . _ : -, starting with a letter or digit`;
  if (typeof v !== 'string') return `must be a string (${rule})`;
  const shown = JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}...` : v);
  return `${shown}${v.length > 128 ? ` (${v.length} characters)` : ''} is not ${rule}`;
};

export const readCallParams = (req: ToolCallRequest): CallParams => {
  const { params } = req;
  if (typeof params.name !== 'string') throw invalidParams('Invalid params: name must be a string');
  const name = params.name;
  const meta = isPlainObject(params._meta) ? params._meta : {};
  const pinned = meta[VERSION_META];
  if (pinned !== undefined && typeof pinned !== 'string') throw unknownTool(name);
  // Malformed input answers are a protocol error whatever the tool: checked before anything else runs.
  const responses = req.inputRequired ? parseInputResponses(params.inputResponses) : {};
  const state = req.inputRequired ? params.requestState : undefined;
  if (state !== undefined && typeof state !== 'string') throw invalidParams('Invalid params: requestState must be a string');
  const runIdMeta = meta[RUN_ID_META];
  if (runIdMeta !== undefined && !isRunId(runIdMeta)) throw invalidParams(`Invalid run id: ${describeRunId(runIdMeta)}`);
  return {
    name,
    meta,
    ...(pinned !== undefined ? { pinned } : {}),
    runId: runIdMeta ?? req.defaultRunId,
    received: params.arguments === undefined ? {} : params.arguments,
    ...(req.inputRequired ? { input: { responses, ...(state !== undefined ? { state } : {}), capabilities: req.inputRequired.capabilities } } : {}),
  };
};
