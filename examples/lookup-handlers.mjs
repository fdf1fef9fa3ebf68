// A handlers module for `estate serve --handlers examples/lookup-handlers.mjs`: plain JavaScript, no build step.
//
// The default export maps handler names (the `handler:` field of a published definition) to async functions
// `(args, ctx) => CallToolResult`. Estate has already validated (and, for side-effect-free tools, repaired) `args`
// against the published inputSchema before the handler runs, and records the call after it returns.
//
// `ctx` carries: principal {tenant, scopes, clearance, subject}, runId, tool {name, version, schemaHash},
// signal (aborted on timeout or cancellation), log (a logger), and progress/elicit/sample/listRoots helpers.

// Fake data: a real handler would ask a core-banking system here.
const PAYMENTS = {
  'PMT-771': { status: 'HELD', amount: 250000, currency: 'AED', tenant: 'acme', legs: ['ACC-1001 -> NOSTRO-AED', 'NOSTRO-AED -> ACC-2002'] },
  'PMT-772': { status: 'SETTLED', amount: 1200, currency: 'EUR', tenant: 'acme', legs: ['ACC-1001 -> ACC-3003'] },
};

export default {
  // Bound to every published version whose `handler` is `payments.lookup` (the walkthrough's lookup.yaml).
  'payments.lookup': async (args, ctx) => {
    const payment = PAYMENTS[args.reference];
    if (!payment || payment.tenant !== ctx.principal.tenant) {
      // A tool-level failure: a result with isError (the model sees it), not a protocol error.
      return { content: [{ type: 'text', text: `${args.reference}: no such payment` }], isError: true };
    }
    ctx.log.info({ reference: args.reference, version: ctx.tool.version }, 'payment looked up');
    const legs = args.include_legs === true ? `, legs: ${payment.legs.join('; ')}` : '';
    return { content: [{ type: 'text', text: `${args.reference}: ${payment.status}, ${payment.amount} ${payment.currency}${legs}` }] };
  },
};
