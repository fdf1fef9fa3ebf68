/** `estate watch`'s positions (a command-line input) and its store tail, in process. */
import { afterEach, describe, expect, it } from 'vitest';
import type { CatalogueChange, EventStore } from '#app/ports';
import { CommandHandler } from '#app/command-handler';
import { DomainError } from '#domain/errors';
import { isAfter, parseWatchPosition, watchStore, type WatchHandle } from '#ops/change-watch';
import { createMemoryEventStore } from '#store/memory-event-store';
import { aDefinition } from '../fixtures/builders.ts';

describe('watch positions', () => {
  it('accepts the positions stores make and refuses anything else as a usage error', () => {
    for (const ok of ['0', '42', '7591:3', '18446744073709551615:9']) expect(parseWatchPosition(ok)).toBe(ok);
    for (const bad of ['', '-1', '1;DROP TABLE events', '../../etc/passwd', '1:2:3', ' 1', '1 ', '0x10', '1e3', '9'.repeat(31), 'Infinity']) {
      let error: unknown;
      try {
        parseWatchPosition(bad);
      } catch (e) {
        error = e;
      }
      expect(error, bad).toBeInstanceOf(DomainError);
      expect((error as DomainError).kind).toBe('usage');
    }
  });

  it('orders positions as numbers, then as pairs, never as text', () => {
    expect(isAfter('10', '9')).toBe(true);
    expect(isAfter('9', '10')).toBe(false);
    expect(isAfter('9', '9')).toBe(false);
    expect(isAfter('7591:10', '7591:9')).toBe(true);
    expect(isAfter('7592:1', '7591:900')).toBe(true);
    expect(isAfter('7590:999', '7591:1')).toBe(false);
  });
});

describe('watchStore', () => {
  const handles: WatchHandle[] = [];
  const stores: EventStore[] = [];
  afterEach(async () => {
    for (const h of handles.splice(0)) await h.close();
    for (const s of stores.splice(0)) await s.close();
  });

  const setup = async () => {
    const store = createMemoryEventStore();
    stores.push(store);
    const commands = new CommandHandler({ store });
    await commands.publish(aDefinition({ name: 'w.one' }), 't');
    await store.append('run-x@y', [{ type: 'ToolCalled', data: {} }], { expectedRevision: 'any' });
    await commands.publish(aDefinition({ name: 'w.two' }), 't');
    return { store, commands };
  };
  const collect = (store: EventStore, start: Parameters<typeof watchStore>[1]) => {
    const seen: CatalogueChange[] = [];
    const errors: unknown[] = [];
    const h = watchStore(store, start, (c) => seen.push(c), (e) => errors.push(e));
    handles.push(h);
    return { seen, errors, h };
  };
  const until = async (cond: () => boolean): Promise<void> => {
    for (let i = 0; i < 500 && !cond(); i++) await new Promise((r) => setTimeout(r, 10));
    expect(cond()).toBe(true);
  };

  it('from the beginning, after a position, and from the end; only catalogue events', async () => {
    const { store, commands } = await setup();
    const all = collect(store, 'beginning');
    await until(() => all.seen.length === 2);
    expect(all.seen.map((c) => c.tool)).toEqual(['w.one', 'w.two']);
    const after = collect(store, { after: all.seen[0]!.position });
    await until(() => after.seen.length === 1);
    expect(after.seen[0]!.tool).toBe('w.two');
    const end = collect(store, 'end');
    expect(await end.h.started).toBe(all.seen[1]!.position);
    await commands.deprecate('w.one', '1.0.0', 'old', 't');
    await until(() => end.seen.length === 1 && all.seen.length === 3);
    expect(end.seen[0]).toMatchObject({ type: 'catalogue.changed', tool: 'w.one', version: '1.0.0', event: 'ToolVersionDeprecated' });
    expect(all.errors).toEqual([]);
  });
});
