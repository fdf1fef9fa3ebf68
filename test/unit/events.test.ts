/**
 * Events declared once (src/domain/events.ts) and decoded once (src/app/event-codec.ts): every event a writer builds
 * decodes back to itself; a malformed stored event is refused with the field named, whatever shape the attack takes;
 * an unknown type is not Estate's and is passed over; the change message's type stays exactly the library's API; and a
 * reader folding the log decodes each stored event exactly once.
 */
import { describe, expect, expectTypeOf, it, vi } from 'vitest';
import { CatalogueReader } from '#app/catalogue-reader';
import { CorruptEventError, decodeCatalogueEvent, decodeEvent, decodeToolCalled, decodeUpstreamEvent } from '#app/event-codec';
import type { StoredEvent } from '#app/ports';
import { changeOfEvent, EVENT_DATA, toolStream, type EstateEvent, type EventType } from '#domain/events';
import type { CatalogueChange as LibraryChange } from '#lib/changes';
import { createMemoryEventStore } from '#store/memory-event-store';
import { aDefinition, deprecatedEvent, publishedEvent, retiredEvent } from '../fixtures/builders.ts';

const at = '2026-01-01T00:00:00.000Z';
const def = aDefinition();
const { version: _v, ...candidate } = def;

/** One event of every declared type, as its writer builds it. */
const samples: { [K in EventType]: Extract<EstateEvent, { type: K }> } = {
  ToolVersionPublished: publishedEvent(def) as Extract<EstateEvent, { type: 'ToolVersionPublished' }>,
  ToolVersionDeprecated: deprecatedEvent('payments.lookup', '1.0.0') as Extract<EstateEvent, { type: 'ToolVersionDeprecated' }>,
  ToolVersionRetired: retiredEvent('payments.lookup', '1.0.0') as Extract<EstateEvent, { type: 'ToolVersionRetired' }>,
  ToolCalled: {
    type: 'ToolCalled',
    data: {
      runId: 'r1', subject: 's', tenant: 't', client: null, protocolVersion: '2025-11-25', tool: 'payments.lookup', version: '1.0.0', schemaHash: 'h',
      argsHash: 'a', repaired: true, repairs: [{ path: '/x', action: 'coerced' }], outcome: 'ok', attempts: 1, durationMs: 3, at, callId: 'c1',
    },
  },
  ToolCallStarted: { type: 'ToolCallStarted', data: { callId: 'c1', runId: 'r1', subject: 's', tenant: 't', tool: 'payments.lookup', version: '1.0.0', argsHash: 'a', at } },
  UpstreamRegistered: {
    type: 'UpstreamRegistered',
    data: { ns: 'gh', target: { transport: 'stdio', command: 'node', args: ['s.js'], env: { TOKEN: 'GITHUB_TOKEN' } }, access: def.access, autoApprove: 'none', by: 'me', at },
  },
  UpstreamDriftDetected: {
    type: 'UpstreamDriftDetected',
    data: { ns: 'gh', tool: 'gh.search', upstreamTool: 'search', level: 'initial', reasons: [], candidate, candidateHash: 'ch', at },
  },
  UpstreamToolVanished: { type: 'UpstreamToolVanished', data: { ns: 'gh', tool: 'gh.search', upstreamTool: 'search', pinned: '1.0.0', at } },
  UpstreamDriftRejected: { type: 'UpstreamDriftRejected', data: { ns: 'gh', tool: 'gh.search', candidateHash: 'ch', reason: 'no', by: 'me', at } },
  UpstreamRemoved: { type: 'UpstreamRemoved', data: { ns: 'gh', reason: 'gone', retired: ['gh.search@1.0.0'], by: 'me', at } },
};

const stored = (type: string, data: unknown, position = '1'): StoredEvent => ({ streamId: 'tool-x', revision: 0, position, type, data, recordedAt: at });

describe('events declared once, decoded once', () => {
  it('every declared event type has a sample, and each decodes back to exactly what was written', () => {
    expect(Object.keys(samples).sort()).toEqual(Object.keys(EVENT_DATA).sort());
    for (const e of Object.values(samples)) expect(decodeEvent(stored(e.type, JSON.parse(JSON.stringify(e.data))))).toEqual(e);
  });

  it('the narrow decoders pick their family and pass over the rest', () => {
    expect(decodeCatalogueEvent(stored('UpstreamRemoved', samples.UpstreamRemoved.data))).toBeNull();
    expect(decodeCatalogueEvent(stored('ToolCalled', { corrupt: true }))).toBeNull(); // another family: not parsed, not judged
    expect(decodeUpstreamEvent(stored('ToolVersionRetired', samples.ToolVersionRetired.data))).toBeNull();
    expect(decodeUpstreamEvent(stored('UpstreamRemoved', samples.UpstreamRemoved.data))).toEqual(samples.UpstreamRemoved);
    expect(() => decodeToolCalled(stored('ToolCallStarted', samples.ToolCallStarted.data))).toThrow(CorruptEventError);
  });

  it.each([['RelayStateRecorded'], ['SomethingElse'], ['__proto__'], ['constructor'], ['toString'], ['hasOwnProperty']])(
    'a type Estate does not declare (%s) is not an event of its own: null, never a crash',
    (type) => {
      expect(decodeEvent(stored(type, {}))).toBeNull();
    },
  );

  it.each([
    ['no data', 'ToolVersionPublished', null, '(root)'],
    ['an array', 'ToolVersionDeprecated', [], '(root)'],
    ['a missing field', 'ToolVersionDeprecated', { name: 'x', version: '1.0.0', by: 'b', at }, 'reason'],
    ['a wrong type deep down', 'ToolVersionPublished', { ...samples.ToolVersionPublished.data, definition: { ...def, access: { ...def.access, tenants: 'all' } } }, 'definition.access.tenants'],
    ['an inputSchema that is not an object', 'ToolVersionPublished', { ...samples.ToolVersionPublished.data, definition: { ...def, inputSchema: [] } }, 'definition.inputSchema'],
    ['an unknown outcome', 'ToolCalled', { ...samples.ToolCalled.data, outcome: 'maybe' }, 'outcome'],
    ['an unknown transport', 'UpstreamRegistered', { ...samples.UpstreamRegistered.data, target: { transport: 'carrier-pigeon' } }, 'target'],
    ['an unknown level', 'UpstreamDriftDetected', { ...samples.UpstreamDriftDetected.data, level: 'huge' }, 'level'],
  ])('a stored event with %s is refused, naming the event and the field', (_what, type, data, field) => {
    const e = (() => {
      try {
        decodeEvent(stored(type, data, '77'));
      } catch (error) {
        return error;
      }
    })();
    expect(e).toBeInstanceOf(CorruptEventError);
    expect((e as Error).message).toContain(`event at 77 (tool-x@0, ${type}) is malformed: ${field}`);
  });

  it('fields nobody declared are dropped, a __proto__ key among them: a row cannot smuggle state into a projection', () => {
    const data = JSON.parse(`{"name":"x","version":"1.0.0","reason":"r","by":"b","at":"${at}","extra":1,"__proto__":{"polluted":true}}`) as unknown;
    const e = decodeEvent(stored('ToolVersionRetired', data));
    expect(e).toEqual({ type: 'ToolVersionRetired', data: { name: 'x', version: '1.0.0', reason: 'r', by: 'b', at } });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('the change a catalogue event announces comes from the decoded event', () => {
    expect(changeOfEvent('9', samples.ToolVersionPublished)).toEqual({ type: 'catalogue.changed', position: '9', tool: 'payments.lookup', version: '1.0.0', event: 'ToolVersionPublished', at });
    expect(changeOfEvent('10', samples.ToolVersionRetired)).toMatchObject({ tool: 'payments.lookup', version: '1.0.0', event: 'ToolVersionRetired' });
  });

  it('the change message type (estate/changes) is exactly the SPEC §4 shape', () => {
    expectTypeOf<LibraryChange>().toEqualTypeOf<{
      type: 'catalogue.changed';
      position: string;
      tool: string;
      version: string;
      event: 'ToolVersionPublished' | 'ToolVersionDeprecated' | 'ToolVersionRetired';
      at: string;
    }>();
  });

  it('a reader folding the log decodes each stored event exactly once', async () => {
    const store = createMemoryEventStore();
    for (const v of ['1.0.0', '1.1.0', '1.2.0']) await store.append(toolStream('p.t'), [publishedEvent(aDefinition({ name: 'p.t', version: v }))], { expectedRevision: 'any' });
    await store.append(toolStream('p.t'), [deprecatedEvent('p.t', '1.0.0')], { expectedRevision: 'any' });
    const published = vi.spyOn(EVENT_DATA.ToolVersionPublished, 'safeParse');
    const deprecated = vi.spyOn(EVENT_DATA.ToolVersionDeprecated, 'safeParse');
    try {
      const reader = new CatalogueReader(store);
      reader.discovery.view({ tenant: 'acme', scopes: [], clearance: 'restricted' });
      await reader.catchUp();
      expect(reader.catalogue.versions('p.t').map((v) => v.status)).toEqual(['deprecated', 'active', 'active']);
      expect([published.mock.calls.length, deprecated.mock.calls.length]).toEqual([3, 1]);
    } finally {
      published.mockRestore();
      deprecated.mockRestore();
    }
  });
});
