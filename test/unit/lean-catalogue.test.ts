/**
 * A serving process's catalogue need not fit in memory whole (issue 15): records hold what discovery and serving
 * decide on, the rest (definition, hashes, reasons) is read from the publishing event on demand and cached within a
 * bound; compiled validators are bounded too (least recently used dropped, compiled again on the next call), and at
 * start only so many are compiled ahead, each tool's newest first.
 */
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { CatalogueReader } from '#app/catalogue-reader';
import type { EventStore } from '#app/ports';
import { MissingDetailsError } from '#app/version-details';
import { toolStream } from '#domain/events';
import { createSchemaCompiler, type SchemaCompiler } from '#domain/schema-compiler';
import { createCompiledSchemaCache } from '#mcp/compiled-schemas';
import { createSchemaWarmup } from '#mcp/schema-warmup';
import { createMemoryEventStore } from '#store/memory-event-store';
import { localCatalogueCommands } from '#cli/commands/local';
import { openEstate } from '#compose/estate';
import { loadConfig } from '#config';
import { aDefinition, deprecatedEvent, publishedEvent, retiredEvent } from '../fixtures/builders.ts';

const publish = async (store: EventStore, name: string, versions: string[]): Promise<void> => {
  for (const version of versions) {
    const def = aDefinition({ name, version, handler: name, description: `${name} ${version}` });
    await store.append(toolStream(name), [publishedEvent(def)], { expectedRevision: 'any' });
  }
};

/** A store that counts the streams read (where details come from), and the events each read returned. */
const counting = (store: EventStore) => {
  const reads: string[] = [];
  const returned: number[] = [];
  const wrapped: EventStore = {
    ...store,
    readStream: async (id, o) => {
      reads.push(id);
      const events = await store.readStream(id, o);
      returned.push(events.length);
      return events;
    },
  };
  return { store: wrapped, reads, returned };
};

describe('a catalogue that does not keep details', () => {
  it('holds no definitions; reads each from its publishing event once, shares concurrent reads, and caches within a bound', async () => {
    const base = createMemoryEventStore();
    await publish(base, 'a.one', ['1.0.0', '1.1.0']);
    await publish(base, 'a.two', ['1.0.0']);
    const { store, reads, returned } = counting(base);
    const lean = new CatalogueReader(store, { keepDetails: false, detailsCache: 2 });
    const full = new CatalogueReader(store);
    await lean.catchUp();
    await full.catchUp();
    const versions = ['a.one', 'a.two'].flatMap((n) => lean.catalogue.versions(n));
    expect(versions.map((v) => v.details)).toEqual([undefined, undefined, undefined]);
    expect(versions.map((v) => [v.version, v.handler, v.access.classification])).toEqual([
      ['1.0.0', 'a.one', 'internal'],
      ['1.1.0', 'a.one', 'internal'],
      ['1.0.0', 'a.two', 'internal'],
    ]);
    // What the console searches: the newest version's title and description, held by the tool.
    expect(lean.catalogue.tool('a.one')).toMatchObject({ description: 'a.one 1.1.0', title: 'Look up a payment' });

    const [first, again] = await Promise.all([lean.details.of(versions[0]!), lean.details.of(versions[0]!)]);
    expect(first).toBe(again);
    expect(reads).toEqual(['tool-a.one']);
    expect(returned, 'the one publishing event, not the stream from it on').toEqual([1]);
    expect(first).toEqual(full.catalogue.find('a.one', '1.0.0')?.details);
    // A listing page's details are cached only while there is room: it never pushes anything out.
    expect(await lean.details.ofMany(versions)).toEqual(['a.one', 'a.two'].flatMap((n) => full.catalogue.versions(n).map((v) => v.details)));
    expect(lean.details.cached).toBe(2);
    expect(reads).toHaveLength(3);
    await lean.details.of(versions[1]!); // cached by the listing
    expect(reads).toHaveLength(3);
    await lean.details.of(versions[2]!); // not cached by the listing (no room); a call's read pushes out a.one@1.0.0
    expect(reads).toHaveLength(4);
    await lean.details.of(versions[0]!);
    expect(reads).toHaveLength(5);
  });

  it('a version published while it serves has its details from the event just applied: no store read for its warm-up or first call', async () => {
    const base = createMemoryEventStore();
    await publish(base, 'a.one', ['1.0.0']);
    const { store, reads } = counting(base);
    const lean = new CatalogueReader(store, { keepDetails: false });
    await lean.catchUp();
    await publish(base, 'a.one', ['1.1.0']);
    await publish(base, 'a.two', ['1.0.0']);
    await lean.catchUp();
    const newer = lean.catalogue.find('a.one', '1.1.0')!;
    const two = lean.catalogue.find('a.two', '1.0.0')!;
    expect(newer.details).toBeUndefined();
    const fresh = new CatalogueReader(base, { keepDetails: false });
    await fresh.catchUp();
    expect(await lean.details.of(newer)).toEqual(await fresh.details.of(fresh.catalogue.find('a.one', '1.1.0')!));
    expect(await lean.details.of(two)).toEqual(await fresh.details.of(fresh.catalogue.find('a.two', '1.0.0')!));
    expect(reads).toEqual([]);
    // What the first catch-up applied is read on demand, as before.
    await lean.details.of(lean.catalogue.find('a.one', '1.0.0')!);
    expect(reads).toEqual(['tool-a.one']);
  });

  it('shares access rules and handler names between records; a deprecation keeps where the details are', async () => {
    const store = createMemoryEventStore();
    await publish(store, 'a.one', ['1.0.0', '2.0.0']);
    await store.append(toolStream('a.one'), [deprecatedEvent('a.one', '1.0.0')], { expectedRevision: 'any' });
    const reader = new CatalogueReader(store, { keepDetails: false });
    await reader.catchUp();
    const [old, current] = reader.catalogue.versions('a.one');
    expect(old?.access).toBe(current?.access);
    expect(old?.status).toBe('deprecated');
    expect((await reader.details.of(old!)).definition.version).toBe('1.0.0');
  });

  it('a record whose publishing event is not where it says fails with a clear error (and is not cached)', async () => {
    const store = createMemoryEventStore();
    await publish(store, 'a.one', ['1.0.0']);
    const reader = new CatalogueReader(store, { keepDetails: false });
    await reader.catchUp();
    const v = reader.catalogue.find('a.one', '1.0.0')!;
    const moved = { ...v, revision: 3 };
    await expect(reader.details.of(moved)).rejects.toThrow(MissingDetailsError);
    await expect(reader.details.of(moved)).rejects.toThrow('the details of a.one@1.0.0 cannot be read from the store: no event at revision 3 of its stream');
    expect(reader.details.cached).toBe(0);
  });
});

describe('estate replay on records only', () => {
  it('shows each listed version\'s own title: the tool\'s when it is the newest, read from its event when it is not', async () => {
    const estate = await openEstate(loadConfig({ store: 'memory:', by: 'tester' }, {}));
    try {
      const one = aDefinition({ name: 'r.one', handler: 'r.one', title: 'First' });
      await estate.store.append(toolStream('r.one'), [publishedEvent(one), publishedEvent({ ...one, version: '2.0.0', title: 'Second' })], { expectedRevision: 'any' });
      await estate.store.append(toolStream('r.one'), [retiredEvent('r.one', '2.0.0')], { expectedRevision: 'any' });
      const two = aDefinition({ name: 'r.two', handler: 'r.two', title: 'Only' });
      await estate.store.append(toolStream('r.two'), [publishedEvent(two)], { expectedRevision: 'any' });
      const commands = localCatalogueCommands(estate);
      const replayed = await commands.replay('9999-01-01T00:00:00Z', false);
      expect(replayed.tools).toEqual([
        { name: 'r.one', version: '1.0.0', title: 'First', status: 'active' },
        { name: 'r.two', version: '1.0.0', title: 'Only', status: 'active' },
      ]);
    } finally {
      await estate.close();
    }
  });
});

describe('bounded validators', () => {
  const compiledBy = (real: SchemaCompiler, compiled: string[]): SchemaCompiler => ({ ...real, check: (s, w) => real.check(s, w), compile: (s, w) => (compiled.push(w ?? ''), real.compile(s, w)) });

  it('keeps at most `capacity` versions compiled, dropping the least recently used; a dropped one is made again', async () => {
    const store = createMemoryEventStore();
    for (const n of ['c.a', 'c.b', 'c.c']) {
      // Schemas of different text: versions with the same schema text share one validator (shared-validators.ts).
      const def = aDefinition({ name: n, handler: n, inputSchema: { type: 'object', properties: { [n]: { type: 'string' } } } });
      await store.append(toolStream(n), [publishedEvent(def)], { expectedRevision: 'no_stream' });
    }
    const reader = new CatalogueReader(store, { keepDetails: false });
    await reader.catchUp();
    const compiled: string[] = [];
    const cache = createCompiledSchemaCache(compiledBy(createSchemaCompiler(), compiled), { capacity: 2, details: (v) => reader.details.of(v) });
    const [a, b, c] = ['c.a', 'c.b', 'c.c'].map((n) => reader.catalogue.find(n, '1.0.0')!);
    const first = await cache.ready(a!);
    expect(first.schemaHash).toBe('s-c.a-1.0.0');
    const second = await cache.ready(b!);
    await cache.ready(a!); // a is now the most recently used
    await cache.ready(c!); // b goes
    expect(cache.stats()).toMatchObject({ ready: 2 });
    expect(compiled).toHaveLength(3);
    expect(await cache.ready(a!)).toBe(first);
    expect(cache.compiled(b!)).toBeUndefined();
    const again = await cache.ready(b!);
    expect(again).not.toBe(second);
    expect(again.input.validate({ 'c.b': 1 })).toEqual(second.input.validate({ 'c.b': 1 }));
  });

  it('at start compiles ahead only up to its limit: each tool\'s newest version first, older ones after', async () => {
    const store = createMemoryEventStore();
    await publish(store, 'w.one', ['1.0.0', '1.1.0']);
    await publish(store, 'w.two', ['1.0.0', '2.0.0']);
    await publish(store, 'w.three', ['1.0.0']);
    const reader = new CatalogueReader(store, { keepDetails: false });
    await reader.catchUp();
    const warm = createSchemaWarmup({ compiler: createSchemaCompiler(), reader, isOffered: () => true, log: pino({ level: 'silent' }), warmLimit: 4 });
    for (let i = 0; i < 1000 && warm.cache.stats().pending > 0; i++) await new Promise((r) => setImmediate(r));
    expect(warm.cache.stats()).toMatchObject({ ready: 4, pending: 0 });
    // Warmed: the newest of each tool, then the first older one; w.two@1.0.0 is compiled on its first call.
    const version = (n: string, v: string) => reader.catalogue.find(n, v)!;
    const before = warm.cache.stats().ready;
    await warm.cache.ready(version('w.one', '1.1.0'));
    await warm.cache.ready(version('w.three', '1.0.0'));
    await warm.cache.ready(version('w.two', '2.0.0'));
    await warm.cache.ready(version('w.one', '1.0.0'));
    expect(warm.cache.stats().ready).toBe(before);
    await warm.cache.ready(version('w.two', '1.0.0'));
    expect(warm.cache.stats().ready).toBe(before + 1);
    warm.close();
  });

  it('a warm-up told to wait (a serving process, until it is ready) compiles nothing before start(), then what it would have', async () => {
    const store = createMemoryEventStore();
    await publish(store, 'd.one', ['1.0.0']);
    await publish(store, 'd.two', ['1.0.0']);
    const reader = new CatalogueReader(store, { keepDetails: false });
    await reader.catchUp();
    const warm = createSchemaWarmup({ compiler: createSchemaCompiler(), reader, isOffered: () => true, log: pino({ level: 'silent' }), deferStart: true });
    for (let i = 0; i < 50; i++) await new Promise((r) => setImmediate(r));
    expect(warm.cache.stats()).toMatchObject({ ready: 0, pending: 0 });
    warm.start();
    warm.start();
    for (let i = 0; i < 1000 && warm.cache.stats().ready < 2; i++) await new Promise((r) => setImmediate(r));
    expect(warm.cache.stats()).toMatchObject({ ready: 2, pending: 0 });
    warm.close();
  });
});

