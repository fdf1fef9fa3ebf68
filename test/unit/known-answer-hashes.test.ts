/**
 * Known-answer hashes: schemaHash, definitionHash and argsHash of one fixed fixture equal hex strings computed
 * OUTSIDE Estate — RFC 8785 canonical JSON, SHA-256 — so a change to canonicalisation or to what is hashed is caught
 * (a value computed by the same function would agree with any such change). Computed once with Python, whose
 * `json.dumps(v, sort_keys=True, separators=(',', ':'), ensure_ascii=False)` is RFC 8785 for values like these
 * (ASCII keys, integers and short decimals), then `hashlib.sha256(text.encode('utf-8')).hexdigest()`; the args hash
 * also with `printf '%s' '{"include_legs":"true","reference":"PMT-771","urgent":true}' | openssl dgst -sha256`.
 */
import { describe, expect, it } from 'vitest';
import { CommandHandler } from '#app/command-handler';
import { makePrincipal } from '#domain/access';
import { toolStream } from '#domain/events';
import { canonicalJson } from '#domain/hash';
import type { ToolDefinition } from '#domain/types';
import { createMemoryEventStore } from '#store/memory-event-store';
import { makeHarness, resultOf } from '../fixtures/handlers/harness.ts';

const schema = {
  type: 'object',
  properties: {
    reference: { type: 'string', pattern: '^PMT-\\d{3,}$', description: 'Zahlungsreferenz (é)' },
    include_legs: { type: 'boolean', default: false },
    amount: { type: 'number', minimum: 0.5 },
  },
  required: ['reference'],
  additionalProperties: false,
};
const definition = {
  name: 'payments.lookup',
  version: '1.0.0',
  title: 'Look up a payment',
  description: 'Returns status, amount and currency of a payment by reference.',
  inputSchema: schema,
  access: { requiredScopes: ['payments.read'], tenants: ['acme'], classification: 'confidential' },
  sideEffect: 'none',
  handler: 'payments.lookup',
  timeoutMs: 30000,
} as unknown as ToolDefinition;
const args = { reference: 'PMT-771', include_legs: 'true', urgent: true };

const SCHEMA_HASH = 'c17c7c898c7b8a1d3b1d935543d09b1362495bf1dbabfcd156801d300e17332b';
const DEFINITION_HASH = '238e61fcf79274cc69c1c1f1884bde87df66ed3650ea09a99dae68f07d327cd6';
const ARGS_HASH = '6a0cedc089349b1d32211ae6566ff817e3721723e78caeb565646c306c6655ec';

describe('known-answer hashes (RFC 8785 + SHA-256, computed outside Estate)', () => {
  it('canonical JSON of the schema is the RFC 8785 text', () => {
    expect(canonicalJson(schema)).toBe(
      '{"additionalProperties":false,"properties":{"amount":{"minimum":0.5,"type":"number"},"include_legs":{"default":false,"type":"boolean"},"reference":{"description":"Zahlungsreferenz (é)","pattern":"^PMT-\\\\d{3,}$","type":"string"}},"required":["reference"],"type":"object"}',
    );
  });

  it('a publish records schemaHash and definitionHash equal to the known answers', async () => {
    const store = createMemoryEventStore();
    await new CommandHandler({ store }).publish(structuredClone(definition), 'test');
    const [published] = await store.readStream(toolStream('payments.lookup'));
    expect(published?.data).toMatchObject({ schemaHash: SCHEMA_HASH, definitionHash: DEFINITION_HASH });
  });

  it('a tools/call records argsHash of the arguments as received (before repair) and the schemaHash', async () => {
    const h = await makeHarness([structuredClone(definition)], { 'payments.lookup': () => ({ content: [] }) });
    const s = h.session(makePrincipal({ tenant: 'acme', scopes: ['payments.read'], clearance: 'confidential' }), 'run-kat');
    await s.initialize();
    resultOf(await s.request('tools/call', { name: 'payments.lookup', arguments: args }));
    expect((await h.calls('run-kat'))[0]).toMatchObject({ argsHash: ARGS_HASH, schemaHash: SCHEMA_HASH, repaired: true });
  });
});
