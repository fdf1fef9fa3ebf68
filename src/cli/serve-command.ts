/**
 * Registers `estate serve`. The server itself (src/cli/serve.ts, src/compose/serve.ts and everything under src/mcp) is loaded only when the
 * verb runs, so the other verbs start without it.
 */
import { Option, type Command } from 'commander';
import { addAuthFlags } from '#auth/flags';
import { addPrincipalFlags } from './principal-flags.ts';
import { withEstate } from './run.ts';

export const registerServeCommand = (program: Command): void => {
  addAuthFlags(addPrincipalFlags(
    program
      .command('serve')
      .description('serve the catalogue over MCP (stdio or Streamable HTTP at /mcp)')
      .option('--stdio', 'serve one session over stdin/stdout (newline-delimited JSON)')
      .option('--http', 'serve Streamable HTTP at /mcp')
      .addOption(new Option('--port <port>', 'HTTP port (0 = any free port; the bound URL is logged)').default('8080'))
      .addOption(new Option('--host <host>', 'HTTP bind address (loopback only, unless authorization is configured with --auth-*)').default('127.0.0.1'))
      .option('--handlers <module>', 'ES module exporting { [handlerName]: async (args, ctx) => CallToolResult }')
      .option('--demo', 'publish the demo payments estate (idempotent) and serve it')
      .option('--allowed-hosts <names>', 'Host header names accepted, comma-separated (default: localhost,127.0.0.1,[::1])')
      .option('--upstreams <which>', 'upstream MCP servers to front: all | none | <ns,...> (default all)')
      .option('--upstream-sync-interval <duration>', 'sync every served upstream this often, e.g. 30s, 10m: 1s to 596h (default 10m; 0 = only on list_changed)')
      .option('--allowed-origins <names>', 'Origin host names accepted, comma-separated (default: localhost,127.0.0.1,[::1])')
      .option('--no-console', 'HTTP: do not serve the web console at /console/')
      .option('--console-client-id <id>', 'HTTP with --auth-*: the console signs people in at the issuer as this public OAuth client, redirect URI <console origin>/console/callback (env ESTATE_CONSOLE_CLIENT_ID)')
      .option('--console-scope <scopes>', 'HTTP with --auth-*: the scopes the console asks for, space-separated (default "estate:read estate:lifecycle"; env ESTATE_CONSOLE_SCOPE)')
      .option('--metrics-public', 'with authorization on, answer GET /metrics from any address (default: loopback only)')
      .addHelpText(
        'after',
        `
Tracing: set OTEL_EXPORTER_OTLP_ENDPOINT (e.g. http://collector:4318) to export OpenTelemetry traces by OTLP — a span
per request (parented on params._meta.traceparent), per tools/call with its gates as events, per call record and per
upstream call. The other standard OTEL_* variables (protocol, headers, service name, sampler) are honoured;
OTEL_SDK_DISABLED=true turns it off. Unset, nothing is started (docs/operations.md, "Tracing").`,
      ),
  )).action(
    withEstate(async (estate, opts, flags: import('./serve.ts').ServeFlags) => (await import('./serve.ts')).serve(estate, opts, flags)),
  );
};
