/**
 * `estate`: the command line (SPEC §5). Human output by default, `--json` for programs; one line on stderr for every
 * refusal or error; exit codes from ./exit.ts. Each verb is a file in ./verbs exporting `register(program)`; VERBS is
 * the one list of them (its order is the order of `estate --help`).
 */
import { Command, CommanderError, Option } from 'commander';
import { SERVER_INFO } from '#mcp/server-info';
import { stdoutTaken } from '#mcp/stdout-guard';
import { EXIT } from './exit.ts';
import { printJson } from './output.ts';
import { fail, type GlobalOptions } from './run.ts';
import * as check from './verbs/check.ts';
import * as calls from './verbs/calls.ts';
import * as copy from './verbs/copy.ts';
import * as deprecate from './verbs/deprecate.ts';
import * as diff from './verbs/diff.ts';
import * as history from './verbs/history.ts';
import * as list from './verbs/list.ts';
import * as publish from './verbs/publish.ts';
import * as replay from './verbs/replay.ts';
import * as retire from './verbs/retire.ts';
import * as serve from './verbs/serve.ts';
import * as show from './verbs/show.ts';
import * as upstream from './verbs/upstream.ts';
import * as watch from './verbs/watch.ts';

const VERBS: readonly { register(program: Command): void }[] = [publish, check, deprecate, retire, list, show, history, diff, calls, replay, serve, upstream, copy, watch];

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
estate --version prints the version.
Examples:
  estate publish tools/payments.lookup.yaml --by ci
  estate check tools/payments.lookup.yaml
  estate list --tenant acme --scopes payments.read --clearance confidential
  estate diff payments.lookup@1.0.0 tools/payments.lookup.yaml
  estate deprecate payments.lookup@1.0.0 --reason "use 2.x"
  estate serve --http --demo`,
    );
  for (const verb of VERBS) verb.register(program);
  return program;
};

/**
 * `estate list | head`: the reader went away, so nothing more can be printed: stop, as command-line tools do, instead
 * of failing on an unhandled EPIPE. A stdio server's stdout is its protocol: it stops when its client closes stdin.
 */
process.stdout.on('error', (e: NodeJS.ErrnoException) => {
  const gone = e.code === 'EPIPE' || e.code === 'ERR_STREAM_DESTROYED';
  if (!gone) throw e;
  if (!stdoutTaken()) process.exit(process.exitCode ?? EXIT.ok);
});

/**
 * `estate --version` (or `-V`) alone. Not commander's `.version()`: program options are recognised after a verb too
 * (so `estate list --json` works), and that option would take `upstream approve <ref> --version 2.0.0`'s flag.
 */
const asksVersion = (args: readonly string[]): boolean => args.length === 1 && (args[0] === '--version' || args[0] === '-V');

/** `commander.unknownOption` → `unknown-option`: a code in the style of Estate's own. */
const commanderCode = (code: string): string => code.replace(/^commander\./, '').replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);

const main = async (): Promise<void> => {
  if (asksVersion(process.argv.slice(2))) {
    console.log(SERVER_INFO.version);
    return;
  }
  const program = buildProgram();
  try {
    await program.parseAsync(process.argv);
  } catch (e) {
    if (e instanceof CommanderError) {
      // Help and version are not errors; everything commander refuses is a usage error.
      const ok = e.exitCode === 0 || e.code === 'commander.helpDisplayed' || e.code === 'commander.help';
      process.exitCode = ok ? EXIT.ok : EXIT.usage;
      // Commander said it on stderr; with --json a program also gets SPEC §5's error shape on stdout, as for any other.
      if (!ok && process.argv.includes('--json')) printJson({ error: { code: commanderCode(e.code), message: e.message.replace(/^error: /, '').replace(/\s*\n\s*/g, ' ') } });
      return;
    }
    fail(e, program.opts<GlobalOptions>());
  }
};

await main();
