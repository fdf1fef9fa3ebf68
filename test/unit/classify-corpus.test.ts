/**
 * Estate's classifier against a peer's corpus: Confluent Schema Registry's JSON Schema diff cases (test data only,
 * see test/fixtures/confluent-json-diff/README.md). For an inputSchema the tool is the reader, so Confluent's
 * "incompatible" must be Estate's MAJOR and "compatible" MINOR or PATCH — except for the argued list below.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import JSON5 from 'json5';
import { afterAll, describe, expect, it } from 'vitest';
import { classifySchemaChange } from '#domain/classify';
import type { JsonObject, JsonValue, Reason } from '#domain/types';

interface CorpusCase {
  description: string;
  original_schema: JsonValue;
  update_schema: JsonValue;
  changes: string[];
  compatible: boolean;
}

const FILES = [
  { file: 'diff-schema-examples-2020-12.json', required: true },
  { file: 'diff-combined-schema-examples-2020-12.json', required: true },
  { file: 'diff-schema-examples.json', required: false },
  { file: 'diff-combined-schema-examples.json', required: false },
] as const;

const OPEN_ADD = 'SPEC §2: an optional property added to an OPEN object is MINOR (the design notes\' rule: no caller that was accepted is refused). Confluent STRICT calls it incompatible; its LENIENT policy agrees with Estate.';
const OPEN_REMOVE = 'SPEC §2: a property removed even from an open object is MAJOR, because the caller\'s argument would now be silently ignored by the tool. Confluent only asks whether the data still validates.';
const NOT_CHANGED = 'SPEC §2: any change to `not` is MAJOR. Reasoning through complements is where classifiers go wrong, `not` is rare in tool contracts, and Estate fails closed; Confluent reasons the complement (not number -> not integer accepts more).';
const REQUIRED_UNDECLARED = 'Estate is right to differ: `required: ["bar"]` makes every call without `bar` invalid (an open object accepts `bar`, but nothing made callers send it). Confluent ignores a required name that is not a declared property.';

/** Deliberate differences, each argued. Keyed by file and case index; the description is checked too so a re-ordered corpus cannot silently re-target an entry. */
const ARGUED: ReadonlyArray<{ file: string; index: number; description: string; why: string }> = [
  { file: 'diff-schema-examples-2020-12.json', index: 23, description: 'Detect compatible change to not schema', why: NOT_CHANGED },
  { file: 'diff-schema-examples-2020-12.json', index: 46, description: 'Detect property added to open content model', why: OPEN_ADD },
  { file: 'diff-schema-examples-2020-12.json', index: 57, description: 'Detect required array to be changed', why: REQUIRED_UNDECLARED },
  { file: 'diff-schema-examples-2020-12.json', index: 93, description: 'Detect removing empty schema from open content model', why: OPEN_REMOVE },
  { file: 'diff-schema-examples.json', index: 23, description: 'Detect compatible change to not schema', why: NOT_CHANGED },
  { file: 'diff-schema-examples.json', index: 44, description: 'Detect property added to open content model', why: OPEN_ADD },
  { file: 'diff-schema-examples.json', index: 55, description: 'Detect required array to be changed', why: REQUIRED_UNDECLARED },
  { file: 'diff-schema-examples.json', index: 83, description: 'Detect removing empty schema from open content model', why: OPEN_REMOVE },
];

// ------------------------------------------------------------------ corpus plumbing

const isObj = (v: JsonValue | undefined): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Keywords only the draft-07 era has (Estate publishes 2020-12 only): the first one found, if any. */
const draft07Keyword = (v: JsonValue): string | undefined => {
  if (Array.isArray(v)) {
    for (const x of v) {
      const k = draft07Keyword(x);
      if (k !== undefined) return k;
    }
    return undefined;
  }
  if (!isObj(v)) return undefined;
  for (const [k, x] of Object.entries(v)) {
    if (k === 'dependencies' || k === 'additionalItems' || (k === 'items' && Array.isArray(x))) return k === 'items' ? 'array-form items' : k;
    const inner = draft07Keyword(x);
    if (inner !== undefined) return inner;
  }
  return undefined;
};

const isObjectSchema = (s: JsonValue): boolean => isObj(s) && (s.type === 'object' || (s.type === undefined && 'properties' in s));

const WRAPPED = '#/properties/value';
/** Local refs into the wrapped schema now live under /properties/value; refs into $defs/definitions moved with them to the root. */
const rewriteRefs = (v: JsonValue): JsonValue => {
  if (Array.isArray(v)) return v.map(rewriteRefs);
  if (!isObj(v)) return v;
  const out: JsonObject = {};
  for (const [k, x] of Object.entries(v)) {
    const local = k === '$ref' && typeof x === 'string' && x.startsWith('#') && !/^#\/(\$defs|definitions)(\/|$)/.test(x);
    out[k] = local ? (x === '#' ? WRAPPED : WRAPPED + x.slice(1)) : rewriteRefs(x);
  }
  return out;
};

/** A non-object root goes through the tool path as the single required property `value` of an object schema. */
const wrap = (schema: JsonValue): JsonObject => {
  const root: JsonObject = { type: 'object', required: ['value'] };
  if (!isObj(schema)) return { ...root, properties: { value: schema } };
  const inner: JsonObject = {};
  for (const [k, x] of Object.entries(schema)) {
    if (k === '$defs' || k === 'definitions' || k === '$schema') root[k] = rewriteRefs(x);
    else inner[k] = x;
  }
  return { ...root, properties: { value: rewriteRefs(inner) } };
};

interface Verdict {
  index: number;
  c: CorpusCase;
  skipped?: string;
  reasons: Reason[];
  estateMajor: boolean;
  agrees: boolean;
}

const judge = (c: CorpusCase, index: number): Verdict => {
  const skipped = draft07Keyword(c.original_schema) ?? draft07Keyword(c.update_schema);
  if (skipped !== undefined) return { index, c, skipped, reasons: [], estateMajor: false, agrees: false };
  const both = isObjectSchema(c.original_schema) && isObjectSchema(c.update_schema);
  const before = both ? (c.original_schema as JsonObject) : wrap(c.original_schema);
  const after = both ? (c.update_schema as JsonObject) : wrap(c.update_schema);
  const reasons = classifySchemaChange(before, after, 'input', 'inputSchema');
  const estateMajor = reasons.some((r) => r.level === 'major');
  return { index, c, reasons, estateMajor, agrees: estateMajor === !c.compatible };
};

const load = (file: string): CorpusCase[] => {
  // One corpus file has trailing commas: JSON5 reads the data as it is, unedited.
  const text = readFileSync(fileURLToPath(new URL(`../fixtures/confluent-json-diff/${file}`, import.meta.url)), 'utf8');
  return JSON5.parse<CorpusCase[]>(text);
};

const show = (v: Verdict): string =>
  `[${v.index}] ${v.c.description}: Confluent ${v.c.compatible ? 'compatible' : 'incompatible'}, Estate ${v.estateMajor ? 'MAJOR' : 'not MAJOR'} ` +
  `(${v.reasons.map((r) => `${r.level} ${r.path} ${r.rule}`).join('; ') || 'no reasons'})`;

const summary: string[] = [];
const totals = { agreed: 0, judged: 0, argued: 0, skipped: 0 };
const required2020 = { agreed: 0, judged: 0, argued: 0 };

for (const { file, required } of FILES) {
  describe(`confluent corpus: ${file}`, () => {
    const cases = load(file);
    const verdicts = cases.map(judge);
    const argued = ARGUED.filter((a) => a.file === file);

    it('has the case count its README states', () => {
      const expected: Record<string, number> = {
        'diff-schema-examples-2020-12.json': 113,
        'diff-combined-schema-examples-2020-12.json': 18,
        'diff-schema-examples.json': 104,
        'diff-combined-schema-examples.json': 28,
      };
      expect(cases.length).toBe(expected[file]);
    });

    it('every argued difference names a real case, and still differs', () => {
      for (const a of argued) {
        const v = verdicts[a.index];
        expect(v?.c.description, `${file}[${a.index}]`).toBe(a.description);
        expect(v?.skipped, `${file}[${a.index}] is skipped, not argued`).toBeUndefined();
        expect(v?.agrees, `${file}[${a.index}] now agrees: remove it from ARGUED`).toBe(false);
        expect(a.why.length).toBeGreaterThan(40);
      }
    });

    if (required) {
      it('uses no draft-07-only keyword (2020-12 files must be judged in full)', () => {
        expect(verdicts.filter((v) => v.skipped !== undefined).map((v) => v.c.description)).toEqual([]);
      });
    }

    it('agrees with Confluent on every case but the argued ones', () => {
      const arguedIdx = new Set(argued.map((a) => a.index));
      const defects = verdicts.filter((v) => v.skipped === undefined && !v.agrees && !arguedIdx.has(v.index)).map(show);
      expect(defects).toEqual([]);
    });

    const judged = verdicts.filter((v) => v.skipped === undefined);
    const agreed = judged.filter((v) => v.agrees).length;
    const skipped = verdicts.filter((v) => v.skipped !== undefined);
    totals.agreed += agreed;
    totals.judged += judged.length;
    totals.argued += argued.length;
    totals.skipped += skipped.length;
    if (file.includes('2020-12')) {
      required2020.agreed += agreed;
      required2020.judged += judged.length;
      required2020.argued += argued.length;
    }
    summary.push(`confluent corpus: ${file} agreement ${agreed}/${judged.length} (${argued.length} argued differences, ${skipped.length} skipped)`);
    for (const v of skipped) summary.push(`  skipped [${v.index}] ${v.c.description}: uses ${v.skipped}, a draft-07-only keyword (Estate schemas are 2020-12)`);
    for (const v of skipped) it.skip(`[${v.index}] ${v.c.description} — skipped: uses ${v.skipped}, draft-07 only`, () => {});
  });
}

afterAll(() => {
  for (const line of summary) console.log(line);
  console.log(`confluent corpus: 2020-12 agreement ${required2020.agreed}/${required2020.judged} (${required2020.argued} argued differences)`);
  console.log(`confluent corpus: overall agreement ${totals.agreed}/${totals.judged} (${totals.argued} argued differences, ${totals.skipped} draft-07 cases skipped)`);
});
