/**
 * The deep dive's ten invariants (seeds, §8), each asserted here in one place against the real code. Several are also
 * covered in depth elsewhere (named per test); this file is the checklist a reader can hold the system to.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { makePrincipal } from '#domain/access';
import { canonicalHash } from '#domain/hash';
import { decidePublish, evolve, initialToolState } from '#domain/guard';
import { repair } from '#domain/repair';
import { createSchemaCompiler } from '#domain/schema-compiler';
import { RETRYABLE, SIDE_EFFECTS } from '#domain/types';
import type { HandlerMap } from '#handlers/types';
import { CatalogueProjection } from '#projections/catalogue';
import { discoverNaive } from '#projections/discovery';
import { aDefinition, deprecatedEvent, paymentsLookupSchema, publishedEvent, retiredEvent } from '../fixtures/builders.ts';
import { errorOf, makeHarness, resultOf } from '../fixtures/handlers/harness.ts';

const reader = makePrincipal({ tenant: 'acme', scopes: ['payments.read'], clearance: 'confidential' });
const lookup = aDefinition({ access: { requiredScopes: ['payments.read'], tenants: ['acme'], classification: 'confidential' } });
const handlers: HandlerMap = { 'payments.lookup': () => ({ content: [{ type: 'text', text: 'PMT-771: HELD, 250000 AED' }] }) };

describe('the ten invariants', () => {
  it('1. a notification never produces a response', async () => {
    const h = await makeHarness([lookup], handlers);
    const s = h.session(reader);
    expect(await s.send({ jsonrpc: '2.0', method: 'notifications/initialized' })).toBeNull(); // even before initialize
    await s.initialize();
    for (const method of ['notifications/initialized', 'notifications/cancelled', 'notifications/unknown', 'notifications/tools/list_changed']) {
      expect(await s.send({ jsonrpc: '2.0', method, params: { requestId: 1 } })).toBeNull();
    }
  });

  it('2. a schema violation leaves the call log untouched', async () => {
    const h = await makeHarness([lookup], handlers);
    const s = h.session(reader);
    await s.initialize();
    const bad = resultOf(await s.request('tools/call', { name: 'payments.lookup', arguments: { reference: 'PMT771' }, _meta: { 'io.estate/runId': 'inv-2' } }));
    expect(bad.isError).toBe(true);
    expect(await h.calls('inv-2')).toEqual([]);
    const good = resultOf(await s.request('tools/call', { name: 'payments.lookup', arguments: { reference: 'PMT-771' }, _meta: { 'io.estate/runId': 'inv-2' } }));
    expect(good.isError).toBeFalsy();
    expect((await h.calls('inv-2')).map((c) => [c.tool, c.version, c.outcome])).toEqual([['payments.lookup', '1.0.0', 'ok']]);
  });

  it('2b. the call record names the version, its schema hash, and the hash of the arguments AS RECEIVED (before repair)', async () => {
    const h = await makeHarness([lookup], handlers);
    const s = h.session(reader);
    await s.initialize();
    const received = { reference: 'PMT-771', include_legs: 'true', urgent: true };
    const r = resultOf(await s.request('tools/call', { name: 'payments.lookup', arguments: received, _meta: { 'io.estate/runId': 'inv-2b' } }));
    expect(r.isError).toBeFalsy();
    const [call] = await h.calls('inv-2b');
    expect(call).toMatchObject({ tool: 'payments.lookup', version: '1.0.0', schemaHash: canonicalHash(lookup.inputSchema), argsHash: canonicalHash(received), repaired: true, outcome: 'ok' });
    expect(call?.repairs).toEqual([
      { path: '$.urgent', action: 'dropped' },
      { path: '$.include_legs', action: 'coerced' },
    ]);
  });

  it('3. an unentitled tool and a nonexistent tool produce the same error', async () => {
    const h = await makeHarness([lookup], handlers);
    const outsider = h.session(makePrincipal({ tenant: 'globex', scopes: ['payments.read'], clearance: 'confidential' }));
    await outsider.initialize();
    const unentitled = errorOf(await outsider.request('tools/call', { name: 'payments.lookup', arguments: {} }));
    const missing = errorOf(await outsider.request('tools/call', { name: 'payments.lookup2', arguments: {} }));
    expect(unentitled).toEqual({ code: -32602, message: 'Unknown tool: payments.lookup' });
    expect(missing).toEqual({ code: -32602, message: 'Unknown tool: payments.lookup2' });
  });

  it('4. a listed tool carries exactly the revision\'s Tool fields and never an access field (mcp-tools.test.ts covers every revision)', async () => {
    const h = await makeHarness([lookup], handlers);
    const s = h.session(reader);
    await s.initialize('2025-11-25');
    const [tool] = resultOf(await s.request('tools/list')).tools as Record<string, unknown>[];
    expect(Object.keys(tool ?? {}).sort()).toEqual(['_meta', 'annotations', 'description', 'inputSchema', 'name', 'title']);
  });

  it('5. validation errors are sorted by (path, message), whatever the key order of the input (validate.test.ts: the property)', () => {
    const compiled = createSchemaCompiler().compile(structuredClone(paymentsLookupSchema) as never);
    const lines = compiled.validate({ urgent: true, include_legs: 'yes', reference: 'PMT771' }).map((e) => `${e.path}: ${e.message}`);
    expect(lines).toEqual([...lines].sort());
    expect(lines).toEqual([
      '$.include_legs: expected type boolean, got string',
      "$.reference: does not match pattern '^PMT-\\d{3,}$'",
      '$.urgent: additional property is not allowed',
    ]);
  });

  it('6. a published (name, version) is never mutated or replaced (guard.test.ts: immutability)', () => {
    const state = [publishedEvent(lookup)].reduce(evolve, initialToolState(lookup.name));
    const other = { ...lookup, description: 'something else' };
    const v = decidePublish({ type: 'Publish', definition: other, definitionHash: canonicalHash(other), schemaHash: canonicalHash(other.inputSchema), by: 't', at: 'now' }, state);
    expect(v.result).toBe('refused');
    expect(v.events).toEqual([]);
  });

  it('7. latest() never returns a deprecated or retired version; resolve() never a retired one (catalogue.test.ts: the property)', () => {
    const c = new CatalogueProjection();
    [publishedEvent(aDefinition({ version: '1.0.0' })), publishedEvent(aDefinition({ version: '2.0.0' })), deprecatedEvent(lookup.name, '2.0.0'), retiredEvent(lookup.name, '1.0.0')].forEach((event, i) =>
      c.apply({ position: String(i), event }),
    );
    expect(c.latest(lookup.name)).toBeUndefined();
    expect(c.resolve(lookup.name, '1.0.0')).toBeUndefined();
    expect(c.resolve(lookup.name, '2.0.0')?.status).toBe('deprecated');
  });

  it('8. discovery returns at most one version per tool, in sorted name order', () => {
    const c = new CatalogueProjection();
    ['b.tool', 'a.tool', 'c.tool'].flatMap((name) => ['1.0.0', '1.1.0'].map((version) => publishedEvent(aDefinition({ name, version })))).forEach((event, i) => c.apply({ position: String(i), event }));
    const out = discoverNaive(c, reader);
    expect(out.map((v) => `${v.name}@${v.version}`)).toEqual(['a.tool@1.1.0', 'b.tool@1.1.0', 'c.tool@1.1.0']);
  });

  it('9. repair is idempotent (repair.test.ts: the property over random inputs)', () => {
    const compiled = createSchemaCompiler().compile(structuredClone(paymentsLookupSchema) as never);
    fc.assert(
      fc.property(fc.dictionary(fc.constantFrom('reference', 'include_legs', 'urgent', 'x'), fc.oneof(fc.string(), fc.boolean(), fc.constantFrom('true', 'false', '42'))), (args) => {
        const once = repair(compiled, args);
        const twice = repair(compiled, once.value);
        expect(twice.value).toEqual(once.value);
        expect(twice.changes).toEqual([]);
      }),
    );
  });

  it('10. RETRYABLE covers every SideEffect member', () => {
    expect(Object.keys(RETRYABLE).sort()).toEqual([...SIDE_EFFECTS].sort());
    expect(RETRYABLE).toEqual({ none: true, idempotent: true, non_idempotent: false });
  });
});
