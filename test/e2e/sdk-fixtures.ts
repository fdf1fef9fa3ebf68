/**
 * Fixtures for the SDK-client end-to-end suite: a small payments estate (the deep dive's traced example plus tools the
 * principal must NOT see) and the handler module `estate serve --handlers test/e2e/sdk-fixtures.ts` binds.
 */
import type { CallToolResult, HandlerContext } from '#handlers/types';
import { tracedExampleSchema } from '../fixtures/builders.ts';

/** The principal every SDK test serves: holds payments.read, cleared to confidential, tenant acme. */
export const PRINCIPAL_FLAGS = ['--tenant', 'acme', '--scopes', 'payments.read', '--clearance', 'confidential', '--subject', 'sdk-e2e'];

const access = (over: Record<string, unknown> = {}) => ({ requiredScopes: ['payments.read'], tenants: [], classification: 'confidential', ...over });

const lookupSchema = structuredClone(tracedExampleSchema);

/** payments.lookup 1.0.0: the traced example's contract. */
export const lookupV1 = {
  name: 'payments.lookup',
  version: '1.0.0',
  title: 'Look up a payment',
  description: 'Returns status, amount and currency of a payment by reference.',
  inputSchema: lookupSchema,
  access: access(),
  sideEffect: 'none',
  handler: 'payments.lookup',
};

/** payments.lookup 1.1.0: an optional property added (MINOR), so an unpinned call runs 1.1.0. */
export const lookupV11 = {
  ...lookupV1,
  version: '1.1.0',
  inputSchema: { ...lookupSchema, properties: { ...lookupSchema.properties, as_of: { type: 'string', format: 'date' } } },
};

/** Tools the principal must not discover: a missing scope, another tenant, a higher classification. */
export const hiddenTools = [
  { ...lookupV1, name: 'payments.refund', title: 'Refund', description: 'Refunds a payment.', access: access({ requiredScopes: ['payments.read', 'payments.write'] }), sideEffect: 'non_idempotent', handler: 'payments.refund' },
  { ...lookupV1, name: 'globex.ledger', title: 'Globex ledger', description: 'Globex only.', access: access({ tenants: ['globex'] }), handler: 'globex.ledger' },
  { ...lookupV1, name: 'treasury.positions', title: 'Positions', description: 'Restricted.', access: access({ classification: 'restricted' }), handler: 'treasury.positions' },
];

/** Published from another process while a client is connected: its list must change. */
export const statusTool = {
  ...lookupV1,
  name: 'payments.status',
  title: 'Payment status',
  description: 'Returns the status of a payment.',
  handler: 'payments.lookup',
};

const text = (t: string): CallToolResult => ({ content: [{ type: 'text', text: t }] });

export const handlers = {
  // Logs and reports progress on every call, so the fuzz suites also see what the server sends the client unasked.
  'payments.lookup': (args: Record<string, unknown>, ctx: HandlerContext) => {
    ctx.log.info('looking up a payment', { reference: String(args.reference).slice(0, 40) });
    ctx.progress?.(1, 1);
    return text(`${String(args.reference)}: HELD, 250000 AED (served by ${ctx.tool.name}@${ctx.tool.version})`);
  },
  'payments.refund': () => text('refunded'),
  // Bound, so the hidden tools are hidden by their access rules alone (a handler must be in its tool's namespace).
  'globex.ledger': () => text('globex ledger'),
  'treasury.positions': () => text('positions'),
};

export default handlers;
