/** Handlers for the demo estate, over fixed fake data. Results are plain CallToolResults. */
import type { CallToolResult, HandlerMap } from './types.ts';

interface Payment {
  status: 'HELD' | 'SETTLED' | 'CANCELLED';
  amount: number;
  currency: string;
  tenant: string;
  legs: string[];
}

const PAYMENTS: Record<string, Payment> = {
  'PMT-771': { status: 'HELD', amount: 250000, currency: 'AED', tenant: 'acme', legs: ['ACC-1001 -> NOSTRO-AED', 'NOSTRO-AED -> ACC-2002'] },
  'PMT-772': { status: 'SETTLED', amount: 1200, currency: 'EUR', tenant: 'acme', legs: ['ACC-1001 -> ACC-3003'] },
  'PMT-900': { status: 'SETTLED', amount: 99, currency: 'GBP', tenant: 'globex', legs: ['ACC-5005 -> ACC-6006'] },
};

const BALANCES: Record<string, { balance: number; currency: string }> = {
  'ACC-1001': { balance: 1_250_000, currency: 'AED' },
  'ACC-2002': { balance: 40_000, currency: 'EUR' },
  'ACC-5005': { balance: 7_300, currency: 'GBP' },
};

const RATES: Record<string, number> = { AED: 1, USD: 3.6725, EUR: 3.98, GBP: 4.62 };

const text = (t: string): CallToolResult => ({ content: [{ type: 'text', text: t }] });
const toolError = (t: string): CallToolResult => ({ content: [{ type: 'text', text: t }], isError: true });

export const demoHandlers: HandlerMap = {
  'payments.lookup': (args, ctx) => {
    const ref = String(args.reference);
    const p = PAYMENTS[ref];
    if (!p || p.tenant !== ctx.principal.tenant) return toolError(`${ref}: no such payment`);
    const legs = args.include_legs === true ? `, legs: ${p.legs.join('; ')}` : '';
    return text(`${ref}: ${p.status}, ${p.amount} ${p.currency}${legs}`);
  },
  'payments.transfer': (args, ctx) =>
    text(`transfer ${String(args.amount)} ${String(args.currency)} from ${String(args.from)} to ${String(args.to)} accepted for ${ctx.principal.tenant} (run ${ctx.runId})`),
  'payments.cancel': (args) => {
    const ref = String(args.reference);
    const p = PAYMENTS[ref];
    if (!p) return toolError(`${ref}: no such payment`);
    if (p.status === 'SETTLED') return toolError(`${ref}: already settled, cannot cancel`);
    return text(`${ref}: CANCELLED`);
  },
  'payments.export_csv': (args) => text(`date,reference,amount,currency\n${String(args.date)},PMT-771,250000,AED\n${String(args.date)},PMT-772,1200,EUR`),
  'accounts.balance': (args) => {
    const account = String(args.account);
    const b = BALANCES[account];
    if (!b) return toolError(`${account}: no such account`);
    return { content: [{ type: 'text', text: `${account}: ${b.balance} ${b.currency}` }], structuredContent: { account, balance: b.balance, currency: b.currency } };
  },
  'fx.rates': (args) => {
    const base = String(args.base);
    const quote = String(args.quote);
    const amount = typeof args.amount === 'number' ? args.amount : 1;
    const rate = (RATES[base] as number) / (RATES[quote] as number);
    return text(`${amount} ${base} = ${(amount * rate).toFixed(4)} ${quote}`);
  },
  'reports.statement': (args) => text(`Statement ${String(args.account)} ${String(args.month)}: opening 7300 GBP, 3 movements, closing 7201 GBP`),
};
