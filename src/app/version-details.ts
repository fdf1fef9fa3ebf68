/**
 * A version's details (definition, hashes, reasons) when its record does not hold them: read from its publishing
 * event (the tool's stream at the record's revision), decoded like every stored event, checked against the record,
 * and kept in a bounded cache, most recently used last. Concurrent asks for one version share one read (a listing page
 * joins one under way but registers none of its own: see `get`).
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

/**
 * A version's details, made by a constructor rather than an object literal. V8 pretenures an object literal's
 * allocation site once most of what it made outlives a young-generation collection, which the cached details do; from
 * then on every listing page's details (500 read, used, dropped) would be born in the old generation and hold the page's
 * young objects (each definition, its schema) alive through every scavenge until the next full collection. A client
 * walking 100,000 tools promoted ~110 MiB that way (the startup bench's walk); objects a constructor makes are not
 * pretenured, so a page's details die young with the rest of it.
 */
class PublishedDetails implements VersionDetails {
  readonly definition: VersionDetails['definition'];
  readonly schemaHash: string;
  readonly definitionHash: string;
  readonly level: string;
  readonly reasons: VersionDetails['reasons'];
  readonly publishedAt: string;
  readonly publishedBy: string;
  readonly position: string;

  constructor(d: ToolVersionPublished['data'], position: string) {
    this.definition = d.definition;
    this.schemaHash = d.schemaHash;
    this.definitionHash = d.definitionHash;
    this.level = d.level;
    this.reasons = d.reasons;
    this.publishedAt = d.at;
    this.publishedBy = d.by;
    this.position = position;
  }
}

/** The details a publishing event carries. */
export const detailsOfPublished = (d: ToolVersionPublished['data'], position: string): VersionDetails => new PublishedDetails(d, position);

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

  /**
   * `listing`: one of a page's versions (ofMany). It joins a read already under way but does not register its own,
   * and what it reads is cached only while the cache has room. `reading` lives as long as the process, in the old
   * generation: a page's 500 entries passing through it kept each read (its promise, the details, the definition and
   * its schema) alive through every young-generation collection until the next full one, ~0.5 MiB per page promoted.
   */
  const get = (v: CatalogueVersion, listing: boolean): Promise<VersionDetails> => {
    if (v.details) return Promise.resolve(v.details);
    const key = keyOf(v);
    const hit = cache.get(key);
    if (hit) {
      cache.delete(key);
      cache.set(key, hit);
      return Promise.resolve(hit);
    }
    let pending = reading.get(key);
    if (pending) return pending;
    if (listing) {
      return read(v).then((details) => {
        remember(key, details, false);
        return details;
      });
    }
    pending = read(v)
      .then((details) => {
        remember(key, details, true);
        return details;
      })
      .finally(() => reading.delete(key));
    reading.set(key, pending);
    return pending;
  };

  return {
    of: (v) => get(v, false),
    ofMany: (vs) => Promise.all(vs.map((v) => get(v, true))),
    prime: (v, details) => {
      if (!v.details) remember(keyOf(v), details, true);
    },
    get cached() {
      return cache.size;
    },
  };
}
