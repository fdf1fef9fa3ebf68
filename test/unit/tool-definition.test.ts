/** Parsing definitions (SPEC §1): every malformed definition gets its own specific one-line error. */
import { describe, expect, it } from 'vitest';
import { DomainError } from '#domain/errors';
import { createSchemaCompiler } from '#domain/schema-compiler';
import { parseDefinitionText, servedAnnotations, toolNamespace, validateDefinition } from '#domain/tool-definition';
import { aRawDefinition } from '../fixtures/builders.ts';

const compiler = createSchemaCompiler();
const refusal = (raw: unknown): DomainError => {
  try {
    validateDefinition(raw, compiler);
  } catch (e) {
    expect(e).toBeInstanceOf(DomainError);
    const err = e as DomainError;
    expect(err.message).not.toContain('\n');
    return err;
  }
  throw new Error('expected a refusal');
};

describe('a valid definition', () => {
  it('is normalised: scopes and tenants sorted and deduplicated, timeoutMs defaulted', () => {
    const def = validateDefinition(aRawDefinition({ access: { requiredScopes: ['b', 'a', 'b'], tenants: ['globex', 'acme'], classification: 'internal' } }), compiler);
    expect(def.access).toEqual({ requiredScopes: ['a', 'b'], tenants: ['acme', 'globex'], classification: 'internal' });
    expect(def.timeoutMs).toBe(30_000);
  });
  it('YAML and JSON texts give the same definition', () => {
    const json = JSON.stringify(aRawDefinition());
    const yaml = `name: payments.lookup\nversion: 1.0.0\ntitle: Look up a payment\ndescription: Returns status, amount and currency of a payment by reference.\ninputSchema:\n  type: object\n  properties:\n    reference: { type: string, pattern: '^PMT-\\d{3,}$', description: Payment reference }\n    include_legs: { type: boolean, default: false }\n  required: [reference]\n  additionalProperties: false\naccess:\n  requiredScopes: [payments.read]\n  tenants: [acme]\n  classification: confidential\nsideEffect: none\nhandler: payments.lookup\n`;
    expect(validateDefinition(parseDefinitionText(yaml, 'x.yaml'), compiler)).toEqual(validateDefinition(parseDefinitionText(json, 'x.json', 'json'), compiler));
  });
  it('served annotations carry the hints derived from sideEffect', () => {
    const def = validateDefinition(aRawDefinition({ sideEffect: 'non_idempotent', annotations: { destructiveHint: true } }), compiler);
    expect(servedAnnotations(def)).toEqual({ destructiveHint: true, readOnlyHint: false, idempotentHint: false });
  });
});

describe('refusals, each with its own code', () => {
  it.each([
    ['upper case', 'Payments.lookup'],
    ['leading digit', '1payments'],
    ['empty segment', 'payments..lookup'],
    ['trailing dot', 'payments.'],
    ['space', 'payments lookup'],
    ['too long', `a${'b'.repeat(128)}`],
  ])('bad name (%s)', (_why, name) => {
    expect(refusal(aRawDefinition({ name })).code).toBe('invalid-name');
  });
  it('a 128-character name is fine', () => {
    const name = `a${'b'.repeat(127)}`;
    expect(validateDefinition(aRawDefinition({ name, handler: name }), compiler).name).toHaveLength(128);
  });
  it.each([
    ['payments.mirror', 'accounts.balance'],
    ['payments.mirror', 'paymentsx.lookup'],
    ['payments', 'accounts'],
    ['payments.mirror', 'upstream:accounts/balance'],
  ])('a handler outside the namespace: %s with handler %s (handler-namespace)', (name, handler) => {
    const e = refusal(aRawDefinition({ name, handler }));
    expect(e.code).toBe('handler-namespace');
    expect(e.message).toContain("namespace 'payments'");
  });
  // A probe found 'upstream:payments' refused as outside the namespace 'payments' (it is not: it names no tool), and
  // 'upstream:payments/', 'payments..x' and 'payments.' accepted.
  it.each([
    ['upstream:payments', /must be upstream:<ns>\/<tool>/],
    ['upstream:payments/', /must be upstream:<ns>\/<tool>/],
    ['upstream:/payments', /must be upstream:<ns>\/<tool>/],
    ['payments..x', /must be dot-separated names/],
    ['payments.', /must be dot-separated names/],
    ['.payments', /must be dot-separated names/],
    ['payments.look up', /must be dot-separated names/],
    [`payments.${'x'.repeat(300)}`, /longer than 256 characters/],
  ])('a handler that names nothing: %j (invalid-handler)', (handler, message) => {
    const e = refusal(aRawDefinition({ name: 'payments.mirror', handler }));
    expect(e.code).toBe('invalid-handler');
    expect(e.message).toMatch(message);
  });
  it.each([
    ['payments.mirror', 'payments.lookup'],
    ['payments.mirror', 'payments'],
    ['payments', 'payments.any.thing'],
    ['payments.mirror', 'upstream:payments/lookup'],
  ])('a handler in the namespace is fine: %s with handler %s', (name, handler) => {
    expect(validateDefinition(aRawDefinition({ name, handler }), compiler).handler).toBe(handler);
  });
  it.each(['1.0', '1.0.0-beta.1', '1.0.0+build', '01.0.0', 'v1.0.0', '1.0.0.0', ''])('bad semver %j', (version) => {
    expect(refusal(aRawDefinition({ version })).code).toBe('invalid-version');
  });
  it('unknown classification', () => {
    const e = refusal(aRawDefinition({ access: { classification: 'secret' } }));
    expect(e.code).toBe('unknown-classification');
    expect(e.message).toContain("'secret'");
  });
  it('unknown side effect', () => {
    expect(refusal(aRawDefinition({ sideEffect: 'maybe' })).code).toBe('invalid-side-effect');
  });
  it('remote $ref', () => {
    const e = refusal(aRawDefinition({ inputSchema: { type: 'object', properties: { a: { $ref: 'https://evil.example/schema.json' } } } }));
    expect(e.code).toBe('remote-ref');
  });
  it('a schema that does not compile', () => {
    expect(refusal(aRawDefinition({ inputSchema: { type: 'object', properties: { a: { type: 'strin' } } } })).code).toBe('schema-invalid');
  });
  it('an unknown keyword (a typo must not silently weaken a contract)', () => {
    expect(refusal(aRawDefinition({ inputSchema: { type: 'object', properties: { a: { type: 'number', minimun: 1 } } } })).code).toBe('unknown-keyword');
  });
  it('a pattern a linear-time engine cannot run', () => {
    expect(refusal(aRawDefinition({ inputSchema: { type: 'object', properties: { a: { type: 'string', pattern: '^(a)\\1$' } } } })).code).toBe('unsafe-pattern');
  });
  it('annotations that contradict sideEffect', () => {
    expect(refusal(aRawDefinition({ sideEffect: 'non_idempotent', annotations: { readOnlyHint: true } })).code).toBe('annotation-contradiction');
    expect(refusal(aRawDefinition({ sideEffect: 'none', annotations: { destructiveHint: false } })).code).toBe('annotation-contradiction');
    expect(refusal(aRawDefinition({ sideEffect: 'non_idempotent', annotations: { idempotentHint: true } })).code).toBe('annotation-contradiction');
  });
  it.each([
    [{ readonlyHint: true }, 'readOnlyHint'],
    [{ idempotenthint: true }, 'idempotentHint'],
    [{ read_only_hint: true }, 'readOnlyHint'],
    [{ 'destructive-hint': true }, 'destructiveHint'],
    [{ OpenWorldHint: false }, 'openWorldHint'],
  ])('a misspelt MCP annotation %j is refused, naming the one meant (found by a probe: it slipped past the contradiction rule)', (annotations, meant) => {
    const e = refusal(aRawDefinition({ sideEffect: 'non_idempotent', annotations }));
    expect(e.code).toBe('annotation-typo');
    expect(e.message).toContain(`did you mean ${meant}?`);
  });
  it('other annotation keys are kept as given (a later MCP revision may add some)', () => {
    expect(validateDefinition(aRawDefinition({ annotations: { title: 'T', vendorHint: 1 } }), compiler).annotations).toEqual({ title: 'T', vendorHint: 1 });
  });
  it('missing and unknown fields', () => {
    const { description: _d, ...noDescription } = aRawDefinition();
    expect(refusal(noDescription).message).toMatch(/^description: /);
    expect(refusal(aRawDefinition({ colour: 'red' })).code).toBe('unknown-field');
    expect(refusal([1, 2]).code).toBe('not-an-object');
  });
  it('YAML and JSON syntax errors are usage errors naming the file and the place', () => {
    expect(() => parseDefinitionText('name: [unclosed\n', 'bad.yaml')).toThrow(/^bad\.yaml: not valid YAML: .*line/);
    expect(() => parseDefinitionText('{"name": }', 'bad.json', 'json')).toThrow(/^bad\.json: not valid JSON/);
  });
});

describe('messages a new user meets (issue 8)', () => {
  const lookupYaml = (replace: (text: string) => string = (t) => t): string =>
    replace(
      `name: payments.lookup\nversion: 1.0.0\ndescription: Looks a payment up.\ninputSchema: { type: object }\naccess: { requiredScopes: [payments.read], classification: confidential }\nsideEffect: none\nhandler: payments.lookup\n`,
    );
  it('a YAML syntax error gives the real line and column, never "?"', () => {
    const text = 'name: payments.lookup\nversion: 1.0.0\ndescription: [unclosed\nsideEffect: none\n';
    let message = '';
    try {
      parseDefinitionText(text, 'bad.yaml');
    } catch (e) {
      message = (e as Error).message;
    }
    expect(message).toMatch(/^bad\.yaml: not valid YAML: .* at line \d+, column \d+$/);
    expect(message).not.toContain('?');
    expect(message).not.toContain('\n');
    expect(() => parseDefinitionText('name: a\nname: b\n', 'dup.yaml')).toThrow(/DUPLICATE_KEY\) at line 2, column 1$/);
  });
  it('a JSON syntax error gives the line and column too', () => {
    expect(() => parseDefinitionText('{\n  "name": "a",\n  "version": }\n', 'bad.json', 'json')).toThrow(/^bad\.json: not valid JSON: Unexpected token '}' at line 3, column 14$/);
    expect(() => parseDefinitionText('{"a": 1', 'cut.json', 'json')).toThrow(/at line 1, column 8$/);
  });
  it('version: 1.0 (a YAML number) says the version must be a quoted string', () => {
    const e = refusal(parseDefinitionText(lookupYaml((t) => t.replace('version: 1.0.0', 'version: 1.0')), 'x.yaml'));
    expect(e.code).toBe('invalid-field');
    expect(e.message).toBe("version: must be a quoted string such as '1.0.0', got the number 1 (YAML reads an unquoted 1.0 as a number: write version: '1.0.0')");
  });
  it('a missing access says what is missing in Estate\'s words', () => {
    const e = refusal(parseDefinitionText(lookupYaml((t) => t.replace(/^access:.*\n/m, '')), 'x.yaml'));
    expect(e.message).toBe(
      'access: is required (a mapping with classification (one of public, internal, confidential, restricted) and optional requiredScopes and tenants)',
    );
    expect(e.message).not.toMatch(/Invalid input|expected object|received/);
    const noClass = refusal(parseDefinitionText(lookupYaml((t) => t.replace(', classification: confidential', '')), 'x.yaml'));
    expect(noClass.message).toBe('access.classification: is required (one of public, internal, confidential, restricted)');
  });
  it('every problem of a definition is reported at once, not just the first', () => {
    const e = refusal({
      name: 'Payments.Lookup',
      version: '1.0',
      description: 'x',
      inputSchema: { type: 'object', properties: { a: { type: 'number', minimun: 1 } } },
      access: { classification: 'secret', requiredScope: ['x'] },
      sideEffect: 'maybe',
      handler: 'payments.lookup',
      colour: 'red',
    });
    expect(e.message).toMatch(/^7 problems: /);
    for (const part of ["unknown field 'colour'", "access: unknown field 'requiredScope'", "name: 'Payments.Lookup'", "version: '1.0'", "access.classification: 'secret'", "sideEffect: 'maybe'", 'minimun']) {
      expect(e.message).toContain(part);
    }
  });
});

describe('toolNamespace', () => {
  it('is the first segment of a tool name, or the whole name of one segment', () => {
    expect(toolNamespace('payments.lookup')).toBe('payments');
    expect(toolNamespace('payments.refunds.create')).toBe('payments');
    expect(toolNamespace('ping')).toBe('ping');
  });
});
