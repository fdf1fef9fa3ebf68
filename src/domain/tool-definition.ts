/**
 * Parsing a tool definition file (SPEC §1) into a ToolDefinition, with one specific, one-line error per broken rule.
 * Text parsing (JSON/YAML) and rule checking are separate so the CLI, the HTTP API and the demo share the rules.
 */
import { parse as parseYaml, YAMLParseError } from 'yaml';
import { z } from 'zod';
import { DomainError, invalidDefinition } from './errors.ts';
import type { SchemaCompiler } from './schema-compiler.ts';
import { isStrictSemver } from './semver.ts';
import { CLASSIFICATIONS, SIDE_EFFECTS, type JsonObject, type SideEffect, type ToolDefinition } from './types.ts';

export const NAME_PATTERN = /^[a-z][a-z0-9_-]*(\.[a-z][a-z0-9_-]*)*$/;
export const NAME_MAX = 128;
export const DEFAULT_TIMEOUT_MS = 30_000;

/** Parse definition text. `format` comes from the file extension; YAML is a superset of JSON, so unknown means YAML. */
export const parseDefinitionText = (text: string, source: string, format: 'json' | 'yaml' = 'yaml'): unknown => {
  try {
    if (format === 'json') return JSON.parse(text) as unknown;
    return parseYaml(text, { prettyErrors: false, uniqueKeys: true }) as unknown;
  } catch (e) {
    const detail =
      e instanceof YAMLParseError
        ? `${e.code} at line ${e.linePos?.[0]?.line ?? '?'}, column ${e.linePos?.[0]?.col ?? '?'}`
        : e instanceof Error
          ? e.message.split('\n')[0]
          : String(e);
    throw new DomainError('usage', 'syntax-error', `${source}: not valid ${format.toUpperCase()}: ${detail}`);
  }
};

const jsonObject = z.custom<JsonObject>((v) => typeof v === 'object' && v !== null && !Array.isArray(v), {
  message: 'must be an object',
});

const definitionSchema = z
  .object({
    name: z.string({ error: 'is required (a string)' }),
    version: z.string({ error: 'is required (a string such as 1.0.0)' }),
    title: z.string().min(1).optional(),
    description: z.string({ error: 'is required (a string)' }).min(1, 'must not be empty'),
    inputSchema: jsonObject,
    outputSchema: jsonObject.optional(),
    annotations: jsonObject.optional(),
    access: z
      .object({
        requiredScopes: z.array(z.string().min(1)).default([]),
        tenants: z.array(z.string().min(1)).default([]),
        classification: z.string({ error: `is required (one of ${CLASSIFICATIONS.join(', ')})` }),
      })
      .strict(),
    sideEffect: z.string({ error: `is required (one of ${SIDE_EFFECTS.join(', ')})` }),
    handler: z.string({ error: 'is required (a string)' }).min(1, 'must not be empty'),
    timeoutMs: z.number().int().positive().max(3_600_000).optional(),
  })
  .strict();

/** The name rules alone (cheap, nothing compiled): the publishing API applies them before authorizing a namespace. */
export const checkName = (name: string): void => {
  if (name.length > NAME_MAX) throw invalidDefinition('invalid-name', `name: '${name.slice(0, 40)}...' is longer than ${NAME_MAX} characters`);
  if (!NAME_PATTERN.test(name)) {
    throw invalidDefinition('invalid-name', `name: '${name}' must match ${NAME_PATTERN.source} (lower case, dots separate namespaces)`);
  }
};

const issuePath = (path: readonly PropertyKey[]): string => (path.length ? path.map(String).join('.') : '(root)');

/** Check every SPEC §1 rule and return the normalised definition. Throws DomainError('invalid-definition', code, ...). */
export const validateDefinition = (raw: unknown, compiler: SchemaCompiler): ToolDefinition => {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw invalidDefinition('not-an-object', 'definition: must be an object with name, version, description, inputSchema, access, sideEffect, handler');
  }
  const parsed = definitionSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    if (issue?.code === 'unrecognized_keys') {
      const where = issue.path.length ? `${issuePath(issue.path)}: ` : '';
      throw invalidDefinition('unknown-field', `${where}unknown field${issue.keys.length > 1 ? 's' : ''} ${issue.keys.map((k) => `'${k}'`).join(', ')}`);
    }
    throw invalidDefinition('invalid-field', `${issuePath(issue?.path ?? [])}: ${issue?.message ?? 'invalid'}`);
  }
  const d = parsed.data;

  checkName(d.name);
  if (!isStrictSemver(d.version)) {
    throw invalidDefinition('invalid-version', `version: '${d.version}' is not strict semver MAJOR.MINOR.PATCH (no pre-release, no build, no leading zeros)`);
  }
  if (!(CLASSIFICATIONS as readonly string[]).includes(d.access.classification)) {
    throw invalidDefinition(
      'unknown-classification',
      `access.classification: '${d.access.classification}' is not one of ${CLASSIFICATIONS.join(' < ')}`,
    );
  }
  if (!(SIDE_EFFECTS as readonly string[]).includes(d.sideEffect)) {
    throw invalidDefinition('invalid-side-effect', `sideEffect: '${d.sideEffect}' is not one of ${SIDE_EFFECTS.join(', ')}`);
  }
  const sideEffect = d.sideEffect as SideEffect;
  if (d.annotations) checkAnnotations(d.annotations, sideEffect);

  compiler.check(d.inputSchema, 'inputSchema');
  if (d.outputSchema) compiler.check(d.outputSchema, 'outputSchema');

  const def: ToolDefinition = {
    name: d.name,
    version: d.version,
    ...(d.title !== undefined ? { title: d.title } : {}),
    description: d.description,
    inputSchema: d.inputSchema,
    ...(d.outputSchema !== undefined ? { outputSchema: d.outputSchema } : {}),
    ...(d.annotations !== undefined ? { annotations: d.annotations } : {}),
    access: {
      requiredScopes: [...new Set(d.access.requiredScopes)].sort(),
      tenants: [...new Set(d.access.tenants)].sort(),
      classification: d.access.classification as ToolDefinition['access']['classification'],
    },
    sideEffect,
    handler: d.handler,
    timeoutMs: d.timeoutMs ?? DEFAULT_TIMEOUT_MS,
  };
  return def;
};

/** The hints a side effect implies (SPEC §1): what the server advertises, and what an explicit annotation may not contradict. */
export const derivedHints = (sideEffect: SideEffect): { readOnlyHint: boolean; idempotentHint: boolean } => ({
  readOnlyHint: sideEffect === 'none',
  idempotentHint: sideEffect !== 'non_idempotent',
});

const checkAnnotations = (annotations: JsonObject, sideEffect: SideEffect): void => {
  const derived = derivedHints(sideEffect);
  for (const key of ['readOnlyHint', 'idempotentHint'] as const) {
    const v = annotations[key];
    if (v === undefined) continue;
    if (typeof v !== 'boolean') throw invalidDefinition('annotation-contradiction', `annotations.${key}: must be a boolean`);
    if (v !== derived[key]) {
      throw invalidDefinition(
        'annotation-contradiction',
        `annotations.${key}: ${String(v)} contradicts sideEffect '${sideEffect}' (it implies ${key} ${String(derived[key])})`,
      );
    }
  }
  if (annotations.destructiveHint !== undefined && sideEffect !== 'non_idempotent') {
    throw invalidDefinition('annotation-contradiction', `annotations.destructiveHint: may be set only when sideEffect is 'non_idempotent' (it is '${sideEffect}')`);
  }
};

/** The annotations a serving process advertises: the definition's own, with the hints derived from sideEffect. */
export const servedAnnotations = (def: ToolDefinition): JsonObject => ({ ...(def.annotations ?? {}), ...derivedHints(def.sideEffect) });
