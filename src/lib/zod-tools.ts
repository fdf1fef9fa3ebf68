/**
 * Tools defined in code (SPEC §10): an ES module whose `tools` export is an array of
 * `{name, version, title?, description, input, output?, access, sideEffect, handler}` with `input`/`output` as zod
 * schemas. JSON Schema 2020-12 is generated HERE, at publish, with zod's own converter (`z.toJSONSchema`), so the
 * schema a tool is published with is exactly what its code said at that moment; the definitions then go through the
 * same validation and guard as a definition file.
 */
import { pathToFileURL } from 'node:url';
import { resolve } from 'node:path';
import { z } from 'zod';
import { DomainError } from '#domain/errors';

/** One tool defined with zod. `input` must describe an object. */
export interface ZodTool {
  name: string;
  version: string;
  title?: string;
  description: string;
  input: z.ZodType;
  output?: z.ZodType;
  annotations?: Record<string, unknown>;
  access: { requiredScopes: string[]; tenants: string[]; classification: 'public' | 'internal' | 'confidential' | 'restricted' };
  sideEffect: 'none' | 'idempotent' | 'non_idempotent';
  handler: string;
  timeoutMs?: number;
}

const pointer = (path: readonly (string | number)[]): string => (path.length ? path.map(String).join('.') : '(root)');

/** zod → JSON Schema 2020-12; anything zod cannot express is a refusal that names the field, never a silent `{}`. */
export const zodToJsonSchema = (schema: z.ZodType, where: string, io: 'input' | 'output'): Record<string, unknown> => {
  let json: Record<string, unknown>;
  try {
    json = z.toJSONSchema(schema, {
      target: 'draft-2020-12',
      io,
      unrepresentable: (ctx) => {
        throw new DomainError(
          'invalid-definition',
          'schema-unrepresentable',
          `${where} at ${pointer(ctx.path)}: a zod ${ctx.zodSchema._zod.def.type} cannot be expressed in JSON Schema (${ctx.message})`,
        );
      },
      cycles: 'ref',
      reused: 'inline',
    }) as Record<string, unknown>;
  } catch (e) {
    if (e instanceof DomainError) throw e;
    throw new DomainError('invalid-definition', 'schema-unrepresentable', `${where}: cannot be expressed in JSON Schema: ${e instanceof Error ? e.message : String(e)}`);
  }
  return json;
};

const isZod = (v: unknown): v is z.ZodType => typeof v === 'object' && v !== null && '_zod' in v;

/** One zod-defined tool → the raw definition `validateDefinition` takes (it still applies every definition rule). */
export const zodToolToDefinition = (tool: unknown, index: number, file: string): Record<string, unknown> => {
  const label = `${file}: tools[${index}]`;
  if (typeof tool !== 'object' || tool === null || Array.isArray(tool)) throw new DomainError('invalid-definition', 'module-tool', `${label}: expected an object, got ${Array.isArray(tool) ? 'an array' : tool === null ? 'null' : typeof tool}`);
  const t = tool as Record<string, unknown>;
  const name = typeof t.name === 'string' ? t.name : `tools[${index}]`;
  if (!isZod(t.input)) throw new DomainError('invalid-definition', 'module-tool', `${label} (${name}): 'input' must be a zod schema`);
  if (t.output !== undefined && !isZod(t.output)) throw new DomainError('invalid-definition', 'module-tool', `${label} (${name}): 'output' must be a zod schema when given`);
  const { input, output, ...rest } = t;
  const def: Record<string, unknown> = { ...rest, inputSchema: zodToJsonSchema(input, `${name}: input`, 'input') };
  if (output !== undefined) def.outputSchema = zodToJsonSchema(output as z.ZodType, `${name}: output`, 'output');
  return def;
};

/** Import the module and return its tools as raw definitions; a module without a `tools` array is a usage error. */
export const loadZodToolModule = async (file: string): Promise<Record<string, unknown>[]> => {
  let mod: Record<string, unknown>;
  try {
    // A TypeScript module needs tsx's loader; a compiled estate does not register it otherwise.
    if (/\.[cm]?tsx?$/.test(file)) (await import('tsx/esm/api')).register();
    mod = (await import(pathToFileURL(resolve(file)).href)) as Record<string, unknown>;
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ERR_MODULE_NOT_FOUND' && String((e as Error).message).includes(resolve(file))) throw new DomainError('usage', 'unreadable-file', `cannot read ${file}: no such file`);
    throw new DomainError('usage', 'module-load', `cannot import ${file}: ${e instanceof Error ? e.message : String(e)}`);
  }
  const tools = mod.tools;
  if (tools === undefined) throw new DomainError('usage', 'module-tools', `${file}: the module has no 'tools' export (expected: export const tools = [{ name, version, description, input: z.object(...), access, sideEffect, handler }])`);
  if (!Array.isArray(tools)) throw new DomainError('usage', 'module-tools', `${file}: the 'tools' export must be an array, got ${tools === null ? 'null' : typeof tools}`);
  if (tools.length === 0) throw new DomainError('usage', 'module-tools', `${file}: the 'tools' export is empty`);
  return tools.map((t, i) => zodToolToDefinition(t, i, file));
};
