/** `estate publish <file> | --module <file>` (SPEC §5, §10): publish one version, or every tool of a zod module. */
import { stat } from 'node:fs/promises';
import type { Command } from 'commander';
import { DomainError } from '#domain/errors';
import { serverOption, withCatalogue, withCatalogueWrites, type ServerOptions } from '../commands/open.ts';
import { EXIT } from '../exit.ts';
import { printJson, publishedLines, refusalLine, say } from '../output.ts';
import { readDefinitionSource } from '../definition-file.ts';
import { judgeFile } from '../verdict.ts';

interface PublishOptions extends ServerOptions {
  module?: string;
}

/** Whether publishing `file` is refused before any store is read: it does not exist, or it is a file that does not parse. */
const refusedBeforeTheStore = async (file: string): Promise<boolean> => {
  const info = await stat(file).catch(() => undefined);
  if (info === undefined) return true;
  if (!info.isFile()) return false;
  return readDefinitionSource(file).then(() => false, () => true);
};

const publishFile = withCatalogueWrites(
  async (catalogue, opts: PublishOptions, file: string | undefined, _flags: unknown, _cmd: Command) => {
    if (file === undefined) throw new DomainError('usage', 'missing-file', 'publish: give a definition file, or --module <file>');
    return judgeFile(catalogue, 'publish', file, opts, publishedLines);
  },
  {
    // A file that cannot be read or parsed is refused before the catalogue is asked anything: refused on an empty
    // in-memory store, so a first publish of a missing file does not leave an empty store behind (a probe's did).
    // Only a regular file is read twice for this: a pipe (`/dev/stdin`) can be read once, by the verb.
    storeless: (file: string | undefined, _flags: unknown, _cmd: Command) => (file === undefined ? true : refusedBeforeTheStore(file)),
  },
);

/** Each zod-defined tool, converted to JSON Schema now, through the same validation and guard. */
const publishModule = withCatalogue(async (catalogue, opts: PublishOptions, file: string | undefined, _flags: unknown, _cmd: Command) => {
  const module = opts.module as string;
  if (file !== undefined) throw new DomainError('usage', 'module-and-file', 'publish: give either a definition file or --module <file>, not both');
  const results = [];
  let code: number = EXIT.ok;
  for await (const v of catalogue.publishModule(module)) {
    results.push(v);
    if (v.result === 'refused') {
      console.error(refusalLine('refused', v, `${v.name}@${v.version}`));
      code = EXIT.refused;
    } else if (!opts.json) say(publishedLines(v));
  }
  if (opts.json) printJson({ results });
  return code;
});

export const register = (program: Command): void => {
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
    // --module reads and writes the store; a file may go through a server instead (commands/open.ts chooses).
    .action((file: string | undefined, flags: { module?: string }, cmd: Command) => (flags.module !== undefined ? publishModule : publishFile)(file, flags, cmd));
};
