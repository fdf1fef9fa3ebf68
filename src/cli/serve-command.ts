/** `estate serve`: registered here; the MCP server itself lives in src/mcp. */
import type { Command } from 'commander';
import { DomainError } from '../domain/errors.ts';
import { withEstate } from './main.ts';

export const registerServeCommand = (program: Command): void => {
  program
    .command('serve')
    .description('serve the catalogue over MCP (stdio or Streamable HTTP)')
    .option('--stdio', 'serve one session over stdin/stdout')
    .option('--http', 'serve Streamable HTTP at /mcp')
    .action(
      withEstate(async () => {
        throw new DomainError('usage', 'not-available', 'serve: the MCP server is not built yet');
      }),
    );
};
