/**
 * `estate`: the command line (SPEC §5). Human output by default, `--json` for programs; one line on stderr for every
 * refusal or error; exit codes from ./exit.ts.
 */
import { Command, CommanderError, Option } from 'commander';
import { loadConfig } from '../config.ts';
import { DomainError } from '../domain/errors.ts';
import { openEstate, type Estate } from '../main.ts';
import { errorJson, EXIT, exitCodeOf } from './exit.ts';
import { registerCatalogueCommands } from './catalogue-commands.ts';
import { registerServeCommand } from './serve-command.ts';

export interface GlobalOptions {
  json?: boolean;
  store?: string;
  bus?: string;
  by?: string;
}

/** Run an action with an opened estate; map every error to its exit code and one stderr line. */
export const withEstate =
  <A extends unknown[]>(action: (estate: Estate, opts: GlobalOptions, ...args: A) => Promise<number | void>) =>
  async (...args: A): Promise<void> => {
    const cmd = args[args.length - 1] as Command;
    const opts = cmd.optsWithGlobals<GlobalOptions>();
    let estate: Estate | undefined;
    try {
      estate = await openEstate(loadConfig({ ...(opts.store ? { store: opts.store } : {}), ...(opts.bus ? { bus: opts.bus } : {}), ...(opts.by ? { by: opts.by } : {}) }));
      const code = await action(estate, opts, ...args);
      process.exitCode = code ?? EXIT.ok;
    } catch (e) {
      fail(e, opts);
    } finally {
      await estate?.close().catch(() => undefined);
    }
  };

export const fail = (e: unknown, opts: GlobalOptions): void => {
  const code = exitCodeOf(e);
  const message = e instanceof Error ? e.message : String(e);
  const prefix = e instanceof DomainError ? `estate: ${e.kind === 'not-found' ? 'not found' : e.kind === 'usage' ? 'error' : 'refused'}` : 'estate: error';
  console.error(`${prefix}: ${message}`);
  if (code === EXIT.other && e instanceof Error && process.env.ESTATE_DEBUG) console.error(e.stack);
  if (opts.json) printJson(errorJson(e));
  process.exitCode = code;
};

export const printJson = (value: unknown): void => {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
};

export const buildProgram = (): Command => {
  const program = new Command('estate')
    .description('Estate: an event-sourced catalogue of MCP tools — publish immutable tool contracts, discover, serve, audit.')
    .option('--json', 'machine-readable output on stdout')
    .addOption(new Option('--store <url>', 'event store: sqlite:<path> | memory: | postgres://... | kurrentdb://... (env ESTATE_STORE, default sqlite:.estate/estate.db)'))
    .addOption(new Option('--bus <url>', 'change bus: local | kafka://host:port[,host:port] (env ESTATE_BUS, default local)'))
    .showHelpAfterError('(run estate --help for usage)')
    .exitOverride()
    .configureOutput({ writeErr: (s) => process.stderr.write(s) })
    .addHelpText(
      'after',
      `
Exit codes: 0 ok (also "unchanged"), 2 usage error or unreadable file, 3 refused by a rule, 4 not found, 1 anything else.
Examples:
  estate publish tools/payments.lookup.yaml --by ci
  estate check tools/payments.lookup.yaml
  estate list --tenant acme --scopes payments.read --clearance confidential
  estate diff payments.lookup@1.0.0 tools/payments.lookup.yaml
  estate deprecate payments.lookup@1.0.0 --reason "use 2.x"
  estate serve --http --demo`,
    );
  registerCatalogueCommands(program);
  registerServeCommand(program);
  return program;
};

const main = async (): Promise<void> => {
  const program = buildProgram();
  try {
    await program.parseAsync(process.argv);
  } catch (e) {
    if (e instanceof CommanderError) {
      // Help and version are not errors; everything commander refuses is a usage error.
      process.exitCode = e.exitCode === 0 || e.code === 'commander.helpDisplayed' || e.code === 'commander.help' ? EXIT.ok : EXIT.usage;
      return;
    }
    fail(e, program.opts<GlobalOptions>());
  }
};

await main();
