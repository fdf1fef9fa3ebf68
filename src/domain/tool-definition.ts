/**
 * Parsing a tool definition file (SPEC §1) into a ToolDefinition, with one specific, one-line error per broken rule.
 * Text parsing (JSON/YAML) and rule checking are separate so the CLI, the HTTP API and the demo share the rules.
 */
import { parse as parseYaml, YAMLParseError } from 'yaml';
import { z } from 'zod';
import { DomainError, invalidDefinition } from './errors.ts';
import type { SchemaCompiler } from './schema-compiler.ts';
import { isStrictSemver } from './semver.ts';
import { issuePath } from './zod-issues.ts';
import { nestsDeeperThan, scanJsonDepth, yamlBlockDepthExceeds } from './json-depth.ts';
import { CLASSIFICATIONS, SIDE_EFFECTS, type JsonObject, type SideEffect, type ToolDefinition } from './types.ts';

export const NAME_PATTERN = /^[a-z][a-z0-9_-]*(\.[a-z][a-z0-9_-]*)*$/;
export const NAME_MAX = 128;

/** A tool's namespace: its name's first segment (the whole name when it has one segment). */
export const toolNamespace = (name: string): string => {
  const dot = name.indexOf('.');
  return dot < 0 ? name : name.slice(0, dot);
};
export const DEFAULT_TIMEOUT_MS = 30_000;

/** Most levels a definition may nest: far above what MAX_SCHEMA_DEPTH subschemas need, far below costly. */
export const MAX_DEFINITION_DEPTH = 1024;
/** The largest definition text read: the publishing API's body bound (#http/guards MAX_BODY_BYTES). */
export const MAX_DEFINITION_BYTES = 1024 * 1024;

/**
 * Parse definition text. `format` comes from the file extension; YAML is a superset of JSON, so unknown means YAML.
 * Bounded before it is parsed: the size, and the nesting of brackets (a YAML flow sequence 10,000 deep took the `yaml`
 * parser's process down with a fatal out-of-memory in V8's RegExp compiler; a definition 4,000 levels deep overflowed
 * the stack of the structured clone that sends it to the definition worker); then the parsed value's depth, which
 * YAML's block nesting reaches without brackets.
 */
export const parseDefinitionText = (text: string, source: string, format: 'json' | 'yaml' = 'yaml'): unknown => {
  if (text.length > MAX_DEFINITION_BYTES) throw tooLarge(source);
  const limit = format === 'json' ? `${MAX_DEFINITION_DEPTH} levels` : `${MAX_YAML_BLOCK_DEPTH} levels (${MAX_YAML_FLOW_DEPTH} in brackets)`;
  const tooDeep = new DomainError('usage', 'too-deep', `${source}: nested deeper than ${limit} (not read further)`);
  // For YAML an upper bound: brackets in comments and single-quoted scalars count too. YAML is held lower: the `yaml`
  // parser recurses per level, its block and flow levels add up, and past ~900 of them the process could die outright.
  if (format === 'json' ? scanJsonDepth(text, MAX_DEFINITION_DEPTH).tooDeep : yamlTooDeep(text)) throw tooDeep;
  let value: unknown;
  try {
    value = format === 'json' ? (JSON.parse(text) as unknown) : (parseYaml(text, { prettyErrors: true, uniqueKeys: true }) as unknown);
  } catch (e) {
    throw new DomainError('usage', 'syntax-error', `${source}: not valid ${format.toUpperCase()}: ${syntaxDetail(e, text, format)}`);
  }
  if (format === 'yaml' && nestsDeeperThan(value, MAX_DEFINITION_DEPTH)) throw tooDeep;
  return value;
};

/** The most levels a YAML definition may nest in block style, and in flow style (`[`, `{`): together well under ~900. */
export const MAX_YAML_BLOCK_DEPTH = 384;
export const MAX_YAML_FLOW_DEPTH = 256;
const yamlTooDeep = (text: string): boolean =>
  scanJsonDepth(text, MAX_YAML_FLOW_DEPTH).tooDeep || yamlBlockDepthExceeds(text, MAX_YAML_BLOCK_DEPTH);

export const tooLarge = (source: string): DomainError =>
  new DomainError('usage', 'too-large', `${source}: larger than ${MAX_DEFINITION_BYTES} bytes (a definition is at most 1 MiB)`);

/** One line naming what is wrong and where (line and column, 1-based), whichever parser failed. */
const syntaxDetail = (e: unknown, text: string, format: 'json' | 'yaml'): string => {
  if (e instanceof YAMLParseError) {
    const at = e.linePos?.[0];
    const what = (e.message.split('\n')[0] ?? e.code).replace(/ at line \d+, column \d+:?$/, '');
    return at ? `${what} (${e.code}) at line ${at.line}, column ${at.col}` : `${what} (${e.code})`;
  }
  const full = e instanceof Error ? e.message : String(e);
  if (format !== 'json') return full.split('\n')[0] ?? full;
  // V8 names an offset for some JSON errors and none for others; find the offset where parsing stops being possible.
  const offset = /at position (\d+)/.exec(full)?.[1];
  const where = lineColumn(text, offset !== undefined ? Number(offset) : jsonErrorOffset(text));
  const what = full.replace(/, (\.\.\.)?".*" is not valid JSON$/s, '').replace(/( in JSON)? at position \d+.*$/s, '').replace(/\n/g, '\\n');
  return `${what} at line ${where.line}, column ${where.col}`;
};

const lineColumn = (text: string, offset: number): { line: number; col: number } => {
  const before = text.slice(0, Math.max(0, Math.min(offset, text.length)));
  const lines = before.split('\n');
  return { line: lines.length, col: (lines[lines.length - 1]?.length ?? 0) + 1 };
};

/** The offset where JSON.parse gave up: the longest prefix that is still a valid start of a JSON text. */
const jsonErrorOffset = (text: string): number => {
  // A prefix is viable when it parses, or fails only because it ended (or at its very end): monotonic in length.
  const viable = (n: number): boolean => {
    try {
      JSON.parse(text.slice(0, n));
      return true;
    } catch (err) {
      const m = err instanceof Error ? err.message : '';
      const at = /at position (\d+)/.exec(m)?.[1];
      return /Unexpected end of JSON input|Unterminated string/.test(m) || (at !== undefined && Number(at) >= n);
    }
  };
  let lo = 0;
  let hi = text.length;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (viable(mid)) lo = mid;
    else hi = mid - 1;
  }
  return lo;
};

/** What a value is, in a user's words (YAML reads `1.0` as a number, `yes` as a boolean, `~` as null). */
const kindOf = (v: unknown): string =>
  v === null ? 'null' : Array.isArray(v) ? 'a list' : typeof v === 'object' ? 'a mapping' : typeof v === 'string' ? 'a string' : `the ${typeof v} ${String(v)}`;

/** A field's error: "is required (<what>)" when missing, "must be <what>, got <kind>" otherwise. */
const expect =
  (what: string, hint = '') =>
  (issue: { input?: unknown }): string =>
    issue.input === undefined ? `is required (${what})` : `must be ${what}, got ${kindOf(issue.input)}${hint}`;

const isObject = (v: unknown): boolean => typeof v === 'object' && v !== null && !Array.isArray(v);
const jsonObject = (what: string) => z.custom<JsonObject>(isObject, { error: expect(what) });
const nonEmptyString = (what: string) => z.string({ error: expect(what) }).min(1, 'must not be empty');

const definitionSchema = z
  .object({
    name: z.string({ error: expect('a string such as payments.lookup') }),
    version: z.string({
      error: expect("a quoted string such as '1.0.0'", " (YAML reads an unquoted 1.0 as a number: write version: '1.0.0')"),
    }),
    title: nonEmptyString('a string').optional(),
    description: nonEmptyString('a string'),
    inputSchema: jsonObject('a JSON Schema object with type: object'),
    outputSchema: jsonObject('a JSON Schema object with type: object').optional(),
    annotations: jsonObject('a mapping of MCP tool annotations').optional(),
    access: z
      .object(
        {
          requiredScopes: z.array(nonEmptyString('a scope name'), { error: expect('a list of scope names') }).default([]),
          tenants: z.array(nonEmptyString('a tenant name'), { error: expect('a list of tenant names') }).default([]),
          classification: z.string({ error: expect(`one of ${CLASSIFICATIONS.join(', ')}`) }),
        },
        { error: expect(`a mapping with classification (one of ${CLASSIFICATIONS.join(', ')}) and optional requiredScopes and tenants`) },
      )
      .strict(),
    sideEffect: z.string({ error: expect(`one of ${SIDE_EFFECTS.join(', ')}`) }),
    handler: nonEmptyString('a string naming the implementation, e.g. payments.lookup'),
    timeoutMs: z
      .number({ error: expect('a whole number of milliseconds') })
      .int('must be a whole number of milliseconds')
      .positive('must be greater than 0')
      .max(3_600_000, 'must be at most 3600000 (one hour)')
      .optional(),
  })
  .strict();

/** The name rules alone (cheap, nothing compiled): the publishing API applies them before authorizing a namespace. */
export const checkName = (name: string): void => {
  if (name.length > NAME_MAX) throw invalidDefinition('invalid-name', `name: '${name.slice(0, 40)}...' is longer than ${NAME_MAX} characters`);
  if (!NAME_PATTERN.test(name)) {
    throw invalidDefinition('invalid-name', `name: '${name}' must match ${NAME_PATTERN.source} (lower case, dots separate namespaces)`);
  }
};

/** One broken rule: its code and its one-line message. */
interface Problem {
  code: string;
  message: string;
}

/**
 * Check every SPEC §1 rule and return the normalised definition. Every broken rule is reported at once: the error's
 * code is the first problem's, its message lists them all ("; "-separated, still one line).
 */
export const validateDefinition = (raw: unknown, compiler: SchemaCompiler): ToolDefinition => {
  if (!isObject(raw)) {
    throw invalidDefinition('not-an-object', 'definition: must be an object with name, version, description, inputSchema, access, sideEffect, handler');
  }
  const problems: Problem[] = [];
  const problem = (code: string, message: string): void => void problems.push({ code, message });
  const fields = raw as Record<string, unknown>;

  const parsed = definitionSchema.safeParse(raw);
  if (!parsed.success) {
    for (const issue of parsed.error.issues) {
      if (issue.code === 'unrecognized_keys') {
        const where = issue.path.length ? `${issuePath(issue.path)}: ` : '';
        problem('unknown-field', `${where}unknown field${issue.keys.length > 1 ? 's' : ''} ${issue.keys.map((k) => `'${k}'`).join(', ')}`);
      } else {
        problem('invalid-field', `${issuePath(issue.path)}: ${issue.message}`);
      }
    }
  }
  // The rules below look at whatever fields are readable, so one run reports everything that is wrong.
  const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
  const access = isObject(fields.access) ? (fields.access as Record<string, unknown>) : {};
  const name = str(fields.name);
  const version = str(fields.version);
  const classification = str(access.classification);
  const sideEffectText = str(fields.sideEffect);

  const collect = (check: () => void): void => {
    try {
      check();
    } catch (e) {
      if (!(e instanceof DomainError)) throw e;
      problem(e.code, e.message);
    }
  };
  if (name !== undefined) collect(() => checkName(name));
  if (version !== undefined && !isStrictSemver(version)) {
    problem('invalid-version', `version: '${version}' is not strict semver MAJOR.MINOR.PATCH (no pre-release, no build, no leading zeros)`);
  }
  if (classification !== undefined && !(CLASSIFICATIONS as readonly string[]).includes(classification)) {
    problem('unknown-classification', `access.classification: '${classification}' is not one of ${CLASSIFICATIONS.join(' < ')}`);
  }
  const sideEffectKnown = sideEffectText !== undefined && (SIDE_EFFECTS as readonly string[]).includes(sideEffectText);
  if (sideEffectText !== undefined && !sideEffectKnown) {
    problem('invalid-side-effect', `sideEffect: '${sideEffectText}' is not one of ${SIDE_EFFECTS.join(', ')}`);
  }
  if (sideEffectKnown && isObject(fields.annotations)) collect(() => checkAnnotations(fields.annotations as JsonObject, sideEffectText as SideEffect));
  const handler = str(fields.handler);
  const handlerProblem = handler === undefined ? null : handlerSyntaxProblem(handler);
  if (handlerProblem) problem('invalid-handler', handlerProblem);
  else if (name !== undefined && handler !== undefined && NAME_PATTERN.test(name)) collect(() => checkHandlerNamespace(name, handler));
  if (isObject(fields.inputSchema)) collect(() => compiler.check(fields.inputSchema as JsonObject, 'inputSchema'));
  if (isObject(fields.outputSchema)) collect(() => compiler.check(fields.outputSchema as JsonObject, 'outputSchema'));

  const first = problems[0];
  if (first) {
    const message = problems.length === 1 ? first.message : `${problems.length} problems: ${problems.map((p) => p.message).join('; ')}`;
    throw invalidDefinition(first.code, message);
  }
  if (!parsed.success) throw invalidDefinition('invalid-field', 'definition: invalid'); // unreachable: every issue is a problem
  const d = parsed.data;
  const sideEffect = d.sideEffect as SideEffect;

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

/** A local handler: dot-separated segments, none empty, nothing that is a space or a control character. */
const LOCAL_HANDLER = /^[^\s.\p{Cc}]+(\.[^\s.\p{Cc}]+)*$/u;
/** `upstream:<ns>/<tool>`: the namespace as upstream namespaces are named, the upstream's own tool name after it. */
const UPSTREAM_HANDLER = /^upstream:[a-z][a-z0-9_-]*\/[^\p{Cc}]+$/u;
const HANDLER_MAX = 256;

/** Why a handler name cannot name an implementation (`invalid-handler`), or null. */
const handlerSyntaxProblem = (handler: string): string | null => {
  const shown = handler.length > 80 ? `${handler.slice(0, 80)}...` : handler;
  if (handler.length > HANDLER_MAX) return `handler: '${shown}' is longer than ${HANDLER_MAX} characters`;
  if (handler.startsWith('upstream:')) {
    return UPSTREAM_HANDLER.test(handler) ? null : `handler: '${shown}' must be upstream:<ns>/<tool> (a namespace, a slash, and the upstream's tool name)`;
  }
  return LOCAL_HANDLER.test(handler) ? null : `handler: '${shown}' must be dot-separated names (no empty segment, no spaces), e.g. payments.lookup`;
};

/**
 * The namespace a handler belongs to: the first dot-separated segment of its name, or `<ns>` of `upstream:<ns>/<tool>`.
 * Undefined when the handler name has no namespace we can read (an empty first segment, an upstream without `/`).
 */
export const handlerNamespace = (handler: string): string | undefined => {
  if (handler.startsWith('upstream:')) {
    const rest = handler.slice('upstream:'.length);
    const slash = rest.indexOf('/');
    return slash > 0 ? rest.slice(0, slash) : undefined;
  }
  const first = handler.split('.')[0];
  return first ? first : undefined;
};

/**
 * A handler must belong to the tool's namespace (docs/security.md): otherwise whoever may publish `payments.*` could
 * serve `accounts.balance`'s code, with its data, under a public `payments.mirror` that anyone may call.
 */
export const checkHandlerNamespace = (name: string, handler: string): void => {
  const outside = handlerOutsideNamespace(name, handler);
  if (outside !== null) throw invalidDefinition('handler-namespace', outside);
};

/**
 * Whether `handlerNamespace(handler)` is the namespace of the tool `name` (its first name segment), comparing in place:
 * a serving process asks it of every version in the catalogue at start and of every version a view considers.
 */
const inToolNamespace = (name: string, handler: string): boolean => {
  const dot = name.indexOf('.');
  const n = dot < 0 ? name.length : dot;
  const upstream = handler.startsWith('upstream:');
  const start = upstream ? 'upstream:'.length : 0;
  const sep = handler.indexOf(upstream ? '/' : '.', start);
  const end = sep < 0 ? (upstream ? -1 : handler.length) : sep;
  if (end <= start || end - start !== n) return false;
  for (let i = 0; i < n; i++) if (handler.charCodeAt(start + i) !== name.charCodeAt(i)) return false;
  return true;
};

/**
 * Why `handler` is not in the namespace of the tool `name` (the `handler-namespace` message), or null when it is. Also
 * asked of versions already in the store: one published before the rule existed is never served (src/mcp/server-core.ts).
 */
export const handlerOutsideNamespace = (name: string, handler: string): string | null => {
  if (inToolNamespace(name, handler)) return null;
  const ns = toolNamespace(name);
  const shown = handler.length > 80 ? `${handler.slice(0, 80)}...` : handler;
  return `handler: '${shown}' is not in the tool's namespace '${ns}' (a handler's first name segment, or <ns> of upstream:<ns>/<tool>, must be '${ns}')`;
};

/** The hints a side effect implies (SPEC §1): what the server advertises, and what an explicit annotation may not contradict. */
export const derivedHints = (sideEffect: SideEffect): { readOnlyHint: boolean; idempotentHint: boolean } => ({
  readOnlyHint: sideEffect === 'none',
  idempotentHint: sideEffect !== 'non_idempotent',
});

/** MCP's ToolAnnotations. Other keys are kept as given (a newer revision may add some); a near miss of one is refused. */
const MCP_ANNOTATIONS = ['title', 'readOnlyHint', 'destructiveHint', 'idempotentHint', 'openWorldHint'] as const;
const squash = (key: string): string => key.toLowerCase().replace(/[-_\s]/g, '');

const checkAnnotations = (annotations: JsonObject, sideEffect: SideEffect): void => {
  // `readonlyHint: true` passed the contradiction rule (it reads readOnlyHint) and reached clients as a key none reads:
  // a typo must not silently weaken a contract (SPEC §1).
  for (const key of Object.keys(annotations)) {
    if ((MCP_ANNOTATIONS as readonly string[]).includes(key)) continue;
    const meant = MCP_ANNOTATIONS.find((k) => squash(k) === squash(key));
    if (meant) throw invalidDefinition('annotation-typo', `annotations.${key.slice(0, 80)}: not an MCP annotation; did you mean ${meant}?`);
  }
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
