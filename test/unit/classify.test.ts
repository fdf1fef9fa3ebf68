import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { classifyDefinition, classifySchemaChange } from '#domain/classify';
import type { JsonObject, Level, Reason, ToolDefinition } from '#domain/types';

// ------------------------------------------------------------------ builders

const obj = (properties: JsonObject, extra: JsonObject = {}): JsonObject => ({ type: 'object', properties, ...extra });
/** An object whose single property `x` has the given schema: most rules are exercised one level down. */
const withX = (x: JsonObject | boolean, extra: JsonObject = {}): JsonObject => obj({ x }, extra);
const str: JsonObject = { type: 'string' };

const tool = (overrides: Partial<ToolDefinition> = {}): ToolDefinition => ({
  name: 'payments.lookup',
  version: '1.0.0',
  title: 'Look up a payment',
  description: 'Returns status, amount and currency of a payment by reference.',
  inputSchema: obj({ reference: { type: 'string', pattern: '^PMT-\\d{3,}$' } }, { required: ['reference'], additionalProperties: false }),
  access: { requiredScopes: ['payments.read'], tenants: ['acme', 'globex'], classification: 'confidential' },
  sideEffect: 'none',
  handler: 'payments.lookup',
  timeoutMs: 30000,
  ...overrides,
});

const brief = (reasons: Reason[]): Array<[string, string, Level]> => reasons.map((r) => [r.path, r.rule, r.level]);
const levelOf = (reasons: Reason[]): Level =>
  reasons.some((r) => r.level === 'major') ? 'major' : reasons.some((r) => r.level === 'minor') ? 'minor' : 'patch';

// ------------------------------------------------------------------ every schema rule, both directions

interface RuleCase {
  rule: string;
  before: JsonObject;
  after: JsonObject;
  /** Path below the base path where the reason sits. */
  at: string;
  input: Level;
  output: Level;
  /** A word the detail must carry (the keyword, for rules shared by several keywords). */
  detail?: string;
}

const X = '.properties.x';
const RULE_CASES: RuleCase[] = [
  { rule: 'property-removed', before: obj({ a: str, b: str }), after: obj({ a: str }), at: '.properties.b', input: 'major', output: 'major' },
  { rule: 'property-added', before: obj({ a: str }), after: obj({ a: str, b: str }), at: '.properties.b', input: 'minor', output: 'minor' },
  { rule: 'required-added', before: obj({ a: str }), after: obj({ a: str }, { required: ['a'] }), at: '.properties.a', input: 'major', output: 'minor' },
  { rule: 'required-removed', before: obj({ a: str }, { required: ['a'] }), after: obj({ a: str }), at: '.properties.a', input: 'minor', output: 'major' },
  { rule: 'type-narrowed', before: withX({ type: 'number' }), after: withX({ type: 'integer' }), at: X, input: 'major', output: 'minor' },
  { rule: 'type-narrowed', before: withX({}), after: withX(str), at: X, input: 'major', output: 'minor', detail: 'any -> string' },
  { rule: 'type-widened', before: withX({ type: 'integer' }), after: withX({ type: 'number' }), at: X, input: 'minor', output: 'major' },
  { rule: 'type-widened', before: withX(str), after: withX({ type: ['string', 'null'] }), at: X, input: 'minor', output: 'major' },
  { rule: 'type-changed', before: withX(str), after: withX({ type: 'number' }), at: X, input: 'major', output: 'major' },
  { rule: 'enum-value-removed', before: withX({ enum: ['a', 'b'] }), after: withX({ enum: ['a'] }), at: X, input: 'major', output: 'minor', detail: '"b"' },
  { rule: 'enum-value-added', before: withX({ enum: ['a'] }), after: withX({ enum: ['a', 'b'] }), at: X, input: 'minor', output: 'major', detail: '"b"' },
  { rule: 'enum-added', before: withX(str), after: withX({ type: 'string', enum: ['a'] }), at: X, input: 'major', output: 'minor' },
  { rule: 'enum-removed', before: withX({ type: 'string', enum: ['a'] }), after: withX(str), at: X, input: 'minor', output: 'major' },
  { rule: 'const-added', before: withX(str), after: withX({ type: 'string', const: 'a' }), at: X, input: 'major', output: 'minor' },
  { rule: 'const-changed', before: withX({ const: 'a' }), after: withX({ const: 'b' }), at: X, input: 'major', output: 'major' },
  { rule: 'const-removed', before: withX({ const: 'a' }), after: withX({}), at: X, input: 'minor', output: 'major' },
  { rule: 'lower-bound-tightened', before: withX({ type: 'number' }), after: withX({ type: 'number', minimum: 0 }), at: X, input: 'major', output: 'minor', detail: 'minimum' },
  { rule: 'lower-bound-tightened', before: withX({ exclusiveMinimum: 1 }), after: withX({ exclusiveMinimum: 2 }), at: X, input: 'major', output: 'minor', detail: 'exclusiveMinimum' },
  { rule: 'lower-bound-tightened', before: withX({ minLength: 1 }), after: withX({ minLength: 3 }), at: X, input: 'major', output: 'minor', detail: 'minLength' },
  { rule: 'lower-bound-tightened', before: withX({}), after: withX({ minItems: 1 }), at: X, input: 'major', output: 'minor', detail: 'minItems' },
  { rule: 'lower-bound-tightened', before: withX({}), after: withX({ minProperties: 1 }), at: X, input: 'major', output: 'minor', detail: 'minProperties' },
  { rule: 'upper-bound-tightened', before: withX({ maximum: 10 }), after: withX({ maximum: 9 }), at: X, input: 'major', output: 'minor', detail: 'maximum' },
  { rule: 'upper-bound-tightened', before: withX({}), after: withX({ exclusiveMaximum: 0 }), at: X, input: 'major', output: 'minor', detail: 'exclusiveMaximum' },
  { rule: 'upper-bound-tightened', before: withX({ maxLength: 10 }), after: withX({ maxLength: 5 }), at: X, input: 'major', output: 'minor', detail: 'maxLength' },
  { rule: 'upper-bound-tightened', before: withX({}), after: withX({ maxItems: 3 }), at: X, input: 'major', output: 'minor', detail: 'maxItems' },
  { rule: 'upper-bound-tightened', before: withX({ maxProperties: 3 }), after: withX({ maxProperties: 2 }), at: X, input: 'major', output: 'minor', detail: 'maxProperties' },
  { rule: 'bound-loosened', before: withX({ minimum: 0 }), after: withX({}), at: X, input: 'minor', output: 'major', detail: 'minimum' },
  { rule: 'bound-loosened', before: withX({ maxLength: 5 }), after: withX({ maxLength: 6 }), at: X, input: 'minor', output: 'major', detail: 'maxLength' },
  { rule: 'pattern-added', before: withX(str), after: withX({ type: 'string', pattern: '^a' }), at: X, input: 'major', output: 'minor' },
  { rule: 'pattern-changed', before: withX({ pattern: '^a' }), after: withX({ pattern: '^b' }), at: X, input: 'major', output: 'major' },
  { rule: 'pattern-removed', before: withX({ pattern: '^a' }), after: withX({}), at: X, input: 'minor', output: 'major' },
  { rule: 'format-added', before: withX(str), after: withX({ type: 'string', format: 'email' }), at: X, input: 'major', output: 'minor' },
  { rule: 'format-changed', before: withX({ format: 'email' }), after: withX({ format: 'uri' }), at: X, input: 'major', output: 'major' },
  { rule: 'format-removed', before: withX({ format: 'email' }), after: withX({}), at: X, input: 'minor', output: 'major' },
  { rule: 'multiple-of-added', before: withX({}), after: withX({ multipleOf: 5 }), at: X, input: 'major', output: 'minor' },
  { rule: 'multiple-of-loosened', before: withX({ multipleOf: 10 }), after: withX({ multipleOf: 5 }), at: X, input: 'minor', output: 'major' },
  { rule: 'multiple-of-tightened', before: withX({ multipleOf: 5 }), after: withX({ multipleOf: 10 }), at: X, input: 'major', output: 'minor' },
  { rule: 'multiple-of-changed', before: withX({ multipleOf: 10 }), after: withX({ multipleOf: 3 }), at: X, input: 'major', output: 'major' },
  { rule: 'multiple-of-removed', before: withX({ multipleOf: 10 }), after: withX({}), at: X, input: 'minor', output: 'major' },
  { rule: 'unique-items-added', before: withX({ type: 'array' }), after: withX({ type: 'array', uniqueItems: true }), at: X, input: 'major', output: 'minor' },
  { rule: 'unique-items-removed', before: withX({ uniqueItems: true }), after: withX({ uniqueItems: false }), at: X, input: 'minor', output: 'major' },
  { rule: 'additional-properties-closed', before: obj({ a: str }), after: obj({ a: str }, { additionalProperties: false }), at: '.additionalProperties', input: 'major', output: 'minor' },
  { rule: 'additional-properties-narrowed', before: obj({ a: str }, { additionalProperties: true }), after: obj({ a: str }, { additionalProperties: str }), at: '.additionalProperties', input: 'major', output: 'minor' },
  { rule: 'additional-properties-opened', before: obj({ a: str }, { additionalProperties: false }), after: obj({ a: str }), at: '.additionalProperties', input: 'patch', output: 'major' },
  { rule: 'type-changed', before: obj({}, { additionalProperties: str }), after: obj({}, { additionalProperties: { type: 'number' } }), at: '.additionalProperties', input: 'major', output: 'major' },
  { rule: 'pattern-property-added', before: obj({}), after: obj({}, { patternProperties: { '^x_': str } }), at: '.patternProperties["^x_"]', input: 'major', output: 'minor' },
  { rule: 'pattern-property-added-to-closed', before: obj({}, { additionalProperties: false }), after: obj({}, { additionalProperties: false, patternProperties: { '^x_': str } }), at: '.patternProperties["^x_"]', input: 'minor', output: 'major' },
  { rule: 'pattern-property-removed', before: obj({}, { patternProperties: { '^x_': str } }), after: obj({}), at: '.patternProperties["^x_"]', input: 'minor', output: 'major' },
  { rule: 'pattern-property-removed-from-closed', before: obj({}, { additionalProperties: false, patternProperties: { '^x_': str } }), after: obj({}, { additionalProperties: false }), at: '.patternProperties["^x_"]', input: 'major', output: 'minor' },
  { rule: 'type-narrowed', before: obj({}, { patternProperties: { '^x_': { type: 'number' } } }), after: obj({}, { patternProperties: { '^x_': { type: 'integer' } } }), at: '.patternProperties["^x_"]', input: 'major', output: 'minor' },
  { rule: 'forbidden-property-removed', before: obj({ a: false }), after: obj({}), at: '.properties.a', input: 'minor', output: 'major' },
  { rule: 'dependent-required-added', before: obj({ a: str, b: str }), after: obj({ a: str, b: str }, { dependentRequired: { a: ['b'] } }), at: '.dependentRequired.a', input: 'major', output: 'minor' },
  { rule: 'dependent-required-removed', before: obj({ a: str, b: str }, { dependentRequired: { a: ['b'] } }), after: obj({ a: str, b: str }), at: '.dependentRequired.a', input: 'minor', output: 'major' },
  { rule: 'dependent-schema-added', before: obj({}), after: obj({}, { dependentSchemas: { a: { required: ['b'] } } }), at: '.dependentSchemas.a', input: 'major', output: 'minor' },
  { rule: 'dependent-schema-removed', before: obj({}, { dependentSchemas: { a: { required: ['b'] } } }), after: obj({}), at: '.dependentSchemas.a', input: 'minor', output: 'major' },
  { rule: 'one-of-branch-removed', before: withX({ oneOf: [str, { type: 'number' }] }), after: withX({ oneOf: [str] }), at: `${X}.oneOf[1]`, input: 'major', output: 'minor' },
  { rule: 'one-of-branch-added', before: withX({ oneOf: [str, { type: 'number' }] }), after: withX({ oneOf: [str, { type: 'number' }, { type: 'null' }] }), at: `${X}.oneOf[2]`, input: 'minor', output: 'major' },
  { rule: 'one-of-branch-changed', before: withX({ oneOf: [str, { type: 'number' }] }), after: withX({ oneOf: [str, { type: 'boolean' }] }), at: `${X}.oneOf[1]`, input: 'major', output: 'major' },
  { rule: 'any-of-branch-removed', before: withX({ anyOf: [str, { type: 'number' }] }), after: withX({ anyOf: [str] }), at: `${X}.anyOf[1]`, input: 'major', output: 'minor' },
  { rule: 'any-of-branch-added', before: withX({ anyOf: [str, { type: 'number' }] }), after: withX({ anyOf: [str, { type: 'number' }, { type: 'null' }] }), at: `${X}.anyOf[2]`, input: 'minor', output: 'major' },
  { rule: 'any-of-branch-changed', before: withX({ anyOf: [str, { type: 'number' }] }), after: withX({ anyOf: [str, { type: 'boolean' }] }), at: `${X}.anyOf[1]`, input: 'major', output: 'major' },
  { rule: 'all-of-branch-added', before: withX({ allOf: [str, { minLength: 1 }] }), after: withX({ allOf: [str, { minLength: 1 }, { pattern: '^a' }] }), at: `${X}.allOf[2]`, input: 'major', output: 'minor' },
  { rule: 'all-of-branch-removed', before: withX({ allOf: [str, { minLength: 1 }] }), after: withX({ allOf: [str] }), at: `${X}.allOf[1]`, input: 'minor', output: 'major' },
  { rule: 'all-of-branch-changed', before: withX({ allOf: [str, { pattern: '^a' }] }), after: withX({ allOf: [str, { format: 'email' }] }), at: `${X}.allOf[1]`, input: 'major', output: 'major' },
  { rule: 'combinator-loosened', before: withX({ oneOf: [str, { maxLength: 3 }] }), after: withX({ anyOf: [str, { maxLength: 3 }] }), at: X, input: 'minor', output: 'major' },
  { rule: 'combinator-tightened', before: withX({ anyOf: [str, { maxLength: 3 }] }), after: withX({ oneOf: [str, { maxLength: 3 }] }), at: X, input: 'major', output: 'minor' },
  { rule: 'not-changed', before: withX({ not: { type: 'number' } }), after: withX({ not: { type: 'integer' } }), at: X, input: 'major', output: 'major' },
  { rule: 'default-added', before: withX(str), after: withX({ type: 'string', default: 'a' }), at: X, input: 'minor', output: 'minor' },
  { rule: 'default-changed', before: withX({ default: 'a' }), after: withX({ default: 'b' }), at: X, input: 'minor', output: 'minor' },
  { rule: 'annotation-changed', before: withX({ title: 'a' }), after: withX({ title: 'b' }), at: X, input: 'patch', output: 'patch', detail: 'title' },
  { rule: 'annotation-changed', before: withX({ description: 'a' }), after: withX({}), at: X, input: 'patch', output: 'patch', detail: 'description' },
  { rule: 'annotation-changed', before: withX({}), after: withX({ examples: ['a'] }), at: X, input: 'patch', output: 'patch', detail: 'examples' },
  { rule: 'annotation-changed', before: withX({ $comment: 'a' }), after: withX({ $comment: 'b' }), at: X, input: 'patch', output: 'patch', detail: '$comment' },
  { rule: 'unmodelled-change', before: withX({}), after: withX({ contentEncoding: 'base64' }), at: X, input: 'major', output: 'major', detail: 'contentEncoding' },
  { rule: 'unmodelled-change', before: obj({}), after: obj({}, { unevaluatedProperties: false }), at: '', input: 'major', output: 'major', detail: 'unevaluatedProperties' },
];

describe('classifySchemaChange: one case per rule, in both directions', () => {
  for (const c of RULE_CASES) {
    for (const direction of ['input', 'output'] as const) {
      const expected = direction === 'input' ? c.input : c.output;
      it(`${c.rule}${c.detail ? ` (${c.detail})` : ''} at ${c.at || 'the root'} is ${expected.toUpperCase()} for ${direction}`, () => {
        const base = direction === 'input' ? 'inputSchema' : 'outputSchema';
        const reasons = classifySchemaChange(c.before, c.after, direction, base);
        expect(brief(reasons)).toEqual([[`${base}${c.at}`, c.rule, expected]]);
        if (c.detail) expect(reasons[0]?.detail).toContain(c.detail);
      });
    }
  }
});

describe('classifySchemaChange: recursion', () => {
  it('follows items, prefixItems and nested properties', () => {
    const before = obj({ legs: { type: 'array', prefixItems: [str], items: obj({ amount: { type: 'number' } }) } });
    const after = obj({ legs: { type: 'array', prefixItems: [{ type: 'number' }], items: obj({ amount: { type: 'integer' } }) } });
    expect(brief(classifySchemaChange(before, after, 'input', 'inputSchema'))).toEqual([
      ['inputSchema.properties.legs.items.properties.amount', 'type-narrowed', 'major'],
      ['inputSchema.properties.legs.prefixItems[0]', 'type-changed', 'major'],
    ]);
  });

  it('resolves local $ref targets in each schema\'s own root', () => {
    const before = { ...obj({ amount: { $ref: '#/$defs/money' } }), $defs: { money: { type: 'number', minimum: 0 } } };
    const after = { ...obj({ amount: { $ref: '#/$defs/money' } }), $defs: { money: { type: 'number', minimum: 1 } } };
    expect(brief(classifySchemaChange(before, after, 'input', 'inputSchema'))).toEqual([
      ['inputSchema.properties.amount', 'lower-bound-tightened', 'major'],
    ]);
    // Inlining the same target is no change at all: the ref is compared by what it means, not by its text.
    const inlined = obj({ amount: { type: 'number', minimum: 0 } });
    expect(classifySchemaChange(before, inlined, 'input', 'inputSchema')).toEqual([]);
  });

  it('terminates on recursive schemas and still sees a change below the cycle', () => {
    const node = (valueType: string): JsonObject => ({
      ...obj({ root: { $ref: '#/$defs/node' } }),
      $defs: { node: obj({ value: { type: valueType }, next: { $ref: '#/$defs/node' } }) },
    });
    expect(classifySchemaChange(node('string'), node('string'), 'input', 'inputSchema')).toEqual([]);
    expect(brief(classifySchemaChange(node('number'), node('integer'), 'input', 'inputSchema'))).toEqual([
      ['inputSchema.properties.root.properties.value', 'type-narrowed', 'major'],
    ]);
    const list: JsonObject = { ...obj({ l: { $ref: '#/$defs/l' } }), $defs: { l: { type: 'array', items: { $ref: '#/$defs/l' } } } };
    expect(levelOf(classifySchemaChange(obj({ l: {} }), list, 'input', 'inputSchema'))).toBe('major');
  });

  it('resolves $anchor references: a change behind an anchor is seen, a pointer-to-anchor rewrite is no change', () => {
    const anchored = (minimum: number): JsonObject => ({
      ...obj({ amount: { $ref: '#money' } }),
      $defs: { money: { $anchor: 'money', type: 'number', minimum } },
    });
    expect(brief(classifySchemaChange(anchored(0), anchored(1), 'input', 'inputSchema'))).toEqual([
      ['inputSchema.properties.amount', 'lower-bound-tightened', 'major'],
    ]);
    expect(classifySchemaChange(anchored(0), anchored(0), 'input', 'inputSchema')).toEqual([]);
    const pointer = { ...obj({ amount: { $ref: '#/$defs/money' } }), $defs: { money: { type: 'number', minimum: 0 } } };
    // Same meaning; only the anchor (a name) went away: a patch-level id-changed, nothing else.
    expect(brief(classifySchemaChange(anchored(0), pointer, 'input', 'inputSchema'))).toEqual([['inputSchema', 'id-changed', 'patch']]);
  });

  it('resolves references into embedded $id resources, each against its own base', () => {
    const resource = (type: string): JsonObject => ({
      ...obj({ amount: { $ref: 'https://example.com/money.json' } }),
      $defs: { money: { $id: 'https://example.com/money.json', type: 'object', properties: { units: { $ref: '#/$defs/u' } }, $defs: { u: { type } } } },
    });
    expect(classifySchemaChange(resource('number'), resource('number'), 'input', 'inputSchema')).toEqual([]);
    expect(brief(classifySchemaChange(resource('number'), resource('integer'), 'input', 'inputSchema'))).toEqual([
      ['inputSchema.properties.amount.properties.units', 'type-narrowed', 'major'],
    ]);
  });

  it('resolves $dynamicRef to the outermost $dynamicAnchor of its dynamic scope', () => {
    // The generic list's items are `$dynamicRef: "#item"`; the tool's own `item` anchor (outermost) decides.
    const list = (itemType: string): JsonObject => ({
      $id: 'https://example.com/tool.json',
      type: 'object',
      properties: { xs: { $ref: 'list.json' } },
      $defs: {
        item: { $dynamicAnchor: 'item', type: itemType },
        list: { $id: 'list.json', type: 'array', items: { $dynamicRef: '#item' }, $defs: { item: { $dynamicAnchor: 'item' } } },
      },
    });
    expect(classifySchemaChange(list('string'), list('string'), 'input', 'inputSchema')).toEqual([]);
    expect(brief(classifySchemaChange(list('number'), list('integer'), 'input', 'inputSchema'))).toEqual([
      ['inputSchema.properties.xs.items', 'type-narrowed', 'major'],
    ]);
  });

  it('fails closed (MAJOR unmodelled-change) where references cannot be resolved', () => {
    const remote = obj({ a: { $ref: 'https://example.com/elsewhere.json' } });
    const reasons = classifySchemaChange(remote, obj({ a: { $ref: 'https://example.com/other.json' } }), 'input', 'inputSchema');
    expect(brief(reasons)).toEqual([['inputSchema', 'unmodelled-change', 'major']]);
    expect(classifySchemaChange(remote, remote, 'input', 'inputSchema')).toEqual([]);
  });

  it('compares a property removed into patternProperties / additionalProperties with what now governs it', () => {
    const before = obj({ a: str, b: str }, { additionalProperties: false });
    const covered = obj({ a: str }, { additionalProperties: str });
    expect(brief(classifySchemaChange(before, covered, 'input', 'inputSchema'))).toEqual([
      ['inputSchema.additionalProperties', 'additional-properties-opened', 'patch'],
      ['inputSchema.properties.b', 'property-removed-covered', 'minor'],
    ]);
    const coveredNarrower = obj({ a: str }, { additionalProperties: { type: 'string', maxLength: 2 } });
    expect(levelOf(classifySchemaChange(before, coveredNarrower, 'input', 'inputSchema'))).toBe('major');
  });

  it('compares a property added where additionalProperties was a schema against that schema', () => {
    const before = obj({}, { additionalProperties: str });
    expect(levelOf(classifySchemaChange(before, obj({ b: str }, { additionalProperties: str }), 'input', 'inputSchema'))).toBe('minor');
    expect(brief(classifySchemaChange(before, obj({ b: { type: 'number' } }, { additionalProperties: str }), 'input', 'inputSchema'))).toEqual([
      ['inputSchema.properties.b', 'property-added', 'minor'],
      ['inputSchema.properties.b', 'type-changed', 'major'],
    ]);
  });

  it('treats a single-branch combinator as its branch, and a plain schema as one branch of a new oneOf', () => {
    expect(classifySchemaChange(withX({ oneOf: [str] }), withX(str), 'input', 'inputSchema')).toEqual([]);
    expect(brief(classifySchemaChange(withX({ type: 'string', maxLength: 3 }), withX({ oneOf: [{ type: 'number' }, str] }), 'input', 'inputSchema'))).toEqual([
      ['inputSchema.properties.x.oneOf[0]', 'one-of-branch-added', 'minor'],
      ['inputSchema.properties.x.oneOf[1]', 'bound-loosened', 'minor'],
    ]);
  });

  it('is independent of key order', () => {
    const a1 = obj({ a: { type: 'string', minLength: 1 }, b: { type: 'number' } }, { required: ['a', 'b'] });
    const a2: JsonObject = { required: ['b', 'a'], properties: { b: { type: 'number' }, a: { minLength: 1, type: 'string' } }, type: 'object' };
    expect(classifySchemaChange(a1, a2, 'input', 'inputSchema')).toEqual([]);
    const b = obj({ a: { type: 'string', minLength: 2 } }, { required: ['a'] });
    expect(classifySchemaChange(a1, b, 'input', 'inputSchema')).toEqual(classifySchemaChange(a2, b, 'input', 'inputSchema'));
  });
});

describe('SPEC §2 examples', () => {
  it('adding an optional field AND narrowing an enum is MAJOR, with both reasons listed', () => {
    const before = tool({ inputSchema: obj({ currency: { type: 'string', enum: ['AED', 'EUR', 'USD'] } }) });
    const after = tool({ inputSchema: obj({ currency: { type: 'string', enum: ['AED', 'EUR'] }, memo: str }) });
    const { level, reasons } = classifyDefinition(before, after);
    expect(level).toBe('major');
    expect(brief(reasons)).toEqual([
      ['inputSchema.properties.currency', 'enum-value-removed', 'major'],
      ['inputSchema.properties.memo', 'property-added', 'minor'],
    ]);
  });

  it('adding `minimum: 0` is a tightening (absent lower bound = -infinity), adding `maximum: 0` too (+infinity)', () => {
    for (const keyword of ['minimum', 'maximum'] as const) {
      const reasons = classifySchemaChange(withX({ type: 'number' }), withX({ type: 'number', [keyword]: 0 }), 'input', 'inputSchema');
      expect(levelOf(reasons)).toBe('major');
    }
  });

  it('additionalProperties false -> open, alone, is PATCH', () => {
    const before = tool();
    const after = tool({ inputSchema: obj({ reference: { type: 'string', pattern: '^PMT-\\d{3,}$' } }, { required: ['reference'] }) });
    expect(classifyDefinition(before, after)).toEqual({
      level: 'patch',
      reasons: [expect.objectContaining({ path: 'inputSchema.additionalProperties', rule: 'additional-properties-opened', level: 'patch' })],
    });
  });

  it('an unknown keyword change (a typo that would weaken a contract) is MAJOR unmodelled-change', () => {
    const reasons = classifySchemaChange(withX({ type: 'number', minimum: 1 }), withX({ type: 'number', minimun: 1 }), 'input', 'inputSchema');
    expect(brief(reasons)).toEqual([
      ['inputSchema.properties.x', 'bound-loosened', 'minor'],
      ['inputSchema.properties.x', 'unmodelled-change', 'major'],
    ]);
    expect(reasons[1]?.detail).toContain('minimun');
  });

  it('a description-only change is PATCH', () => {
    const { level, reasons } = classifyDefinition(tool(), tool({ description: 'Returns the status of a payment.' }));
    expect(level).toBe('patch');
    expect(brief(reasons)).toEqual([['description', 'description-changed', 'patch']]);
  });

  it('no change at all is PATCH with no reasons', () => {
    expect(classifyDefinition(tool(), tool({ version: '1.0.1' }))).toEqual({ level: 'patch', reasons: [] });
  });

  it('sorts reasons by (path, rule) in code-unit order whatever order the change was made in', () => {
    const before = tool({ inputSchema: obj({ b: str, a: str, Z: str }), access: { requiredScopes: [], tenants: [], classification: 'public' } });
    const after = tool({
      title: 'New',
      timeoutMs: 1000,
      inputSchema: obj({ a: { type: 'string', maxLength: 3, pattern: '^x' }, B: str }, { required: ['a'] }),
      access: { requiredScopes: ['s'], tenants: ['acme'], classification: 'internal' },
    });
    const { level, reasons } = classifyDefinition(before, after);
    expect(level).toBe('major');
    expect(reasons.map((r) => `${r.path} ${r.rule}`)).toEqual([
      'access.classification classification-raised',
      'access.requiredScopes scopes-added',
      'access.tenants tenants-narrowed',
      'inputSchema.properties.B property-added', // 'B' < 'Z' < 'a' < 'b' in code units: no locale collation
      'inputSchema.properties.Z property-removed',
      'inputSchema.properties.a pattern-added',
      'inputSchema.properties.a required-added',
      'inputSchema.properties.a upper-bound-tightened',
      'inputSchema.properties.b property-removed',
      'timeoutMs timeout-changed',
      'title title-changed',
    ]);
  });
});

describe('classifyDefinition: the rest of the definition', () => {
  const access = (a: Partial<ToolDefinition['access']>): Partial<ToolDefinition> => ({ access: { ...tool().access, ...a } });
  const cases: Array<[string, Partial<ToolDefinition>, Partial<ToolDefinition>, Array<[string, string, Level]>]> = [
    ['outputSchema added', {}, { outputSchema: obj({ status: str }) }, [['outputSchema', 'output-schema-added', 'minor']]],
    ['outputSchema removed', { outputSchema: obj({ status: str }) }, {}, [['outputSchema', 'output-schema-removed', 'major']]],
    ['output property removed', { outputSchema: obj({ status: str, amount: str }) }, { outputSchema: obj({ status: str }) }, [['outputSchema.properties.amount', 'property-removed', 'major']]],
    ['output type widened', { outputSchema: obj({ n: { type: 'integer' } }) }, { outputSchema: obj({ n: { type: 'number' } }) }, [['outputSchema.properties.n', 'type-widened', 'major']]],
    ['output enum value added', { outputSchema: obj({ s: { enum: ['a'] } }) }, { outputSchema: obj({ s: { enum: ['a', 'b'] } }) }, [['outputSchema.properties.s', 'enum-value-added', 'major']]],
    ['output bound loosened', { outputSchema: obj({ s: { maxLength: 3 } }) }, { outputSchema: obj({ s: { maxLength: 4 } }) }, [['outputSchema.properties.s', 'bound-loosened', 'major']]],
    ['output property added', { outputSchema: obj({}) }, { outputSchema: obj({ s: str }) }, [['outputSchema.properties.s', 'property-added', 'minor']]],
    ['output type narrowed', { outputSchema: obj({ n: { type: 'number' } }) }, { outputSchema: obj({ n: { type: 'integer' } }) }, [['outputSchema.properties.n', 'type-narrowed', 'minor']]],
    ['sideEffect changed', {}, { sideEffect: 'idempotent' }, [['sideEffect', 'side-effect-changed', 'major']]],
    ['tenants [] -> [a] narrows (empty = every tenant)', access({ tenants: [] }), access({ tenants: ['acme'] }), [['access.tenants', 'tenants-narrowed', 'major']]],
    ['tenants [a] -> [] widens', access({ tenants: ['acme'] }), access({ tenants: [] }), [['access.tenants', 'tenants-widened', 'minor']]],
    ['tenant removed', access({ tenants: ['acme', 'globex'] }), access({ tenants: ['acme'] }), [['access.tenants', 'tenants-narrowed', 'major']]],
    ['tenant added', access({ tenants: ['acme'] }), access({ tenants: ['acme', 'globex'] }), [['access.tenants', 'tenants-widened', 'minor']]],
    ['tenant swapped', access({ tenants: ['acme'] }), access({ tenants: ['globex'] }), [['access.tenants', 'tenants-narrowed', 'major'], ['access.tenants', 'tenants-widened', 'minor']]],
    ['scope added', access({ requiredScopes: ['a'] }), access({ requiredScopes: ['a', 'b'] }), [['access.requiredScopes', 'scopes-added', 'major']]],
    ['scope removed', access({ requiredScopes: ['a', 'b'] }), access({ requiredScopes: ['a'] }), [['access.requiredScopes', 'scopes-removed', 'minor']]],
    ['classification raised', access({ classification: 'internal' }), access({ classification: 'restricted' }), [['access.classification', 'classification-raised', 'major']]],
    ['classification lowered', access({ classification: 'confidential' }), access({ classification: 'public' }), [['access.classification', 'classification-lowered', 'minor']]],
    ['title changed', {}, { title: 'Find a payment' }, [['title', 'title-changed', 'patch']]],
    ['title removed', {}, { title: undefined }, [['title', 'title-changed', 'patch']]],
    ['annotations changed', {}, { annotations: { openWorldHint: false } }, [['annotations', 'annotations-changed', 'patch']]],
    ['handler changed', {}, { handler: 'payments.lookup.v2' }, [['handler', 'handler-changed', 'patch']]],
    ['timeoutMs changed', {}, { timeoutMs: 5000 }, [['timeoutMs', 'timeout-changed', 'patch']]],
  ];
  for (const [name, b, a, expected] of cases) {
    it(name, () => {
      const result = classifyDefinition(tool(b), tool(a));
      expect(brief(result.reasons)).toEqual(expected);
      expect(result.level).toBe(levelOf(result.reasons));
    });
  }

  it('refuses an unknown classification instead of ranking it', () => {
    const bad = { ...tool(), access: { ...tool().access, classification: 'secret' } } as unknown as ToolDefinition;
    expect(() => classifyDefinition(tool(), bad)).toThrow(/unknown classification/);
  });
});

describe('classifySchemaChange: cost', () => {
  it('fails closed instead of hanging on deeply nested combinators', () => {
    const nest = (depth: number, leaf: string): JsonObject =>
      depth === 0 ? { type: leaf } : { oneOf: [nest(depth - 1, leaf), nest(depth - 1, 'string'), nest(depth - 1, 'number'), nest(depth - 1, 'boolean')] };
    const reasons = classifySchemaChange(withX(nest(7, 'null')), withX(nest(7, 'integer')), 'input', 'inputSchema');
    expect(reasons).toContainEqual(expect.objectContaining({ path: 'inputSchema', rule: 'unmodelled-change', level: 'major' }));
  });
});

describe('classifySchemaChange: laws', () => {
  const { schema } = fc.letrec((tie) => ({
    schema: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      fc.record(
        {
          type: fc.constantFrom('string', 'number', 'integer', 'boolean', 'object', 'array', 'null'),
          minimum: fc.integer({ min: -5, max: 5 }),
          maxLength: fc.nat(10),
          enum: fc.uniqueArray(fc.constantFrom('a', 'b', 'c', 1, 2, null), { minLength: 1 }),
          pattern: fc.constantFrom('^a', '^b$'),
          description: fc.string(),
        },
        { requiredKeys: [] },
      ),
      fc.record(
        {
          type: fc.constant('object'),
          properties: fc.dictionary(fc.constantFrom('a', 'b', 'c', 'd e'), tie('schema')),
          required: fc.uniqueArray(fc.constantFrom('a', 'b', 'c')),
          additionalProperties: fc.oneof(fc.boolean(), tie('schema')),
        },
        { requiredKeys: ['type'] },
      ),
      fc.record({ type: fc.constant('array'), items: tie('schema'), uniqueItems: fc.boolean() }, { requiredKeys: ['type'] }),
      fc.record({ oneOf: fc.array(tie('schema'), { minLength: 1, maxLength: 3 }) }),
      fc.record({ allOf: fc.array(tie('schema'), { minLength: 1, maxLength: 3 }) }),
    ),
  }));
  const objectSchema = schema.map((s) => withX(s as JsonObject));

  it('a schema compared with itself has no reasons, in either direction', () => {
    fc.assert(
      fc.property(objectSchema, (s) => {
        expect(classifySchemaChange(s, structuredClone(s), 'input', 'inputSchema')).toEqual([]);
        expect(classifySchemaChange(s, structuredClone(s), 'output', 'outputSchema')).toEqual([]);
      }),
    );
  });

  it('reasons come out sorted by (path, rule) and the same for the same pair', () => {
    fc.assert(
      fc.property(objectSchema, objectSchema, (a, b) => {
        const reasons = classifySchemaChange(a, b, 'input', 'inputSchema');
        const keys = reasons.map((r) => [r.path, r.rule] as const);
        const sorted = [...keys].sort((p, q) => (p[0] < q[0] ? -1 : p[0] > q[0] ? 1 : p[1] < q[1] ? -1 : p[1] > q[1] ? 1 : 0));
        expect(keys).toEqual(sorted);
        expect(classifySchemaChange(structuredClone(a), structuredClone(b), 'input', 'inputSchema')).toEqual(reasons);
      }),
    );
  });
});
