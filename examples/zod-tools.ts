// Tools defined in code with zod, for `estate publish --module examples/zod-tools.ts`.
//
// Estate converts `input`/`output` to JSON Schema 2020-12 with zod's own converter at publish time, then publishes each
// tool through the guard like a definition file: publishing again with no change answers `unchanged`, and a breaking
// change to a schema (a field removed, a new required field, a narrowed type) without a major version is refused.
import { z } from 'zod';
import { defineTools } from 'estate';

export const tools = defineTools([
  {
    name: 'payments.quote',
    version: '1.0.0',
    title: 'Quote an FX conversion',
    description: 'Returns an indicative rate to convert an amount between two currencies.',
    input: z.object({
      amount: z.number().positive().describe('Amount in the source currency, minor units not allowed'),
      from: z.string().regex(/^[A-Z]{3}$/).describe('ISO 4217 source currency'),
      to: z.string().regex(/^[A-Z]{3}$/).describe('ISO 4217 target currency'),
    }).strict(),
    output: z.object({ rate: z.number(), converted: z.number() }),
    access: { requiredScopes: ['payments.read'], tenants: [], classification: 'internal' },
    sideEffect: 'none',
    handler: 'payments.quote',
  },
]);
