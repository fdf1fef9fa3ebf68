/**
 * The write side decides without reading when it has a state to guess from (issue 15: a publish on PostgreSQL was a
 * read and an append, two round trips): the state it last read or wrote for the tool, or the empty state for a tool
 * the process's catalogue does not know. A guess is only ever confirmed by the append's revision check: a guess that
 * lost a race, and any verdict from a guess that appends nothing, are decided again on what the store holds.
 */
import { describe, expect, it } from 'vitest';
import { CommandHandler } from '#app/command-handler';
import type { EventStore } from '#app/ports';
import { toolStream } from '#domain/events';
import type { ToolDefinition } from '#domain/types';
import { createMemoryEventStore } from '#store/memory-event-store';
import { aDefinition } from '../fixtures/builders.ts';

/** A store that counts the streams read and the appends with the revision each expected. */
const counting = (store: EventStore) => {
  const reads: string[] = [];
  const appends: { stream: string; expected: unknown }[] = [];
  const wrapped: EventStore = {
    ...store,
    readStream: (id, o) => (reads.push(id), store.readStream(id, o)),
    append: (id, events, o) => (appends.push({ stream: id, expected: o.expectedRevision }), store.append(id, events, o)),
  };
  return { store: wrapped, reads, appends };
};

const NAME = 'guess.tool';
const schemaWith = (ref: 'string' | 'integer', extra = false): ToolDefinition['inputSchema'] => ({
  type: 'object',
  properties: { ref: { type: ref }, ...(extra ? { note: { type: 'string' } } : {}) },
  required: ['ref'],
});
const def = (version: string, inputSchema = schemaWith('string'), description = `v${version}`): ToolDefinition =>
  aDefinition({ name: NAME, version, handler: NAME, inputSchema, description });

describe('a publish decided on a guessed state', () => {
  it('a tool the read model does not know: decided on the empty state and appended expecting no stream, with no read', async () => {
    const { store, reads, appends } = counting(createMemoryEventStore());
    const commands = new CommandHandler({ store });
    commands.useReadModel(() => false);
    const out = await commands.publish(def('1.0.0'), 'alice');
    expect(out.result).toBe('published');
    expect(reads).toEqual([]);
    expect(appends).toEqual([{ stream: toolStream(NAME), expected: 'no_stream' }]);
  });

  it('without a read model, the first command reads; the next one on that tool decides on the state its append left', async () => {
    const { store, reads, appends } = counting(createMemoryEventStore());
    const commands = new CommandHandler({ store });
    await commands.publish(def('1.0.0'), 'alice');
    expect(reads).toEqual([toolStream(NAME)]);
    const minor = await commands.publish(def('1.1.0', schemaWith('string', true)), 'alice');
    expect(minor).toMatchObject({ result: 'published', level: 'minor', baseline: '1.0.0' });
    await commands.deprecate(NAME, '1.0.0', 'superseded by 1.1.0', 'alice');
    expect(reads).toHaveLength(1);
    expect(appends.map((a) => a.expected)).toEqual(['no_stream', 0, 1]);
  });

  it('a read model that is behind (the tool exists): the guess conflicts and the verdict comes from the real state', async () => {
    const { store, reads } = counting(createMemoryEventStore());
    await new CommandHandler({ store }).publish(def('1.0.0'), 'bob');
    const commands = new CommandHandler({ store });
    commands.useReadModel(() => false);
    // A major change published as a minor: refused against the stored 1.0.0, not published as the "first" version.
    const out = await commands.publish(def('1.1.0', schemaWith('integer')), 'alice');
    expect(out.result).toBe('refused');
    expect(out.error?.code).toBe('bump-too-small');
    expect(out.baseline).toBe('1.0.0');
    expect(reads.filter((r) => r === toolStream(NAME)).length).toBeGreaterThanOrEqual(2);
    expect((await store.readStream(toolStream(NAME))).length).toBe(1);
  });

  it('a cached state another process moved past: a publish that would append conflicts and is re-judged', async () => {
    const { store } = counting(createMemoryEventStore());
    const a = new CommandHandler({ store });
    const b = new CommandHandler({ store });
    await a.publish(def('1.0.0'), 'alice');
    await b.publish(def('2.0.0', schemaWith('integer')), 'bob');
    // From A's cache (baseline 1.0.0) 1.0.1 is a fine patch; against the store it is behind 2.0.0.
    const out = await a.publish(def('1.0.1', schemaWith('string'), 'patch'), 'alice');
    expect(out.result).toBe('refused');
    expect(out.error?.code).toBe('not-monotonic');
    expect((await store.readStream(toolStream(NAME))).map((e) => e.revision)).toEqual([0, 1]);
  });

  it('a refusal from a stale cache is not the answer: it is decided again on a read', async () => {
    const { store } = counting(createMemoryEventStore());
    const a = new CommandHandler({ store });
    const b = new CommandHandler({ store });
    await a.publish(def('1.0.0'), 'alice');
    await b.publish(def('2.0.0', schemaWith('integer')), 'bob');
    // From A's cache: a major change from 1.0.0 published as 1.1.0, "bump-too-small". In truth 1.1.0 is behind 2.0.0.
    const out = await a.publish(def('1.1.0', schemaWith('integer')), 'alice');
    expect(out.error?.code).toBe('not-monotonic');
    expect(out.baseline).toBe('2.0.0');
  });

  it('"unchanged" from a stale cache is decided again on a read', async () => {
    const { store } = counting(createMemoryEventStore());
    const a = new CommandHandler({ store });
    const b = new CommandHandler({ store });
    await a.publish(def('1.0.0'), 'alice');
    await a.deprecate(NAME, '1.0.0', 'old', 'alice');
    await b.retire(NAME, '1.0.0', 'gone', 'bob');
    // A's cache says 1.0.0 is deprecated already (unchanged); in truth it is retired, and cannot be deprecated.
    await expect(a.deprecate(NAME, '1.0.0', 'old', 'alice')).rejects.toMatchObject({ code: 'already-retired' });
  });

  it('an error a guess throws is not the answer either: it is decided again on a read', async () => {
    const { store } = counting(createMemoryEventStore());
    const a = new CommandHandler({ store });
    const b = new CommandHandler({ store });
    await a.publish(def('1.0.0'), 'alice');
    await b.publish(def('1.1.0', schemaWith('string', true)), 'bob');
    // A's cache has no 1.1.0 (unknown-version); the store has it.
    const out = await a.deprecate(NAME, '1.1.0', 'use 2.x', 'alice');
    expect(out).toMatchObject({ result: 'deprecated', version: '1.1.0' });
  });

  it('the state cache is bounded: past its size the least recently used tool is read again', async () => {
    const { store, reads } = counting(createMemoryEventStore());
    const commands = new CommandHandler({ store, stateCache: 2 });
    for (const n of ['x.one', 'x.two', 'x.three']) await commands.publish(aDefinition({ name: n, handler: n, version: '1.0.0' }), 'alice');
    reads.length = 0;
    await commands.deprecate('x.three', '1.0.0', 'r', 'alice');
    await commands.deprecate('x.two', '1.0.0', 'r', 'alice');
    expect(reads).toEqual([]);
    await commands.deprecate('x.one', '1.0.0', 'r', 'alice');
    expect(reads).toEqual([toolStream('x.one')]);
  });

  it('the state it keeps is its own: a caller changing the definition it published does not change the baseline', async () => {
    const { store } = counting(createMemoryEventStore());
    const commands = new CommandHandler({ store });
    const first = def('1.0.0');
    await commands.publish(first, 'alice');
    // The caller reuses its object (a loop building definitions, say): the stored 1.0.0 is unchanged, so must the
    // baseline be. Against the real 1.0.0 (ref a string), an integer ref is a major change.
    first.inputSchema = schemaWith('integer');
    const out = await commands.publish(def('1.1.0', schemaWith('integer')), 'alice');
    expect(out.result).toBe('refused');
    expect(out.error?.code).toBe('bump-too-small');
  });
});

