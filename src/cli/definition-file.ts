/** Reading a definition from a file: unreadable files are usage errors (exit 2), broken rules are refusals (exit 3). */
import { readFile } from 'node:fs/promises';
import { extname } from 'node:path';
import { DomainError } from '../domain/errors.ts';
import type { SchemaCompiler } from '../domain/schema-compiler.ts';
import { parseDefinitionText, validateDefinition } from '../domain/tool-definition.ts';
import type { ToolDefinition } from '../domain/types.ts';

export const readDefinitionFile = async (path: string, compiler: SchemaCompiler): Promise<ToolDefinition> => {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'is a directory' : code === 'EACCES' ? 'permission denied' : String(code ?? e);
    throw new DomainError('usage', 'unreadable-file', `cannot read ${path}: ${why}`);
  }
  const format = extname(path).toLowerCase() === '.json' ? 'json' : 'yaml';
  const raw = parseDefinitionText(text, path, format);
  try {
    return validateDefinition(raw, compiler);
  } catch (e) {
    if (e instanceof DomainError) throw new DomainError(e.kind, e.code, `${path}: ${e.message}`, e.reasons);
    throw e;
  }
};

/** Whether a CLI argument names a file (for `diff`): it exists on disk, or looks like a path rather than name@version. */
export const looksLikeFile = (arg: string): boolean => /[/\\]/.test(arg) || /\.(json|ya?ml)$/i.test(arg);
