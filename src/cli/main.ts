/**
 * `estate`: the command line (SPEC §5). Human output by default, `--json` for programs; one line on stderr for every
 * refusal or error; exit codes from ./exit.ts.
 */
import { Command, CommanderError, Option } from 'commander';
import { registerCatalogueCommands } from './catalogue-commands.ts';
import { EXIT } from './exit.ts';
import { fail, type GlobalOptions } from './run.ts';
import { registerServeCommand } from './serve-command.ts';
import { registerUpstreamCommands } from './upstream-commands.ts';
import { register as registerCopy } from './verbs/copy.ts';
import { register as registerWatch } from './verbs/watch.ts';

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
  registerUpstreamCommands(program);
  registerCopy(program);
  registerWatch(program);
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
