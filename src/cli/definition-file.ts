/**
 * Reading a definition from a file, once for every verb and both adapters: unreadable files are usage errors (exit 2),
 * broken rules are refusals (exit 3), and a definition error names the file first.
 */
import { statSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { extname } from 'node:path';
import { DomainError } from '#domain/errors';
import { MAX_DEFINITION_BYTES, parseDefinitionText, tooLarge } from '#domain/tool-definition';
import type { ToolDefinition } from '#domain/types';
import type { DefinitionSource } from './commands/port.ts';

/**
 * A file's text, refused past MAX_DEFINITION_BYTES without reading further: a regular file by its size, anything else
 * (`/dev/stdin`, a pipe, `/dev/zero`) as it is read.
 */
const readBounded = async (file: string): Promise<string> => {
  const handle = await open(file, 'r');
  try {
    if ((await handle.stat()).size > MAX_DEFINITION_BYTES) throw tooLarge(file);
    const chunks: Buffer[] = [];
    let total = 0;
    for (;;) {
      const { bytesRead, buffer } = await handle.read({ buffer: Buffer.alloc(64 * 1024) });
      if (bytesRead === 0) break;
      total += bytesRead;
      if (total > MAX_DEFINITION_BYTES) throw tooLarge(file);
      chunks.push(buffer.subarray(0, bytesRead));
    }
    return Buffer.concat(chunks).toString('utf8');
  } finally {
    await handle.close();
  }
};

/** Read and parse (JSON for .json, YAML otherwise); nothing is validated yet. */
export const readDefinitionSource = async (file: string): Promise<DefinitionSource> => {
  let text: string;
  try {
    text = await readBounded(file);
  } catch (e) {
    if (e instanceof DomainError) throw e;
    const code = (e as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'is a directory' : code === 'EACCES' ? 'permission denied' : String(code ?? e);
    throw new DomainError('usage', 'unreadable-file', `cannot read ${file}: ${why}`);
  }
  const format = extname(file).toLowerCase() === '.json' ? 'json' : 'yaml';
  return { file, raw: parseDefinitionText(text, file, format) };
};

/**
 * The definition rules of SPEC §1, with the file's name before any error. `check` is the estate's definition checker
 * (a worker, under the schema budget): a file is held to the same budget as a definition sent to the publishing API.
 */
export const validateSource = async ({ file, raw }: DefinitionSource, check: (raw: unknown) => Promise<ToolDefinition>): Promise<ToolDefinition> => {
  try {
    return await check(raw);
  } catch (e) {
    if (e instanceof DomainError) throw new DomainError(e.kind, e.code, `${file}: ${e.message}`, e.reasons);
    throw e;
  }
};

/**
 * Whether a CLI argument names a file (for `diff`, SPEC §5: "an existing file path, else name@version"): a file that
 * exists, whatever its name (`def1`), or one that looks like a path, so a missing one is "no such file", not a bad ref.
 */
export const looksLikeFile = (arg: string): boolean => isExistingFile(arg) || /[/\\]/.test(arg) || /\.(json|ya?ml)$/i.test(arg);

const isExistingFile = (arg: string): boolean => {
  try {
    return statSync(arg).isFile();
  } catch {
    return false;
  }
};
