/** `estate publish --module <file>`: tools defined with zod, JSON Schema generated at publish, through the guard. */
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTempStore, runCli, type TempStore } from './helpers.ts';

const fixture = (name: string): string => fileURLToPath(new URL(`../fixtures/zod-modules/${name}`, import.meta.url));

describe('estate publish --module', () => {
  let store: TempStore;
  beforeAll(() => {
    store = makeTempStore('estate-module-');
  });
  afterAll(() => store?.cleanup());

  it('publishes a zod-defined tool with its JSON Schema 2020-12; a second run answers unchanged', async () => {
    const first = await runCli(['publish', '--module', fixture('quote-v1.ts'), '--store', store.store, '--json']);
    expect(first.code, first.stderr).toBe(0);
    expect((JSON.parse(first.stdout) as { results: { result: string }[] }).results.map((r) => r.result)).toEqual(['published']);
    const shown = await runCli(['show', 'payments.quote@1.0.0', '--store', store.store, '--json']);
    const def = JSON.parse(shown.stdout) as { inputSchema: Record<string, unknown>; outputSchema: Record<string, unknown> };
    expect(def.inputSchema).toMatchObject({
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      type: 'object',
      properties: { amount: { type: 'number', exclusiveMinimum: 0 }, from: { type: 'string', minLength: 3, maxLength: 3 } },
      required: ['amount', 'from', 'to'],
    });
    expect(def.outputSchema).toMatchObject({ type: 'object', properties: { rate: { type: 'number' } } });
    const again = await runCli(['publish', '--module', fixture('quote-v1.ts'), '--store', store.store]);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toMatch(/^unchanged: payments\.quote@1\.0\.0/);
  });

  it('refuses a breaking zod change published as a minor version', async () => {
    const r = await runCli(['publish', '--module', fixture('quote-v1.1-breaking.ts'), '--store', store.store]);
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(/refused: payments\.quote@1\.1\.0: .*required/i);
  });

  it('refuses a zod schema JSON Schema cannot express, naming the field', async () => {
    const r = await runCli(['publish', '--module', fixture('unrepresentable.mjs'), '--store', store.store]);
    expect(r.code).toBe(3);
    expect(r.stderr).toContain('payments.schedule: input at properties.when.properties.at: a zod date cannot be expressed in JSON Schema');
  });

  it('a module without a tools export, or with a non-zod input, is a clear error', async () => {
    const none = await runCli(['publish', '--module', fixture('no-tools.mjs'), '--store', store.store]);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain("no-tools.mjs: the module has no 'tools' export");
    const raw = await runCli(['publish', '--module', fixture('not-zod.mjs'), '--store', store.store]);
    expect(raw.code).toBe(3);
    expect(raw.stderr).toContain("tools[0] (payments.raw): 'input' must be a zod schema");
    const missing = await runCli(['publish', '--module', fixture('nope.mjs'), '--store', store.store]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/cannot read .*nope\.mjs: no such file/);
    const both = await runCli(['publish', fixture('nope.json'), '--module', fixture('quote-v1.ts'), '--store', store.store]);
    expect(both.code).toBe(2);
    const remote = await runCli(['publish', '--module', fixture('quote-v1.ts'), '--server', 'http://127.0.0.1:9/']);
    expect(remote.code).toBe(2);
    expect(remote.stderr).toContain('--module publishes into a store; it does not combine with --server');
  });
});
