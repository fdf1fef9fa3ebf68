/**
 * The catalogue projection as a snapshot (docs/decisions.md, "Projection snapshots"): written a chunk at a time from a
 * consistent cut, read back chunk by chunk, and trusted only when everything checks — the version tag, the checksum
 * over every chunk, the chunk count, and the shape of every record. Anything else is not an error: the caller
 * rebuilds from the events, and a snapshot only ever saves time.
 */
import { createHash } from 'node:crypto';
import type { EventAnchor } from '#domain/events';
import { CATALOGUE_PROJECTION_VERSION, CatalogueProjection, type CatalogueCut } from '#projections/catalogue';
import type { SnapshotStore, StoredSnapshotHead } from './ports.ts';
import { ChunkEncoder, decodeChunk } from './catalogue-snapshot-records.ts';
import { readStoredSnapshot } from './snapshot-read.ts';

export const CATALOGUE_SNAPSHOT = 'catalogue';

/** How records are laid out in a chunk (catalogue-snapshot-records.ts); bumped with any change there. */
const LAYOUT = 6;

/** The tag a snapshot must carry to be loaded: the projection's version and the layout's. */
export const CATALOGUE_SNAPSHOT_VERSION = `catalogue-${CATALOGUE_PROJECTION_VERSION}/layout-${LAYOUT}`;

/** Characters per chunk: small enough that making one, or writing one, holds the event loop only briefly. */
const CHUNK_CHARS = 256 * 1024;

const yieldToLoop = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

export interface SnapshotWriteStats {
  position: string;
  eventCount: number;
  tools: number;
  chunks: number;
  chars: number;
  /** From the cut to the head committed. */
  ms: number;
  /** The longest stretch the event loop was held by this process's part of the write (cut, one chunk). */
  longestStepMs: number;
}

/** Write the catalogue as it is now. Null when there is nothing to write (no event applied yet). */
export async function writeCatalogueSnapshot(store: SnapshotStore, catalogue: CatalogueProjection, now: () => string): Promise<SnapshotWriteStats | null> {
  const t0 = performance.now();
  const cut: CatalogueCut = catalogue.cut();
  let longestStepMs = performance.now() - t0;
  const position = cut.position;
  if (position === null) return null;
  // Only a projection fed stored events (a catalogue reader) knows the event it is at; a snapshot without it is no use.
  if (cut.anchor === null) throw new Error('catalogue snapshot: the projection does not name the event at its position');
  const hash = createHash('sha256');
  let chunks = 0;
  let chars = 0;

  async function* encode(): AsyncGenerator<string> {
    let encoder = new ChunkEncoder();
    let stepStart = performance.now();
    const flush = (): string => {
      // The first chunk names the event the snapshot ends at (checked against the log by whoever restores it).
      const chunk = encoder.text(chunks === 0 ? (cut.anchor ?? undefined) : undefined);
      encoder = new ChunkEncoder();
      hash.update(chunk);
      chunks++;
      chars += chunk.length;
      longestStepMs = Math.max(longestStepMs, performance.now() - stepStart);
      return chunk;
    };
    for (const tool of cut.tools) {
      encoder.add(tool);
      if (encoder.size >= CHUNK_CHARS) {
        yield flush();
        await yieldToLoop();
        stepStart = performance.now();
      }
    }
    if (!encoder.empty || chunks === 0) yield flush();
  }

  await store.write(encode(), () => ({
    name: CATALOGUE_SNAPSHOT,
    version: CATALOGUE_SNAPSHOT_VERSION,
    position,
    eventCount: cut.eventCount,
    checksum: hash.digest('hex'),
    chunkCount: chunks,
    chars,
    writtenAt: now(),
  }));
  return { position, eventCount: cut.eventCount, tools: cut.tools.length, chunks, chars, ms: performance.now() - t0, longestStepMs };
}

export type SnapshotRead =
  | { kind: 'none' }
  /** Written by another version of the projection: rebuilt, said at info. */
  | { kind: 'stale'; version: string }
  /** Unreadable: rebuilt, said as a warning. */
  | { kind: 'corrupt'; reason: string }
  | { kind: 'loaded'; catalogue: CatalogueProjection; position: string; anchor: EventAnchor; eventCount: number; tools: number; ms: number };

class Corrupt extends Error {}

/** Read the stored catalogue snapshot into a fresh projection, checking everything on the way. */
export const readCatalogueSnapshot = (store: SnapshotStore): Promise<SnapshotRead> => readStoredSnapshot(store, CATALOGUE_SNAPSHOT, (head) => readFrom(store, head));

async function readFrom(store: SnapshotStore, head: StoredSnapshotHead): Promise<SnapshotRead> {
  const t0 = performance.now();
  if (head.version !== CATALOGUE_SNAPSHOT_VERSION) return { kind: 'stale', version: head.version };
  const catalogue = new CatalogueProjection();
  const hash = createHash('sha256');
  let chunks = 0;
  let tools = 0;
  let anchor: EventAnchor | undefined;
  try {
    if (!Number.isSafeInteger(head.chunkCount) || head.chunkCount < 1) throw new Corrupt(`chunk count ${head.chunkCount}`);
    for await (const chunk of store.chunks(head)) {
      hash.update(chunk);
      chunks++;
      try {
        const decoded = decodeChunk(chunk, catalogue);
        tools += decoded.tools;
        if (chunks === 1) anchor = decoded.anchor;
      } catch (e) {
        if (e instanceof SyntaxError) throw new Corrupt(`chunk ${chunks - 1} is not JSON (${e.message})`);
        throw e;
      }
      await yieldToLoop();
    }
    if (chunks !== head.chunkCount) throw new Corrupt(`truncated: ${chunks} of ${head.chunkCount} chunks`);
    const checksum = hash.digest('hex');
    if (checksum !== head.checksum) throw new Corrupt('checksum mismatch');
    if (anchor === undefined) throw new Corrupt('the first chunk names no event to end at');
  } catch (e) {
    if (e instanceof Corrupt || e instanceof TypeError) return { kind: 'corrupt', reason: e.message };
    throw e;
  }
  catalogue.position = head.position;
  catalogue.anchorStream = anchor.streamId;
  catalogue.anchorRevision = anchor.revision;
  catalogue.eventCount = head.eventCount;
  return { kind: 'loaded', catalogue, position: head.position, anchor, eventCount: head.eventCount, tools, ms: performance.now() - t0 };
}
