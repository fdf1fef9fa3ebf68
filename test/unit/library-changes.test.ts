/** `estate/changes` decode and deduplicate: every malformed message is refused with a reason naming what is wrong. */
import { describe, expect, it } from 'vitest';
import { ChangeMessageError, createDeduplicator, decodeChange, tryDecodeChange } from '#lib/changes';
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
