/**
 * The client a call record names (`ToolCalled.client`): `clientInfo`'s name and version, from a session's initialize
 * or a 2026-07-28 request's `_meta`. Bounded: a 2025 session's clientInfo is copied into the record of every call the
 * session makes, so one initialize with a 1 MiB name made every tiny call after it a 1 MiB record (kept forever, and
 * read back a thousand at a time by a run's page and `estate calls`). Past the bound the request is refused, naming
 * the field; nothing is cut, so a record never names a client that did not exist.
 */
import { invalidParams, type McpError } from './error-map.ts';
import { isPlainObject } from './jsonrpc.ts';

/** The most characters of a client's name, and of its version, a call record holds. */
export const MAX_CLIENT_INFO_CHARS = 256;

export interface ClientInfo {
  name: string;
  version: string;
}

/** The refusal of a clientInfo whose name or version is too long (`where`: how the request spells the object); else null. */
export const clientInfoRefusal = (info: unknown, where: string): McpError | null => {
  if (!isPlainObject(info)) return null;
  for (const field of ['name', 'version'] as const) {
    const value = info[field];
    if (typeof value === 'string' && value.length > MAX_CLIENT_INFO_CHARS) {
      return invalidParams(`Invalid params: ${where}.${field} is ${value.length} characters long; at most ${MAX_CLIENT_INFO_CHARS}`);
    }
  }
  return null;
};

/** The client a clientInfo names (null without a string name); check it with clientInfoRefusal first. */
export const clientOfInfo = (info: unknown): ClientInfo | null =>
  isPlainObject(info) && typeof info.name === 'string' ? { name: info.name, version: typeof info.version === 'string' ? info.version : '' } : null;
