// A handler module written in TypeScript, typed by the package: `estate serve --handlers examples/handlers.ts`.
//
// It binds `payments.quote`, the tool `examples/zod-tools.ts` defines with zod (publish it with
// `estate publish --module examples/zod-tools.ts`). Estate has validated the arguments against the published schema
// before the handler runs, so `args` has the declared shape; `z.infer` gives it its static type.
import type { z } from 'zod';
import { defineHandlers, type CallToolResult, type HandlerContext } from 'estate';
import type { tools } from './zod-tools.ts';

type QuoteArgs = z.infer<(typeof tools)[0]['input']>;

// Fake rates: a real handler would ask a pricing service here.
const RATES: Record<string, number> = { 'AED/EUR': 0.25, 'EUR/AED': 4, 'EUR/USD': 1.08, 'USD/EUR': 0.93 };

export default defineHandlers({
  'payments.quote': async (raw: Record<string, unknown>, ctx: HandlerContext): Promise<CallToolResult> => {
    const args = raw as QuoteArgs;
    const rate = RATES[`${args.from}/${args.to}`];
    if (rate === undefined) return { content: [{ type: 'text', text: `no rate for ${args.from}/${args.to}` }], isError: true };
    ctx.log.info('quoted', { pair: `${args.from}/${args.to}`, version: ctx.tool.version });
    const converted = Math.round(args.amount * rate * 100) / 100;
    return {
      content: [{ type: 'text', text: `${args.amount} ${args.from} = ${converted} ${args.to} at ${rate}` }],
      structuredContent: { rate, converted },
    };
  },
});
