/** `estate/changes` decode and deduplicate: every malformed message is refused with a reason naming what is wrong. */
import { describe, expect, it } from 'vitest';
import { ChangeMessageError, createDeduplicator, decodeChange, MALFORMED_REPORT_INTERVAL_MS, malformedReport, tryDecodeChange, type CatalogueChange } from '#lib/changes';
import { zodToJsonSchema, zodToolToDefinition } from '#lib/zod-tools';
import { z } from 'zod';

const good = { type: 'catalogue.changed', position: '17', tool: 'payments.lookup', version: '2.0.0', event: 'ToolVersionPublished', at: '2026-01-01T00:00:00.000Z' };

describe('decodeChange', () => {
  it('decodes the SPEC message from bytes and from text', () => {
    expect(decodeChange(Buffer.from(JSON.stringify(good)))).toEqual(good);
    expect(decodeChange(new Uint8Array(Buffer.from(JSON.stringify(good))))).toEqual(good);
    expect(decodeChange(JSON.stringify(good))).toEqual(good);
  });

  it.each([
    [null, 'empty message'],
    [undefined, 'empty message'],
    ['', 'not JSON'],
    ['{"type":', 'not JSON'],
    ['[]', '(root)'],
    ['42', '(root)'],
    [JSON.stringify({ ...good, type: 'something.else' }), 'type:'],
    [JSON.stringify({ ...good, position: 17 }), 'position:'],
    [JSON.stringify({ ...good, position: '' }), 'position:'],
    [JSON.stringify({ ...good, tool: undefined }), 'tool:'],
    [JSON.stringify({ ...good, event: 'ToolCalled' }), 'event:'],
    [JSON.stringify({ ...good, version: null }), 'version:'],
    [JSON.stringify({ ...good, at: {} }), 'at:'],
    // Anyone who can write to the topic writes these: what reaches logs and `estate watch` is a name, a version, a position.
    [JSON.stringify({ ...good, tool: 'evil\u202Egnp.exe' }), 'tool: not a tool name'],
    [JSON.stringify({ ...good, tool: 'Payments.Lookup' }), 'tool: not a tool name'],
    [JSON.stringify({ ...good, version: '1.0' }), 'version: not a strict semver version'],
    [JSON.stringify({ ...good, version: '1.0.0\u009B2J' }), 'version: not a strict semver version'],
    [JSON.stringify({ ...good, position: '17 \u001b[2J' }), 'position: not a store position'],
    [JSON.stringify({ ...good, at: '2026-01-01\u200BT00:00:00Z' }), 'at: not a time'],
  ])('refuses %j with a reason naming %s', (value, reason) => {
    let error: unknown;
    try {
      decodeChange(value);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ChangeMessageError);
    expect((error as Error).message).toMatch(/^malformed change message: /);
    expect((error as ChangeMessageError).reason).toContain(reason);
    const r = tryDecodeChange(value);
    expect(r.ok).toBe(false);
  });

  it('a huge or deeply nested message is refused, not trusted', () => {
    expect(tryDecodeChange('['.repeat(5000) + ']'.repeat(5000)).ok).toBe(false);
    expect(tryDecodeChange(JSON.stringify({ ...good, tool: { nested: 'x'.repeat(100_000) } })).ok).toBe(false);
  });
});

describe('createDeduplicator', () => {
  it('passes a position once, then refuses redeliveries; equality only, no ordering', () => {
    const d = createDeduplicator();
    expect(d.first({ position: '10' })).toBe(true);
    expect(d.first({ position: '9' })).toBe(true);
    expect(d.first({ position: '10' })).toBe(false);
    expect(d.size).toBe(2);
  });

  it('is bounded: the oldest positions are forgotten past capacity', () => {
    const d = createDeduplicator(2);
    for (const p of ['a', 'b', 'c']) expect(d.first({ position: p })).toBe(true);
    expect(d.size).toBe(2);
    expect(d.first({ position: 'a' })).toBe(true);
    expect(d.first({ position: 'c' })).toBe(false);
    expect(() => createDeduplicator(0)).toThrow(RangeError);
  });

  it('a position named first by a forged message does not hide the real change there: changes, not positions, repeat', () => {
    const d = createDeduplicator();
    const real = { position: '804', event: 'ToolVersionRetired' as const, tool: 'payments.lookup', version: '1.0.0' };
    // Whoever can write to the topic announces the store's next position first, naming a change the consumer has seen.
    expect(d.first({ ...real, event: 'ToolVersionPublished' })).toBe(true);
    expect(d.first(real)).toBe(true);
    expect(d.first({ ...real })).toBe(false);
    expect(d.first({ ...real, tool: 'payments.other' })).toBe(true);
  });
});

describe('the default report of malformed messages', () => {
  const error = (n: number) => new ChangeMessageError(`not JSON #${n}`);
  it('writes the first at once, then at most one line an interval counting the rest', () => {
    const lines: string[] = [];
    let t = 0;
    const report = malformedReport((l) => lines.push(l), () => t);
    report(error(1), { partition: 0, offset: '1' });
    expect(lines).toEqual(['estate/changes: skipped 1 malformed message (the first: malformed change message: not JSON #1 (partition 0, offset 1))']);
    for (let i = 2; i <= 10_000; i++) report(error(i), { partition: 0, offset: String(i) });
    expect(lines).toHaveLength(1);
    t = MALFORMED_REPORT_INTERVAL_MS;
    report(error(10_001), { partition: 1, offset: '7' });
    expect(lines).toHaveLength(2);
    expect(lines[1]).toBe('estate/changes: skipped 10000 malformed messages (the first: malformed change message: not JSON #2 (partition 0, offset 2))');
  });
});

describe('zod tools', () => {
  it('generates JSON Schema 2020-12, input side of transforms for input', () => {
    const s = zodToJsonSchema(z.object({ n: z.string().transform((x) => x.length).pipe(z.number()) }), 'x', 'input');
    expect(s).toMatchObject({ $schema: 'https://json-schema.org/draft/2020-12/schema', properties: { n: { type: 'string' } } });
  });

  it.each([
    ['a bigint', z.object({ id: z.bigint() }), 'at properties.id: a zod bigint'],
    ['a date in an array', z.object({ days: z.array(z.date()) }), 'at properties.days.items: a zod date'],
    ['a symbol', z.object({ s: z.symbol() }), 'at properties.s: a zod symbol'],
  ])('refuses %s naming the field', (_what, schema, detail) => {
    expect(() => zodToolToDefinition({ name: 'a.b', input: schema }, 0, 'm.ts')).toThrow(detail);
  });

  it.each([
    [null, 'expected an object, got null'],
    [[], 'expected an object, got an array'],
    [{ name: 'a.b', input: { type: 'object' } }, "'input' must be a zod schema"],
    [{ name: 'a.b', input: z.object({}), output: 'x' }, "'output' must be a zod schema"],
  ])('refuses a malformed tool entry %j', (tool, message) => {
    expect(() => zodToolToDefinition(tool, 3, 'm.ts')).toThrow(message);
  });
});

describe('createToolsCache options', () => {
  it.each([-1, Number.NaN, Number.POSITIVE_INFINITY])('refuses ttlMs %s before touching the client', async (ttlMs) => {
    const { createToolsCache } = await import('#lib/client');
    expect(() => createToolsCache({} as never, { ttlMs })).toThrow(/ttlMs must be a finite number >= 0/);
  });
});

/**
 * A change message and the server's replicas race (the feed may hear of a change before the replica a list is asked of
 * has applied it): the list fetched after a change message is checked against it. A client whose server catches up
 * after `lagLists` lists: the change is not held stale.
 */
describe('createToolsCache after a change message: the list is checked against the change', () => {
  const tool = (name: string, version: string) => ({ name, inputSchema: { type: 'object' as const }, _meta: { 'io.estate/version': version } });
  const fakeServer = (lists: Array<Array<ReturnType<typeof tool>>>) => {
    let i = 0;
    const client = {
      getNegotiatedProtocolVersion: () => '2025-11-25',
      setNotificationHandler: () => undefined,
      getServerCapabilities: () => ({ tools: {} }),
      // The cache walks the pages itself: the first page with request(), the next with listTools({cursor}).
      request: async () => ({ tools: lists[Math.min(i++, lists.length - 1)]! }),
    };
    return { client: client as never, served: () => i };
  };
  const feed = () => {
    let listener: ((c: CatalogueChange) => void) | undefined;
    return {
      subscribe: (l: (c: CatalogueChange) => void) => ((listener = l), () => (listener = undefined)),
      send: (tool: string, version: string, event: CatalogueChange['event'] = 'ToolVersionPublished') =>
        listener?.({ type: 'catalogue.changed', position: `${Math.random()}`, tool, version, event, at: new Date().toISOString() }),
    };
  };
  const v1 = [tool('payments.lookup', '1.0.0'), tool('other', '3.0.0')];
  const v11 = [tool('payments.lookup', '1.1.0'), tool('other', '3.0.0')];

  it('a server that has not applied a newer version yet is asked again until its list shows it', async () => {
    const { createToolsCache } = await import('#lib/client');
    const server = fakeServer([v1, v1, v1, v11]);
    const changes = feed();
    const cache = createToolsCache(server.client, { changes, confirmDelaysMs: [1, 1, 1] });
    await cache.list();
    changes.send('payments.lookup', '1.1.0');
    expect(cache.versionOf('payments.lookup')).toBe('1.0.0');
    expect((await cache.list()).find((t) => t.name === 'payments.lookup')?._meta?.['io.estate/version']).toBe('1.1.0');
    expect(cache.stats()).toMatchObject({ lists: 4, confirmRetries: 2, invalidationsBySource: { change_feed: 1 } });
    // Held as valid: no more fetches.
    await cache.list();
    expect(server.served()).toBe(4);
  });

  it('two publishes announced before one fetch: a list showing only the first is asked again', async () => {
    const { createToolsCache } = await import('#lib/client');
    const server = fakeServer([v1, v11, [tool('payments.lookup', '1.2.0'), tool('other', '3.0.0')]]);
    const changes = feed();
    const cache = createToolsCache(server.client, { changes, confirmDelaysMs: [1, 1, 1] });
    await cache.list();
    changes.send('payments.lookup', '1.1.0');
    changes.send('payments.lookup', '1.2.0');
    await cache.list();
    expect(cache.versionOf('payments.lookup')).toBe('1.2.0');
    expect(cache.stats()).toMatchObject({ lists: 3, confirmRetries: 1 });
  });

  it('gives up after its waits when the change never shows (a version this caller cannot see), and holds that list', async () => {
    const { createToolsCache } = await import('#lib/client');
    const server = fakeServer([v1]);
    const changes = feed();
    const cache = createToolsCache(server.client, { changes, confirmDelaysMs: [1, 1, 1] });
    await cache.list();
    changes.send('payments.lookup', '2.0.0');
    expect((await cache.list()).map((t) => t._meta?.['io.estate/version'])).toEqual(['1.0.0', '3.0.0']);
    expect(cache.stats()).toMatchObject({ lists: 5, confirmRetries: 3 });
    await cache.list();
    expect(server.served()).toBe(5);
  });

  it('a flood of change messages for a listed tool (the topic is not trusted) costs the next list at most its waits', async () => {
    const { createToolsCache } = await import('#lib/client');
    const server = fakeServer([v1]);
    const changes = feed();
    const delays = [1, 1, 1];
    const cache = createToolsCache(server.client, { changes, confirmDelaysMs: delays });
    await cache.list();
    for (let i = 0; i < 10_000; i++) {
      changes.send('payments.lookup', `${2 + (i % 50)}.${i}.0`);
      changes.send('payments.lookup', '1.0.0', i % 2 ? 'ToolVersionDeprecated' : 'ToolVersionRetired');
    }
    expect((await cache.list()).map((t) => t._meta?.['io.estate/version'])).toEqual(['1.0.0', '3.0.0']);
    expect(cache.stats()).toMatchObject({ lists: 2 + delays.length, confirmRetries: delays.length, invalidationsBySource: { change_feed: 1 } });
    await cache.list();
    expect(server.served()).toBe(2 + delays.length);
  });

  it('does not wait for what need not show: an older version published, another version deprecated; a retired listed version must', async () => {
    const { createToolsCache } = await import('#lib/client');
    const server = fakeServer([v1, v1, v1, v1, [tool('payments.lookup', '0.9.0'), tool('other', '3.0.0')]]);
    const changes = feed();
    const cache = createToolsCache(server.client, { changes, confirmDelaysMs: [1, 1, 1] });
    await cache.list();
    changes.send('payments.lookup', '0.9.1');
    await cache.list();
    changes.send('payments.lookup', '0.9.0', 'ToolVersionDeprecated');
    await cache.list();
    expect(cache.stats()).toMatchObject({ lists: 3, confirmRetries: 0 });
    // The listed version retired: the list must stop showing it.
    changes.send('payments.lookup', '1.0.0', 'ToolVersionRetired');
    expect(cache.versionOf('payments.lookup')).toBe('1.0.0');
    await cache.list();
    expect(cache.versionOf('payments.lookup')).toBe('0.9.0');
    expect(cache.stats()).toMatchObject({ lists: 5, confirmRetries: 1 });
  });
});
