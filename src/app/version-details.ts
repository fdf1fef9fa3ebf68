/**
 * A version's details (definition, hashes, reasons) when its record does not hold them: read from its publishing
 * event (the tool's stream at the record's revision), decoded like every stored event, checked against the record,
 * and kept in a bounded cache, most recently used last. Concurrent asks for one version share one read.
 */
import { toolStream, type ToolVersionPublished } from '#domain/events';
import type { CatalogueVersion, VersionDetails } from '#projections/catalogue';
import { decodeCatalogueEvent } from './event-codec.ts';
import type { EventStore } from './ports.ts';

/** Versions whose details stay cached: two tools/list pages (500 each) and the versions calls keep using. */
export const DEFAULT_DETAILS_CACHE = 1024;

export class MissingDetailsError extends Error {
  constructor(v: CatalogueVersion, why: string) {
    super(`the details of ${v.name}@${v.version} cannot be read from the store: ${why}`);
    this.name = 'MissingDetailsError';
  }
}

export interface DetailsSource {
  /** The version's details: its own when the record holds them, else cached, else read now. */
  of(v: CatalogueVersion): Promise<VersionDetails>;
  /**
   * Several at once, in order (a listing page). What is read for them is cached only while the cache has room: a
   * client walking every page of a large catalogue must not push out what calls use, nor turn the whole catalogue
   * into long-lived garbage one evicted page at a time.
   */
  ofMany(vs: readonly CatalogueVersion[]): Promise<VersionDetails[]>;
  /**
   * Keep the details of a version just published, taken from the event the reader has just applied: the schema
   * warm-up and the version's first calls then read nothing from the store. Nothing when the record holds its own.
   */
  prime(v: CatalogueVersion, details: VersionDetails): void;
  /** Versions whose details are cached (not counting those records hold). */
  readonly cached: number;
}

const keyOf = (v: CatalogueVersion): string => `${v.name}@${v.version}`;

/** The details a publishing event carries. */
export const detailsOfPublished = (d: ToolVersionPublished['data'], position: string): VersionDetails => ({
  definition: d.definition,
  schemaHash: d.schemaHash,
  definitionHash: d.definitionHash,
  level: d.level,
  reasons: d.reasons,
  publishedAt: d.at,
  publishedBy: d.by,
  position,
});

export function createDetailsSource(store: EventStore, capacity = DEFAULT_DETAILS_CACHE): DetailsSource {
  const cache = new Map<string, VersionDetails>();
  const reading = new Map<string, Promise<VersionDetails>>();

  const read = async (v: CatalogueVersion): Promise<VersionDetails> => {
    if (v.revision < 0) throw new MissingDetailsError(v, 'its record does not say where they are');
    // The one event, not the stream's tail from it: an old version of a tool published hundreds of times would read
    // them all.
    const [stored] = await store.readStream(toolStream(v.name), { fromRevision: v.revision, limit: 1 });
    if (!stored || stored.revision !== v.revision) throw new MissingDetailsError(v, `no event at revision ${v.revision} of its stream`);
    const event = decodeCatalogueEvent(stored);
    if (event?.type !== 'ToolVersionPublished' || event.data.definition.version !== v.version) {
      throw new MissingDetailsError(v, `the event at revision ${v.revision} of its stream does not publish it`);
    }
    return detailsOfPublished(event.data, stored.position);
  };

  const remember = (key: string, details: VersionDetails, evict: boolean): void => {
    if (!evict && cache.size >= capacity) return;
    cache.set(key, details);
    if (cache.size > capacity) cache.delete(cache.keys().next().value as string);
  };

  const get = (v: CatalogueVersion, evict: boolean): Promise<VersionDetails> => {
    if (v.details) return Promise.resolve(v.details);
    const key = keyOf(v);
    const hit = cache.get(key);
    if (hit) {
      cache.delete(key);
      cache.set(key, hit);
      return Promise.resolve(hit);
    }
    let pending = reading.get(key);
    if (!pending) {
      pending = read(v)
        .then((details) => {
          remember(key, details, evict);
          return details;
        })
        .finally(() => reading.delete(key));
      reading.set(key, pending);
    }
    return pending;
  };

  return {
    of: (v) => get(v, true),
    ofMany: (vs) => Promise.all(vs.map((v) => get(v, false))),
    prime: (v, details) => {
      if (!v.details) remember(keyOf(v), details, true);
    },
    get cached() {
      return cache.size;
    },
  };
}
