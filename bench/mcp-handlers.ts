/** Estate's handler module for the MCP serving bench (`estate serve --handlers bench/mcp-handlers.ts`). */
import { lookup } from './mcp-fixture.ts';

export const handlers = { 'bench.lookup': async (args: Record<string, unknown>) => lookup(args) };
