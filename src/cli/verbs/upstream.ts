/** `estate upstream add|list|sync|drift|approve|reject|remove` (SPEC §7): the JSON shapes and exit codes of SPEC §5. */
import { upstreamEnvironment } from '#config';
import { Option, type Command } from 'commander';
import { verdictJson } from '#app/results-json';
import { DomainError } from '#domain/errors';
import { CLASSIFICATIONS } from '#domain/types';
import type { Estate } from '#compose/estate';
import { AnswerBudget } from '#upstream/answer-budget';
import { describeTarget, UpstreamRegistry } from '#upstream/registry';
import { accessOverrides, defaultAccessFromFlags, targetFromFlags, type AccessFlags, type TargetFlags } from '#upstream/target-flags';
import { EXIT } from '../exit.ts';
import { approvedLine, noPendingLine, pendingLines, printJson, refusalLine, registeredLine, rejectedLine, removedLine, say, syncLines, upstreamRow } from '../output.ts';
import { parseToolRef } from '../ref.ts';
import { withEstate } from '../run.ts';

const registryOf = (estate: Estate): UpstreamRegistry => new UpstreamRegistry({ store: estate.store, commands: estate.commands, definitions: estate.definitions });

const collect = (v: string, prev: string[] = []): string[] => [...prev, v];

const addAccessFlags = (cmd: Command, what: string): Command =>
  cmd
    .option('--tenants <tenants>', `${what}: tenants, comma-separated (none: every tenant)`)
    .option('--scopes <scopes>', `${what}: required scopes, comma-separated`)
    .addOption(new Option('--clearance <level>', `${what}: classification`).choices([...CLASSIFICATIONS]));

/** Connect, list every page, record what changed; the connection is closed whatever happens. */
const syncOnce = async (estate: Estate, ns: string) => {
  const registry = registryOf(estate);
  const { state } = await registry.active(ns);
  // The MCP client is loaded by the verbs that connect, not by every `estate` command (nor `estate serve`).
  const { describeFailure, openUpstream } = await import('#upstream/connection');
  let session: Awaited<ReturnType<typeof openUpstream>>;
  let tools: Awaited<ReturnType<typeof session.listTools>>;
  try {
    session = await openUpstream(ns, state.target, upstreamEnvironment());
  } catch (e) {
    if (e instanceof DomainError) throw e;
    throw new Error(`upstream ${ns} unavailable: ${describeFailure(e)}`);
  }
  try {
    try {
      // Every page is held until the last is read: bounded as a serving process's sync is (src/upstream/answer-budget.ts).
      tools = await new AnswerBudget(estate.config.maxUpstreamBufferBytes).within(ns, (account) => session.listTools(account.signal));
    } catch (e) {
      throw new Error(`upstream ${ns}: tools/list failed: ${describeFailure(e)}`);
    }
    return { ...(await registry.sync(ns, tools, estate.config.actor)), protocolVersion: session.protocolVersion ?? null };
  } finally {
    await session.close().catch(() => undefined);
  }
};

/**
 * `--candidate <hash>`: act only on the candidate a reviewer was shown. Between `upstream drift` and `approve`, a
 * sync (the serving process's, every interval) may record a newer candidate: without the hash, approve publishes
 * whatever is pending then. The whole hash (as `drift` prints it), as the console sends: a prefix could be matched by
 * an upstream that crafts a candidate to share it.
 */
const candidateOption = (): Option =>
  new Option('--candidate <hash>', 'only if the pending candidate is still this one (the hash upstream drift shows); refused (exit 3) if it changed');

const candidateOf = (flags: { candidate?: string }): { candidateHash?: string } => {
  if (flags.candidate === undefined) return {};
  if (!/^[0-9a-f]{64}$/.test(flags.candidate)) {
    throw new DomainError('usage', 'invalid-candidate', `--candidate: '${flags.candidate}' is not a candidate hash (64 hex digits, as upstream drift prints it)`);
  }
  return { candidateHash: flags.candidate };
};

export const register = (program: Command): void => {
  const up = program.command('upstream').description('mirror, pin and proxy upstream MCP servers (their tools become catalogue versions only when approved)');

  addAccessFlags(
    up
      .command('add')
      .description('register an upstream MCP server under a namespace (stdio: --command; Streamable HTTP: --url)')
      .argument('<ns>', 'namespace: its tools become <ns>.<tool>')
      .option('--command <cmdline>', 'stdio: the command line that starts the server')
      .option('--cwd <dir>', 'stdio: working directory of the child')
      .option('--env <NAME=env:VAR>', 'stdio: an environment variable for the child, from the serving process\'s VAR (repeatable)', collect)
      .option('--url <url>', 'Streamable HTTP: the server\'s MCP endpoint (https, or http on loopback)')
      .option('--header <Name=env:VAR>', 'HTTP: a request header, from the serving process\'s VAR (repeatable)', collect)
      .option('--query <name=env:VAR>', 'HTTP: a URL query parameter, from the serving process\'s VAR, for an upstream that takes its key only there (repeatable)', collect)
      .addOption(new Option('--auto-approve <policy>', 'publish drift without a person: schema-minor = minor/patch schema changes with identical text').choices(['none', 'schema-minor']).default('none')),
    'default access of its tools (required: --scopes and --clearance)',
  ).action(
    withEstate(async (estate, opts, ns: string, flags: TargetFlags & AccessFlags & { autoApprove: 'none' | 'schema-minor' }) => {
      const target = targetFromFlags(flags);
      const access = defaultAccessFromFlags(flags);
      const r = await registryOf(estate).register(ns, target, access, flags.autoApprove, estate.config.actor);
      if (opts.json) printJson({ result: 'registered', ns, transport: target.transport, target: describeTarget(target), access, autoApprove: flags.autoApprove, position: r.position });
      else say([registeredLine(ns, target.transport, describeTarget(target))]);
    }),
  );

  up.command('list')
    .description('registered upstreams with their tool and pending-drift counts')
    .action(
      withEstate(async (estate, opts) => {
        const registry = registryOf(estate);
        const rows = [];
        for (const ns of await registry.namespaces()) rows.push(await registry.summary(ns));
        if (opts.json) printJson({ upstreams: rows });
        else say(rows.length === 0 ? ['(no upstreams)'] : rows.map(upstreamRow));
      }, { readOnly: true }),
    );

  up.command('sync')
    .description('connect to the upstream, list every page and record drift (nothing reaches a client until approved)')
    .argument('<ns>')
    .action(
      withEstate(async (estate, opts, ns: string) => {
        const r = await syncOnce(estate, ns);
        if (opts.json) printJson(r);
        else say(syncLines(ns, r));
      }),
    );

  up.command('drift')
    .description('pending candidates with level, reasons and a line diff of changed text')
    .argument('[ns]')
    .action(
      withEstate(async (estate, opts, ns: string | undefined) => {
        const pending = await registryOf(estate).pending(ns);
        if (opts.json) {
          printJson({ pending: pending.map((p) => ({ ns: p.ns, tool: p.tool, upstreamTool: p.upstreamTool, level: p.level, reasons: p.reasons, ...(p.pinned ? { pinned: p.pinned } : {}), ...(p.textDiff ? { textDiff: p.textDiff } : {}), candidateHash: p.candidateHash, at: p.at })) });
        } else say(pendingLines(pending));
      }, { readOnly: true }),
    );

  addAccessFlags(
    up
      .command('approve')
      .description('publish a pending candidate through the publish guard (version: the pinned one bumped by the level)')
      .argument('<ref>', '<ns>.<tool>, or <ns> with --all')
      .option('--all', 'every pending candidate of the namespace')
      .option('--version <x.y.z>', 'publish as this version instead')
      .addOption(candidateOption()),
    'access of the published version (default: the candidate\'s)',
  ).action(
    withEstate(async (estate, opts, ref: string, flags: AccessFlags & { all?: boolean; version?: string; candidate?: string }) => {
      const registry = registryOf(estate);
      if (flags.all && flags.candidate !== undefined) {
        throw new DomainError('usage', 'candidate-with-all', '--candidate names one tool\'s candidate: approve that tool, not --all');
      }
      const o = { by: estate.config.actor, ...(flags.version !== undefined ? { version: flags.version } : {}), access: accessOverrides(flags) };
      const verdicts = flags.all
        ? await registry.approveAll(ref, o)
        : [await registry.approveOne(parseToolRef(ref).ns, parseToolRef(ref).tool, { ...o, ...candidateOf(flags) })];
      if (flags.all && verdicts.length === 0) {
        if (opts.json) printJson({ approved: [] });
        else say([noPendingLine(ref)]);
        return EXIT.ok;
      }
      const results = verdicts.map((v) => verdictJson(v, v.result, v.position));
      if (opts.json) printJson(flags.all ? { approved: results } : results[0]);
      let code: number = EXIT.ok;
      for (const v of results) {
        if (v.result === 'refused') {
          console.error(refusalLine('refused', v));
          code = EXIT.refused;
        } else if (!opts.json) say([approvedLine(v)]);
      }
      return code;
    }),
  );

  up.command('reject')
    .description('reject a pending candidate; the pinned version keeps serving')
    .argument('<ref>', '<ns>.<tool>')
    .requiredOption('--reason <text>', 'why (recorded)')
    .addOption(candidateOption())
    .action(
      withEstate(async (estate, opts, ref: string, flags: { reason: string; candidate?: string }) => {
        const { ns, tool } = parseToolRef(ref);
        const r = await registryOf(estate).reject(ns, tool, flags.reason, estate.config.actor, candidateOf(flags).candidateHash);
        if (opts.json) printJson({ result: 'rejected', ...r });
        else say([rejectedLine(tool)]);
      }),
    );

  up.command('remove')
    .description('retire every version of the upstream\'s tools and remove it')
    .argument('<ns>')
    .requiredOption('--reason <text>', 'why (recorded on every retirement)')
    .action(
      withEstate(async (estate, opts, ns: string, flags: { reason: string }) => {
        const r = await registryOf(estate).remove(ns, flags.reason, estate.config.actor);
        if (opts.json) printJson({ result: 'removed', ...r });
        else say([removedLine(ns, r.retired)]);
      }),
    );
};
