/** The --demo estate goes through the normal publish path, so a second run changes nothing; it covers the cases. */
import { describe, expect, it } from 'vitest';
import { CommandHandler } from '#app/command-handler';
import { createSchemaCompiler } from '#domain/schema-compiler';
import { validateDefinition } from '#domain/tool-definition';
import { CLASSIFICATIONS } from '#domain/types';
import { demoHandlers, seedDemoEstate } from '#handlers/demo';
import { DEMO_DEFINITIONS, DEMO_DEPRECATIONS } from '#handlers/demo-estate';
import { createMemoryEventStore } from '#store/memory-event-store';

describe('demo estate', () => {
  it('publishes once; a second run appends nothing', async () => {
    const store = createMemoryEventStore();
    const deps = { store, commands: new CommandHandler({ store }), compiler: createSchemaCompiler() };
    const first = await seedDemoEstate(deps);
    expect(first.published).toHaveLength(DEMO_DEFINITIONS.length);
    expect(first.deprecated).toEqual(DEMO_DEPRECATIONS.map((d) => `${d.name}@${d.version}`));
    const count = (await store.readAll({ limit: 10_000 })).length;
    const second = await seedDemoEstate(deps);
    expect(second).toEqual({ published: [], unchanged: first.published, deprecated: [] });
    expect((await store.readAll({ limit: 10_000 })).length).toBe(count);
  });

  it('covers every classification, two tenants, every side effect, an outputSchema, and binds every handler', () => {
    const compiler = createSchemaCompiler();
    const defs = DEMO_DEFINITIONS.map((d) => validateDefinition(d, compiler));
    expect(new Set(defs.map((d) => d.access.classification))).toEqual(new Set(CLASSIFICATIONS));
    expect(new Set(defs.flatMap((d) => d.access.tenants))).toEqual(new Set(['acme', 'globex']));
    expect(new Set(defs.map((d) => d.sideEffect))).toEqual(new Set(['none', 'idempotent', 'non_idempotent']));
    expect(defs.some((d) => d.outputSchema)).toBe(true);
    expect(new Set(defs.map((d) => d.name.split('.')[0])).size).toBeGreaterThan(2);
    for (const d of defs) expect(demoHandlers[d.handler], d.handler).toBeTypeOf('function');
    const lookup = defs.find((d) => d.name === 'payments.lookup');
    expect(lookup?.inputSchema).toMatchObject({
      properties: { reference: { type: 'string', pattern: '^PMT-\\d{3,}$' }, include_legs: { type: 'boolean' } },
      additionalProperties: false,
    });
  });
});
