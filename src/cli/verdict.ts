/**
 * What publish and check share: read the definition file, have the catalogue judge it, print the verdict (JSON, or
 * lines) and end with its exit code. A file that cannot be read or parsed is answered in the verdict's shape too, so a
 * pipeline reading `--json` sees one shape whatever went wrong with the definition.
 */
import { DomainError } from '#domain/errors';
import { definitionRefusal, type CatalogueWrites, type DefinitionSource, type VerdictJson, type VerdictOutcome } from './commands/port.ts';
import { readDefinitionSource } from './definition-file.ts';
import { EXIT } from './exit.ts';
import { printJson, refusalLine, say } from './output.ts';
import type { GlobalOptions } from './run.ts';

export const judgeFile = async (
  catalogue: CatalogueWrites,
  verb: 'publish' | 'check',
  file: string,
  opts: GlobalOptions,
  lines: (v: VerdictJson) => string[],
): Promise<number> => {
  const read = await readSource(file);
  const outcome = 'json' in read ? read : await catalogue[verb](read);
  if (opts.json) printJson(outcome.json);
  if (outcome.refusal) {
    console.error(refusalLine(outcome.refusal, outcome.json));
    return outcome.refusal === 'usage' ? EXIT.usage : EXIT.refused;
  }
  if (!opts.json) say(lines(outcome.json));
  return EXIT.ok;
};

/** The file read and parsed, or why not as a refusal. */
const readSource = async (file: string): Promise<DefinitionSource | VerdictOutcome> => {
  try {
    return await readDefinitionSource(file);
  } catch (e) {
    if (e instanceof DomainError) return definitionRefusal(e);
    throw e;
  }
};
