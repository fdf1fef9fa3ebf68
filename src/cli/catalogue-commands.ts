/** The catalogue verbs: publish, check, deprecate, retire, list, show, history, diff, calls, replay. */
import { Command, Option } from 'commander';
import { decodeToolCallStarted, decodeToolCalled } from '../app/event-codec.ts';
import { readRunStreams } from '../app/call-recorder.ts';
import { definitionErrorJson, lifecycleLine, verdictJson } from '../app/results-json.ts';
import { parseAsOf, replayAsOf } from '../app/replay.ts';
import { makePrincipal } from '../domain/access.ts';
import { classifyDefinition } from '../domain/classify.ts';
import { DomainError } from '../domain/errors.ts';
import { RUN_ID_PATTERN, type ToolCallStarted, type ToolCalled } from '../domain/events.ts';
import { CLASSIFICATIONS, type Reason, type ToolDefinition } from '../domain/types.ts';
import type { Estate } from '../main.ts';
import { runCalls } from '../../projections/calls.ts';
import { listRuns, parseRunFilter } from './runs-listing.ts';
import type { CatalogueProjection, CatalogueVersion } from '../../projections/catalogue.ts';
import { discoverNaive } from '../../projections/discovery.ts';
import { looksLikeFile, readDefinitionFile } from './definition-file.ts';
import { loadZodToolModule } from '../lib/zod-tools.ts';
import { handlerOutsideNamespace, validateDefinition } from '../domain/tool-definition.ts';
import { EXIT } from './exit.ts';
import { printJson, withEstate, type GlobalOptions } from './run.ts';
import { serverOption, viaServer } from './remote-client.ts';

const parseRef = (ref: string, needVersion: boolean): { name: string; version?: string } => {
  const at = ref.lastIndexOf('@');
  if (at < 0) {
    if (needVersion) throw new DomainError('usage', 'bad-ref', `'${ref}': expected <name>@<version>, e.g. payments.lookup@1.0.0`);
    return { name: ref };
  }
  const name = ref.slice(0, at);
  const version = ref.slice(at + 1);
  if (!name || !version) throw new DomainError('usage', 'bad-ref', `'${ref}': expected <name>@<version>, e.g. payments.lookup@1.0.0`);
  return { name, version };
};

const reasonLines = (reasons: readonly Reason[]): string => reasons.map((r) => `  ${r.level.padEnd(5)} ${r.path}: ${r.rule} — ${r.detail}`).join('\n');
const reasonsInline = (reasons: readonly Reason[]): string => reasons.map((r) => `${r.level} ${r.rule} at ${r.path}`).join('; ');

const readOrReport = async (estate: Estate, file: string, opts: GlobalOptions): Promise<ToolDefinition> => {
  try {
    return await readDefinitionFile(file, estate.compiler);
  } catch (e) {
    if (e instanceof DomainError && opts.json) {
      console.error(`estate: ${e.kind === 'usage' ? 'error' : 'refused'}: ${e.message}`);
      printJson(definitionErrorJson(e));
      throw new HandledError(e.kind === 'usage' ? EXIT.usage : EXIT.refused);
    }
    throw e;
  }
};

/** An error already reported; carries only the exit code. */
class HandledError extends Error {
  constructor(readonly exitCode: number) {
    super('handled');
  }
}

const handled =
  <A extends unknown[]>(action: (estate: Estate, opts: GlobalOptions, ...args: A) => Promise<number | void>) =>
  async (estate: Estate, opts: GlobalOptions, ...args: A): Promise<number | void> => {
    try {
      return await action(estate, opts, ...args);
    } catch (e) {
      if (e instanceof HandledError) return e.exitCode;
      throw e;
    }
  };

const statusOf = (v: CatalogueVersion) => ({
  name: v.name,
  version: v.version,
  title: v.definition.title ?? null,
  status: v.status,
  ...(v.deprecated ? { deprecated: { reason: v.deprecated.reason, at: v.deprecated.at } } : {}),
});

const printTable = (rows: ReturnType<typeof statusOf>[]): void => {
  if (rows.length === 0) {
    console.log('(no tools)');
    return;
  }
  const w = Math.max(4, ...rows.map((r) => r.name.length));
  const vw = Math.max(7, ...rows.map((r) => r.version.length));
  console.log(`${'NAME'.padEnd(w)}  ${'VERSION'.padEnd(vw)}  ${'STATUS'.padEnd(10)}  TITLE`);
  for (const r of rows) {
    const note = r.deprecated ? ` (deprecated: ${r.deprecated.reason})` : '';
    console.log(`${r.name.padEnd(w)}  ${r.version.padEnd(vw)}  ${r.status.padEnd(10)}  ${r.title ?? ''}${note}`);
  }
};

const listLatest = (catalogue: CatalogueProjection, includeDeprecated: boolean): CatalogueVersion[] => {
  const out: CatalogueVersion[] = [];
  for (const name of catalogue.names()) {
    const vs = catalogue.versions(name);
    for (let i = vs.length - 1; i >= 0; i--) {
      const v = vs[i] as CatalogueVersion;
      if (v.status === 'active' || (includeDeprecated && v.status === 'deprecated')) {
        out.push(v);
        break;
      }
    }
  }
  return out;
};

export const addPrincipalFlags = (cmd: Command): Command =>
  cmd
    .option('--tenant <tenant>', 'the principal\'s tenant')
    .option('--scopes <scopes>', 'scopes the principal holds, comma-separated')
    .addOption(new Option('--clearance <level>', 'the principal\'s clearance').choices([...CLASSIFICATIONS]))
    .option('--subject <id>', 'the principal\'s subject id');

export interface PrincipalFlags {
  tenant?: string;
  scopes?: string;
  clearance?: string;
  subject?: string;
}

export const principalFromFlags = (f: PrincipalFlags) =>
  makePrincipal({
    ...(f.tenant !== undefined ? { tenant: f.tenant } : {}),
    scopes: (f.scopes ?? '').split(',').map((s) => s.trim()),
    clearance: f.clearance ?? null,
    ...(f.subject !== undefined ? { subject: f.subject } : {}),
  });

/** `publish --module`: each zod-defined tool, converted to JSON Schema now, through the same validation and guard. */
const publishModule = async (estate: Estate, opts: GlobalOptions, module: string, file: string | undefined): Promise<number> => {
  if (file !== undefined) throw new DomainError('usage', 'module-and-file', 'publish: give either a definition file or --module <file>, not both');
  const raws = await loadZodToolModule(module);
  const defs = raws.map((raw) => {
    try {
      return validateDefinition(raw, estate.compiler);
    } catch (e) {
      if (e instanceof DomainError) throw new DomainError(e.kind, e.code, `${module}: ${String(raw.name)}: ${e.message}`, e.reasons);
      throw e;
    }
  });
  let code: number = EXIT.ok;
  const results = [];
  for (const def of defs) {
    const v = await estate.commands.publish(def, estate.config.actor);
    results.push(verdictJson(v, v.result, v.position));
    if (v.result === 'refused') {
      console.error(`estate: refused: ${v.name}@${v.version}: ${v.error?.message ?? 'refused'}`);
      code = EXIT.refused;
    } else if (!opts.json) {
      console.log(
        v.result === 'unchanged'
          ? `unchanged: ${v.name}@${v.version} is already published with this exact content`
          : `published ${v.name}@${v.version} (${v.level}${v.baseline ? ` from ${v.baseline}` : ''}) at position ${v.position}`,
      );
      if (v.reasons.length) console.log(reasonLines(v.reasons));
    }
  }
  if (opts.json) printJson({ results });
  return code;
};

const hasPrincipalFlags = (f: PrincipalFlags): boolean => [f.tenant, f.scopes, f.clearance, f.subject].some((x) => x !== undefined);

export const registerCatalogueCommands = (program: Command): void => {
  program
    .command('publish')
    .description('publish one tool version from a JSON or YAML definition (a byte-identical re-publish answers "unchanged")')
    .argument('[file]', 'tool definition file (.json, .yaml, .yml)')
    .option('--by <who>', 'who publishes (env ESTATE_ACTOR, default the OS user)')
    .option('--module <file>', 'publish every tool of an ES module whose `tools` export defines them with zod')
    .addOption(serverOption())
    .hook('preAction', (cmd) => {
      const o = cmd.opts<{ module?: string; server?: string }>();
      if (o.module !== undefined && o.server !== undefined) cmd.error('estate: error: --module publishes into a store; it does not combine with --server', { exitCode: EXIT.usage });
    })
    .action(
      viaServer('publish', withEstate(
        handled(async (estate, opts, file: string | undefined) => {
          const module = (opts as GlobalOptions & { module?: string }).module;
          if (module !== undefined) return publishModule(estate, opts, module, file);
          if (file === undefined) throw new DomainError('usage', 'missing-file', 'publish: give a definition file, or --module <file>');
          const def = await readOrReport(estate, file, opts);
          const v = await estate.commands.publish(def, estate.config.actor);
          if (opts.json) printJson(verdictJson(v, v.result, v.position));
          if (v.result === 'refused') {
            console.error(`estate: refused: ${v.error?.message ?? 'refused'}`);
            return EXIT.refused;
          }
          if (!opts.json) {
            console.log(
              v.result === 'unchanged'
                ? `unchanged: ${v.name}@${v.version} is already published with this exact content`
                : `published ${v.name}@${v.version} (${v.level}${v.baseline ? ` from ${v.baseline}` : ''}) at position ${v.position}`,
            );
            if (v.reasons.length) console.log(reasonLines(v.reasons));
          }
          return EXIT.ok;
        }),
      )),
    );

  program
    .command('check')
    .description('say what the publish guard would decide for a definition; changes nothing')
    .argument('<file>', 'tool definition file')
    .addOption(serverOption())
    .action(
      viaServer('check', withEstate(
        handled(async (estate, opts, file: string) => {
          const def = await readOrReport(estate, file, opts);
          const v = await estate.commands.check(def, estate.config.actor);
          const result = v.result === 'published' ? 'would-publish' : v.result;
          if (opts.json) printJson(verdictJson(v, result));
          if (v.result === 'refused') {
            console.error(`estate: refused: ${v.error?.message ?? 'refused'}`);
            return EXIT.refused;
          }
          if (!opts.json) {
            console.log(
              result === 'unchanged'
                ? `unchanged: ${v.name}@${v.version} is already published with this exact content (publishing it again changes nothing)`
                : `${result}: ${v.name}@${v.version} (${v.level}${v.baseline ? ` from ${v.baseline}` : ''})`,
            );
            if (v.reasons.length) console.log(reasonLines(v.reasons));
          }
          return EXIT.ok;
        }),
      )),
    );

  for (const verb of ['deprecate', 'retire'] as const) {
    program
      .command(verb)
      .description(verb === 'deprecate' ? 'mark a version deprecated (still callable when pinned; hidden from discovery by default)' : 'retire a version: never offered or callable again')
      .argument('<ref>', '<name>@<version>')
      .requiredOption('--reason <text>', 'why (shown to callers)')
      .option('--by <who>', 'who does it (env ESTATE_ACTOR, default the OS user)')
      .addOption(serverOption())
      .action(
        viaServer(verb, withEstate(async (estate, opts, ref: string, cmdOpts: { reason: string }) => {
          const { name, version } = parseRef(ref, true);
          const out =
            verb === 'deprecate'
              ? await estate.commands.deprecate(name, version as string, cmdOpts.reason, estate.config.actor)
              : await estate.commands.retire(name, version as string, cmdOpts.reason, estate.config.actor);
          if (opts.json) printJson(out);
          else console.log(lifecycleLine(out));
        })),
      );
  }

  addPrincipalFlags(
    program
      .command('list')
      .description('list tools: with principal flags, what that principal discovers; without, every tool\'s latest active version')
      .option('--include-deprecated', 'include deprecated versions'),
  ).action(
    withEstate(async (estate, opts, f: PrincipalFlags & { includeDeprecated?: boolean }) => {
      const reader = estate.reader();
      await reader.catchUp();
      const include = Boolean(f.includeDeprecated);
      const versions = hasPrincipalFlags(f) ? discoverNaive(reader.catalogue, principalFromFlags(f), include) : listLatest(reader.catalogue, include);
      const tools = versions.map(statusOf);
      if (opts.json) printJson({ tools });
      else printTable(tools);
    }, { readOnly: true }),
  );

  program
    .command('show')
    .description('show one version\'s full definition (no version: the latest active one)')
    .argument('<ref>', '<name>[@<version>]')
    .action(
      withEstate(async (estate, opts, ref: string) => {
        const { name, version } = parseRef(ref, false);
        const reader = estate.reader();
        await reader.catchUp();
        const c = reader.catalogue;
        if (!c.tool(name)) throw new DomainError('not-found', 'unknown-tool', `unknown tool '${name}'`);
        const v = version ? c.find(name, version) : c.latest(name);
        if (!v) throw new DomainError('not-found', version ? 'unknown-version' : 'no-active-version', version ? `unknown version ${name}@${version}` : `${name} has no active version`);
        const out = {
          ...v.definition,
          status: v.status,
          schemaHash: v.schemaHash,
          definitionHash: v.definitionHash,
          publishedAt: v.publishedAt,
          publishedBy: v.publishedBy,
          ...(v.deprecated ? { deprecated: v.deprecated } : {}),
          ...(v.retired ? { retired: v.retired } : {}),
          // Published before the handler-namespace rule: in the store, never served (docs/security.md).
          ...(handlerOutsideNamespace(v.name, v.definition.handler) ? { notServed: `never served: ${handlerOutsideNamespace(v.name, v.definition.handler)}` } : {}),
        };
        if (opts.json) printJson(out);
        else console.log(JSON.stringify(out, null, 2));
      }, { readOnly: true }),
    );

  program
    .command('history')
    .description('every version of a tool, with its level, reasons and lifecycle')
    .argument('<name>')
    .action(
      withEstate(async (estate, opts, name: string) => {
        const reader = estate.reader();
        await reader.catchUp();
        const vs = reader.catalogue.versions(name);
        if (vs.length === 0) throw new DomainError('not-found', 'unknown-tool', `unknown tool '${name}'`);
        const versions = vs.map((v) => ({
          version: v.version,
          status: v.status,
          level: v.level,
          reasons: v.reasons,
          publishedAt: v.publishedAt,
          publishedBy: v.publishedBy,
          ...(v.deprecated ? { deprecatedAt: v.deprecated.at, deprecatedReason: v.deprecated.reason } : {}),
          ...(v.retired ? { retiredAt: v.retired.at, retiredReason: v.retired.reason } : {}),
        }));
        if (opts.json) printJson({ name, versions });
        else
          for (const v of versions) {
            const life = v.retiredAt ? ` retired ${v.retiredAt}` : v.deprecatedAt ? ` deprecated ${v.deprecatedAt}` : '';
            console.log(`${v.version.padEnd(10)} ${v.status.padEnd(10)} ${v.level.padEnd(7)} published ${v.publishedAt} by ${v.publishedBy}${life}`);
            if (v.reasons.length) console.log(`           ${reasonsInline(v.reasons)}`);
          }
      }, { readOnly: true }),
    );

  program
    .command('diff')
    .description('classify the change from <a> to <b> (each a definition file, else name@version)')
    .argument('<a>')
    .argument('<b>')
    .action(
      withEstate(async (estate, opts, a: string, b: string) => {
        let reader: Awaited<ReturnType<typeof estate.reader>> | undefined;
        const load = async (arg: string): Promise<ToolDefinition> => {
          if (looksLikeFile(arg)) return readDefinitionFile(arg, estate.compiler);
          const { name, version } = parseRef(arg, true);
          if (!reader) {
            reader = estate.reader();
            await reader.catchUp();
          }
          const v = reader.catalogue.find(name, version as string);
          if (!v) throw new DomainError('not-found', 'unknown-version', `'${arg}' is neither a readable file nor a published version`);
          return v.definition;
        };
        const { level, reasons } = classifyDefinition(await load(a), await load(b));
        if (opts.json) printJson({ level, reasons });
        else {
          console.log(`${level}${reasons.length ? '' : ' (no change)'}`);
          if (reasons.length) console.log(reasonLines(reasons));
        }
      }, { readOnly: true, storeless: (a: string, b: string) => looksLikeFile(a) && looksLikeFile(b) }),
    );

  program
    .command('calls')
    .description('the calls recorded for a run: which tool version each used, with which schema, and the outcome; without a run id, the recent runs')
    .argument('[runId]')
    .option('--since <time>', 'without a run id: runs with a call at or after this ISO-8601 time')
    .option('--tool <name>', 'without a run id: runs that called this tool')
    .option('--limit <n>', 'without a run id: at most this many runs, newest first (default 20)')
    .action(
      withEstate(async (estate, opts, runId: string | undefined, f: { since?: string; tool?: string; limit?: string }) => {
        if (runId === undefined) {
          const runs = await listRuns(estate.store, parseRunFilter(f));
          if (opts.json) printJson({ runs });
          else if (runs.length === 0) console.log('(no runs)');
          else
            for (const r of runs) {
              console.log(`${r.runId}  ${r.calls} call${r.calls === 1 ? '' : 's'}${r.unfinished ? ` + ${r.unfinished} started without outcome` : ''}  ${r.first} .. ${r.last}  ${r.subject}/${r.tenant || '(none)'}`);
            }
          return;
        }
        if (!RUN_ID_PATTERN.test(runId)) throw new DomainError('usage', 'invalid-run-id', `run id ${JSON.stringify(runId.length > 40 ? `${runId.slice(0, 40)}...` : runId)} is not 1 to 128 characters of A-Z a-z 0-9 . _ : -, starting with a letter or digit`);
        // One run per owner: the same id used by two tenants (or subjects) is two runs, shown one after the other.
        const runs = (await readRunStreams(estate.store, runId))
          .map((stored) => runCalls(stored.flatMap((s): (ToolCalled | ToolCallStarted)[] => (s.type === 'ToolCalled' ? [decodeToolCalled(s)] : s.type === 'ToolCallStarted' ? [decodeToolCallStarted(s)] : []))))
          .filter((calls) => calls.length > 0)
          .map((calls) => ({ owner: { subject: (calls[0] as (typeof calls)[number]).subject, tenant: (calls[0] as (typeof calls)[number]).tenant }, calls }));
        if (runs.length === 0) throw new DomainError('not-found', 'unknown-run', `no calls recorded for run '${runId}'`);
        if (opts.json) printJson({ runId, owners: runs.map((r) => r.owner), calls: runs.flatMap((r) => r.calls) });
        else
          for (const { owner, calls } of runs) {
            console.log(`run ${runId}  owner ${owner.subject} (tenant ${owner.tenant || '(none)'})`);
            for (const c of calls) {
              if (c.outcome === 'started') {
                // The intent is durable, the outcome is not: the tool ran (or may have) without a record of how it ended.
                console.log(`${c.at}  ${c.tool}@${c.version}  ${'started'.padEnd(14)} no outcome recorded  args ${c.argsHash.slice(0, 12)}  ${c.subject}/${c.tenant}`);
                continue;
              }
              console.log(`${c.at}  ${c.tool}@${c.version}  ${c.outcome.padEnd(14)} ${String(c.durationMs).padStart(6)} ms  schema ${c.schemaHash.slice(0, 12)}  args ${c.argsHash.slice(0, 12)}${c.repaired ? '  repaired' : ''}  ${c.subject}/${c.tenant}`);
            }
          }
      }, { readOnly: true }),
    );

  program
    .command('replay')
    .description('rebuild the catalogue as it was at a time or a position (read-only)')
    .requiredOption('--at <time|position>', 'an ISO-8601 time, or a position printed by publish')
    .option('--include-deprecated', 'include deprecated versions')
    .action(
      withEstate(async (estate, opts, f: { at: string; includeDeprecated?: boolean }) => {
        const catalogue = await replayAsOf(estate.store, parseAsOf(f.at));
        const tools = listLatest(catalogue, Boolean(f.includeDeprecated)).map(statusOf);
        if (opts.json) printJson({ tools, asOf: f.at, position: catalogue.position });
        else {
          console.log(`as of ${f.at} (position ${catalogue.position ?? 'none'}, ${catalogue.eventCount} events):`);
          printTable(tools);
        }
      }, { readOnly: true }),
    );
};
