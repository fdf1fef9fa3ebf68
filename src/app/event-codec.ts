/**
 * Where an event leaves the store: the ONE place the schemas of `src/domain/events.ts` are applied to stored data.
 * A store shared by several versions of Estate (or written by hand) must not crash a replica with a malformed row, so
 * every stored event is checked before any projection sees it — once: a reader decodes each event as it reads it and
 * hands the typed event on (to a projection, the guard, or the relay's change message), never the raw row.
 */
import type { z } from 'zod';
import {
  CATALOGUE_EVENT_TYPES,
  EVENT_DATA,
  isEventType,
  UPSTREAM_EVENT_TYPES,
  type CatalogueEvent,
  type EstateEvent,
  type ToolCallStarted,
  type ToolCalled,
  type UpstreamEvent,
} from '#domain/events';
import { firstIssue } from '#domain/zod-issues';
import type { StoredEvent } from './ports.ts';

export class CorruptEventError extends Error {
  constructor(stored: StoredEvent, detail: string) {
    super(`event at ${stored.position} (${stored.streamId}@${stored.revision}, ${stored.type}) is malformed: ${detail}`);
    this.name = 'CorruptEventError';
  }
}

/**
 * Decode any stored event Estate declares; null for a type it does not (the relay's lease, another program's events).
 * Throws `CorruptEventError` naming the event and the first field that is wrong.
 */
export const decodeEvent = (stored: StoredEvent): EstateEvent | null => {
  if (!isEventType(stored.type)) return null;
  const r = (EVENT_DATA[stored.type] as z.ZodType).safeParse(stored.data);
  if (!r.success) throw new CorruptEventError(stored, firstIssue(r.error));
  // The schema table is keyed by type, so the data parsed is exactly the payload of `stored.type`.
  return { type: stored.type, data: r.data } as EstateEvent;
};

/** The type is looked at first: an event of another family is passed over unparsed (and never judged corrupt here). */
const decodeFamily =
  <E extends EstateEvent>(types: readonly E['type'][]) =>
  (stored: StoredEvent): E | null =>
    (types as readonly string[]).includes(stored.type) ? (decodeEvent(stored) as E) : null;

/** A stored catalogue event; null for any other type. */
export const decodeCatalogueEvent = decodeFamily<CatalogueEvent>(CATALOGUE_EVENT_TYPES);

/** A stored upstream event; null for any other type. */
export const decodeUpstreamEvent = decodeFamily<UpstreamEvent>(UPSTREAM_EVENT_TYPES);

const decodeAs =
  <E extends EstateEvent>(type: E['type']) =>
  (stored: StoredEvent): E => {
    // The caller picked the event by its type; another type here is a row under the wrong name, i.e. corrupt.
    if (stored.type !== type) throw new CorruptEventError(stored, `expected a ${type}`);
    return decodeEvent(stored) as E;
  };

export const decodeToolCalled = decodeAs<ToolCalled>('ToolCalled');
export const decodeToolCallStarted = decodeAs<ToolCallStarted>('ToolCallStarted');
