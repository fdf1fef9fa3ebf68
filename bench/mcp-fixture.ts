/**
 * The tool set of the MCP serving bench (bench/mcp.ts): 1,000 copies of one payment lookup, as Estate definitions
 * (JSON Schema 2020-12) and, in mcp-sdk-server.ts, as the same shapes in Zod; and the one cheap handler both run.
 */

export const TOOL_COUNT = 1000;

export const toolName = (i: number): string => `bench.tool_${String(i).padStart(4, '0')}`;
export const VALID_ARGS = { reference: 'PMT-771', amount: 12.5, currency: 'EUR', include_legs: true };

/** The one handler both servers run: cheap, so the figures are about the serving path. */
export const lookup = (args: Record<string, unknown>) => ({
  content: [{ type: 'text' as const, text: `payment ${String(args.reference)}: settled` }],
});


export const inputSchema = {
  type: 'object',
  properties: {
    reference: { type: 'string', pattern: '^PMT-\\d{3,}$', description: 'Payment reference' },
    amount: { type: 'number', minimum: 0 },
    currency: { type: 'string', enum: ['EUR', 'USD', 'GBP'] },
    include_legs: { type: 'boolean', default: false },
  },
  required: ['reference'],
  additionalProperties: false,
};

export const definition = (i: number) => ({
  name: toolName(i),
  version: '1.0.0',
  title: `Bench tool ${i}`,
  description: `Looks up a payment (bench tool ${i}).`,
  inputSchema,
  access: { requiredScopes: [], tenants: [], classification: 'public' },
  sideEffect: 'none',
  handler: 'bench.lookup',
});
