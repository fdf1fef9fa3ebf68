/**
 * The change topic's bytes (SPEC §4): one JSON object per catalogue event, keyed by tool name. The message's shape is
 * declared once, beside the events it announces (`catalogueChangeSchema` in src/domain/events.ts); this file only
 * turns it into bytes and back. Messages read back are checked with that schema: the topic is shared with other
 * producers and other Estate versions, so a malformed message is reported and skipped by the caller, never trusted and
 * never allowed to crash a replica.
 */
import { catalogueChangeSchema, type CatalogueChange } from '#domain/events';
import { firstIssue } from '#domain/zod-issues';

/** Exactly the SPEC's field order, so the bytes on the topic read like the SPEC's example. */
export const encodeChange = (c: CatalogueChange): string =>
  JSON.stringify({ type: c.type, position: c.position, tool: c.tool, version: c.version, event: c.event, at: c.at });

export type DecodedMessage = { ok: true; change: CatalogueChange } | { ok: false; reason: string };

/**
 * A change message is ~200 bytes; one past this is refused before it is parsed (the topic may carry a megabyte in a
 * message, and each would be parsed and held).
 */
export const MAX_CHANGE_MESSAGE_BYTES = 4096;

export const decodeChange = (value: Buffer | string | null): DecodedMessage => {
  if (value === null) return { ok: false, reason: 'empty message' };
  const bytes = typeof value === 'string' ? Buffer.byteLength(value) : value.length;
  if (bytes > MAX_CHANGE_MESSAGE_BYTES) return { ok: false, reason: `${bytes} bytes, more than a change message's ${MAX_CHANGE_MESSAGE_BYTES}` };
  let json: unknown;
  try {
    json = JSON.parse(typeof value === 'string' ? value : value.toString('utf8'));
  } catch {
    return { ok: false, reason: 'not JSON' };
  }
  const r = catalogueChangeSchema.safeParse(json);
  if (!r.success) {
    return { ok: false, reason: firstIssue(r.error) };
  }
  return { ok: true, change: r.data };
};

/** A malformed message as the log names it: where it was read, and why it was refused. */
export interface MalformedMessage {
  partition?: number;
  offset?: string;
  key?: string;
  reason: string;
}

/** How many of a batch's malformed messages the log line names (it counts them all). */
const MALFORMED_NAMED = 5;

/**
 * One warning for a batch's malformed messages, not one per message: a line each was a line per message whoever
 * writes to the topic cared to send (100,000 malformed messages, 100,000 lines, and another client's tools/list went
 * from ~7 ms to 0.75–2.1 s while they were written).
 */
export const warnMalformed = (log: { warn(obj: object, msg?: string): void }, topic: string | undefined, skipped: readonly MalformedMessage[]): void => {
  if (skipped.length === 0) return;
  log.warn({ ...(topic !== undefined ? { topic } : {}), count: skipped.length, first: skipped.slice(0, MALFORMED_NAMED) }, 'change topic: malformed messages skipped');
};
