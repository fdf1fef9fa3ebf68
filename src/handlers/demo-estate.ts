/**
 * The `--demo` payments estate (SPEC §6): fake data, several namespaces, scopes, two tenants, every classification,
 * every side-effect policy, an outputSchema, a deprecated-only tool, and the deep dive's traced `payments.lookup`.
 */
export const DEMO_PUBLISHER = 'estate-demo';

const obj = (properties: Record<string, unknown>, required: string[] = []) => ({ type: 'object', properties, required, additionalProperties: false });

export const DEMO_DEFINITIONS: Record<string, unknown>[] = [
  {
    name: 'payments.lookup',
    version: '1.0.0',
    title: 'Look up a payment',
    description: 'Returns status, amount and currency of a payment by reference.',
    inputSchema: obj(
      {
        reference: { type: 'string', pattern: '^PMT-\\d{3,}$', description: 'Payment reference, e.g. PMT-771' },
        include_legs: { type: 'boolean', default: false, description: 'Include the settlement legs' },
      },
      ['reference'],
    ),
    access: { requiredScopes: ['payments.read'], tenants: ['acme', 'globex'], classification: 'confidential' },
    sideEffect: 'none',
    handler: 'payments.lookup',
    timeoutMs: 5000,
  },
  {
    name: 'payments.transfer',
    version: '1.0.0',
    title: 'Transfer money',
    description: 'Moves an amount between two accounts of the caller\'s tenant. Not idempotent: never retried.',
    inputSchema: obj(
      {
        from: { type: 'string', pattern: '^ACC-\\d{4}$' },
        to: { type: 'string', pattern: '^ACC-\\d{4}$' },
        amount: { type: 'integer', minimum: 1 },
        currency: { type: 'string', enum: ['AED', 'EUR', 'GBP', 'USD'] },
      },
      ['from', 'to', 'amount', 'currency'],
    ),
    annotations: { destructiveHint: true },
    access: { requiredScopes: ['payments.write'], tenants: ['acme'], classification: 'restricted' },
    sideEffect: 'non_idempotent',
    handler: 'payments.transfer',
  },
  {
    name: 'payments.cancel',
    version: '1.0.0',
    title: 'Cancel a held payment',
    description: 'Cancels a payment that is still HELD. Cancelling twice is harmless.',
    inputSchema: obj({ reference: { type: 'string', pattern: '^PMT-\\d{3,}$' } }, ['reference']),
    access: { requiredScopes: ['payments.write'], tenants: ['acme', 'globex'], classification: 'confidential' },
    sideEffect: 'idempotent',
    handler: 'payments.cancel',
  },
  {
    name: 'payments.export_csv',
    version: '1.0.0',
    title: 'Export payments as CSV',
    description: 'Exports a day of payments as CSV text. Deprecated: use reports.statement.',
    inputSchema: obj({ date: { type: 'string', format: 'date' } }, ['date']),
    access: { requiredScopes: ['payments.read'], tenants: [], classification: 'internal' },
    sideEffect: 'none',
    handler: 'payments.export_csv',
  },
  {
    name: 'accounts.balance',
    version: '1.0.0',
    title: 'Account balance',
    description: 'The booked balance of one account.',
    inputSchema: obj({ account: { type: 'string', pattern: '^ACC-\\d{4}$' } }, ['account']),
    outputSchema: {
      type: 'object',
      properties: { account: { type: 'string' }, balance: { type: 'integer' }, currency: { type: 'string' } },
      required: ['account', 'balance', 'currency'],
    },
    access: { requiredScopes: ['accounts.read'], tenants: [], classification: 'internal' },
    sideEffect: 'none',
    handler: 'accounts.balance',
  },
  {
    name: 'fx.rates',
    version: '1.0.0',
    title: 'FX reference rates',
    description: 'Reference exchange rate between two currencies (fake, fixed data).',
    inputSchema: obj(
      {
        base: { type: 'string', enum: ['AED', 'EUR', 'GBP', 'USD'] },
        quote: { type: 'string', enum: ['AED', 'EUR', 'GBP', 'USD'] },
        amount: { type: 'number', exclusiveMinimum: 0, default: 1 },
      },
      ['base', 'quote'],
    ),
    access: { requiredScopes: [], tenants: [], classification: 'public' },
    sideEffect: 'none',
    handler: 'fx.rates',
  },
  {
    name: 'reports.statement',
    version: '1.0.0',
    title: 'Monthly statement',
    description: 'A month\'s statement for one account, as text.',
    inputSchema: obj({ account: { type: 'string', pattern: '^ACC-\\d{4}$' }, month: { type: 'string', pattern: '^\\d{4}-\\d{2}$' } }, ['account', 'month']),
    access: { requiredScopes: ['reports.read'], tenants: ['globex'], classification: 'confidential' },
    sideEffect: 'none',
    handler: 'reports.statement',
  },
];

/** Versions the demo deprecates after publishing (only if still active, so a second run changes nothing). */
export const DEMO_DEPRECATIONS: { name: string; version: string; reason: string }[] = [
  { name: 'payments.export_csv', version: '1.0.0', reason: 'use reports.statement' },
];
