/**
 * Validation cost on every tools/call: Estate's CompiledSchema.validate against raw Ajv on the same schema.
 * - "same options" peer: an Ajv compiled exactly as Estate compiles (allErrors, verbose, Estate's linear-time pattern
 *   engine, formats), its errors ignored: the difference is Estate's own work (the wrapper when valid, the error
 *   mapping when invalid).
 * - "stock" peer: Ajv with its defaults plus allErrors and formats (native RegExp, not verbose): what the safety
 *   (linear-time patterns, own-property checks) costs on top. The payments patterns are all in the class V8 may run
 *   (see isBacktrackSafe); the last case swaps in patterns that need RE2 (WebAssembly) to show that cost too.
 * The last four rows use a schema with `$anchor` references and `unevaluatedProperties` (issue 16), which Estate
 * compiles through its normalised form (src/domain/schema-resources.ts) and raw Ajv compiles as written.
 * Run alone: `node --import tsx bench/validation.ts`.
 */
import { pathToFileURL } from 'node:url';
import { Ajv2020 } from 'ajv/dist/2020.js';
import type { ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsPlugin from 'ajv-formats';
import { createSchemaCompiler, linearRegExp } from '#domain/schema-compiler';
import type { JsonObject } from '#domain/types';
import { createCompiledSchemaCache } from '#mcp/compiled-schemas';
import { CatalogueProjection } from '#projections/catalogue';
import { aDefinition } from '../test/fixtures/builders.ts';
import { median, type BenchRow } from './lib.ts';

const paymentSchema: JsonObject = {
  type: 'object',
  properties: {
    reference: { type: 'string', pattern: '^PMT-\\d{3,}$' },
    amount: { type: 'integer', minimum: 1, maximum: 1_000_000_000 },
    currency: { enum: ['AED', 'EUR', 'GBP', 'USD', 'SAR'] },
    debtor: {
      type: 'object',
      properties: {
        iban: { type: 'string', pattern: '^[A-Z]{2}[0-9]{2}[A-Z0-9]{11,30}$' },
        name: { type: 'string', minLength: 1, maxLength: 140 },
        country: { type: 'string', pattern: '^[A-Z]{2}$' },
      },
      required: ['iban', 'name'],
      additionalProperties: false,
    },
    creditor_iban: { type: 'string', pattern: '^[A-Z]{2}[0-9]{2}[A-Z0-9]{11,30}$' },
    value_date: { type: 'string', format: 'date' },
    requested_at: { type: 'string', format: 'date-time' },
    purpose: { type: 'string', maxLength: 35 },
    urgent: { type: 'boolean', default: false },
    tags: { type: 'array', items: { type: 'string', maxLength: 20 }, maxItems: 10, uniqueItems: true },
    callback_url: { type: 'string', format: 'uri' },
  },
  required: ['reference', 'amount', 'currency', 'debtor', 'creditor_iban', 'value_date'],
  additionalProperties: false,
};

const validArgs = {
  reference: 'PMT-771',
  amount: 250_000,
  currency: 'AED',
  debtor: { iban: 'AE070331234567890123456', name: 'Acme Trading LLC', country: 'AE' },
  creditor_iban: 'GB33BUKB20201555555555',
  value_date: '2026-11-30',
  requested_at: '2026-11-30T01:02:03Z',
  purpose: 'Invoice 2026-1187',
  urgent: false,
  tags: ['supplier', 'q4'],
  callback_url: 'https://erp.example.com/hooks/payments',
};

/** Five errors of different kinds, one nested, one additional property. */
const invalidArgs = {
  reference: 'PMT771',
  amount: '250000',
  currency: 'aed',
  debtor: { iban: 'AE07', name: 'Acme Trading LLC', note: 'x' },
  creditor_iban: 'GB33BUKB20201555555555',
  value_date: '30/11/2026',
  urgent: 'yes',
};

const ajvOptions = { allErrors: true, strict: false, strictSchema: true, allowUnionTypes: true, logger: false } as const;

/** The same schema with patterns outside the backtrack-safe class (a group, an alternation): these run on RE2. */
const re2Schema = structuredClone(paymentSchema);
const re2Properties = re2Schema['properties'] as JsonObject;
re2Properties['reference'] = { type: 'string', pattern: '^(PMT|PAY)-\\d{3,}$' };
re2Properties['creditor_iban'] = { type: 'string', pattern: '^[A-Z]{2}\\d{2}(?:[A-Z0-9]{4}){2,7}[A-Z0-9]{1,4}$' };

/** The payments contract written with `$anchor` references, a conditional, and `unevaluatedProperties: false`. */
const anchorSchema: JsonObject = {
  type: 'object',
  properties: {
    reference: { $ref: '#reference' },
    amount: { $ref: '#money' },
    currency: { enum: ['AED', 'EUR', 'GBP', 'USD', 'SAR'] },
    debtor: { $ref: '#party' },
    creditor: { $ref: '#party' },
    value_date: { type: 'string', format: 'date' },
    urgent: { type: 'boolean' },
    tags: { type: 'array', items: { type: 'string', maxLength: 20 }, maxItems: 10 },
  },
  required: ['reference', 'amount', 'currency', 'debtor', 'creditor', 'value_date'],
  allOf: [
    {
      if: { properties: { urgent: { const: true } }, required: ['urgent'] },
      then: { properties: { reason: { type: 'string', maxLength: 140 } }, required: ['reason'] },
    },
  ],
  unevaluatedProperties: false,
  $defs: {
    reference: { $anchor: 'reference', type: 'string', pattern: '^PMT-\\d{3,}$' },
    money: { $anchor: 'money', type: 'integer', minimum: 1, maximum: 1_000_000_000 },
    party: {
      $anchor: 'party',
      type: 'object',
      properties: {
        iban: { type: 'string', pattern: '^[A-Z]{2}[0-9]{2}[A-Z0-9]{11,30}$' },
        name: { type: 'string', minLength: 1, maxLength: 140 },
      },
      required: ['iban', 'name'],
      unevaluatedProperties: false,
    },
  },
};

const anchorValidArgs = {
  reference: 'PMT-771',
  amount: 250_000,
  currency: 'AED',
  debtor: { iban: 'AE070331234567890123456', name: 'Acme Trading LLC' },
  creditor: { iban: 'GB33BUKB20201555555555', name: 'Globex Ltd' },
  value_date: '2026-11-30',
  urgent: true,
  reason: 'payroll',
  tags: ['supplier', 'q4'],
};

/** Five errors: a bad pattern, a type, an unevaluated property at the root and in a party, a missing `reason`. */
const anchorInvalidArgs = {
  reference: 'PMT771',
  amount: '250000',
  currency: 'AED',
  debtor: { iban: 'AE070331234567890123456', name: 'Acme Trading LLC', note: 'x' },
  creditor: { iban: 'GB33BUKB20201555555555', name: 'Globex Ltd' },
  value_date: '2026-11-30',
  urgent: true,
  memo: 'x',
};

const sameOptionsAjv = (schema: JsonObject = paymentSchema, extra: { strictSchema?: boolean } = {}): ValidateFunction => {
  const regExp = Object.assign((pattern: string) => linearRegExp(pattern), { code: 'RE2' });
  const ajv = new Ajv2020({ ...ajvOptions, ...extra, verbose: true, ownProperties: true, code: { regExp } });
  addFormatsPlugin.default(ajv);
  return ajv.compile(structuredClone(schema));
};

const stockAjv = (schema: JsonObject = paymentSchema, extra: { strictSchema?: boolean } = {}): ValidateFunction => {
  const ajv = new Ajv2020({ ...ajvOptions, ...extra });
  addFormatsPlugin.default(ajv);
  return ajv.compile(structuredClone(schema));
};

const BATCH = 100;
const ITERATIONS = 2_000;
const WARMUP = 200;

/**
 * Median µs per call of each function, timing batches so the clock's own cost stays out of the figure. The functions'
 * batches are taken in turns (Estate's, then each peer's, then Estate's again), so a slow spell of the machine falls
 * on every side of a ratio alike: measured one after the other, a spell that hit only Estate's stretch once read
 * 5.46x where the runs around it read 3.5x.
 */
const perCallInTurns = (...fns: (() => unknown)[]): number[] => {
  const batches = fns.map((fn) => (): void => {
    for (let i = 0; i < BATCH; i++) fn();
  });
  for (let w = 0; w < WARMUP; w++) for (const batch of batches) batch();
  const times = fns.map((): number[] => []);
  for (let i = 0; i < ITERATIONS; i++) {
    batches.forEach((batch, k) => {
      const t0 = process.hrtime.bigint();
      batch();
      times[k]?.push(Number(process.hrtime.bigint() - t0) / 1000);
    });
  }
  return times.map((t) => Math.round((median(t) / BATCH) * 1000) / 1000);
};

export async function run(): Promise<BenchRow[]> {
  const estate = createSchemaCompiler().compile(paymentSchema, 'inputSchema');
  const same = sameOptionsAjv();
  const stock = stockAjv();
  if (estate.validate(validArgs).length !== 0 || !same(validArgs) || !stock(validArgs)) throw new Error('valid args rejected');
  const errorCount = estate.validate(invalidArgs).length;
  if (errorCount === 0 || same(invalidArgs) || stock(invalidArgs)) throw new Error('invalid args accepted');

  const rows: BenchRow[] = [];
  const notes = `payments schema, 11 properties (nested object, array, enum, 4 patterns, 3 formats); median of ${ITERATIONS} batches of ${BATCH}`;
  for (const [label, args, extra] of [
    ['valid args', validArgs, ''],
    ['invalid args', invalidArgs, `; ${errorCount} errors mapped, sorted`],
  ] as const) {
    const [estateUs = NaN, sameUs, stockUs] = perCallInTurns(
      () => estate.validate(args),
      () => same(args),
      () => stock(args),
    );
    rows.push({
      bench: 'validation',
      case: `${label}: Estate validate vs Ajv, same options`,
      unit: 'µs/op',
      estate: estateUs,
      peerName: "raw Ajv (allErrors, verbose, Estate's pattern engine, formats), errors ignored",
      peer: sameUs,
      notes: notes + extra,
    });
    rows.push({
      bench: 'validation',
      case: `${label}: Estate validate vs stock Ajv`,
      unit: 'µs/op',
      estate: estateUs,
      peerName: 'stock Ajv (allErrors, native RegExp, formats), errors ignored',
      peer: stockUs,
      notes: notes + extra,
    });
  }
  const estateRe2 = createSchemaCompiler().compile(re2Schema, 'inputSchema');
  if (estateRe2.validate(validArgs).length !== 0) throw new Error('valid args rejected (RE2 schema)');
  const sameRe2 = sameOptionsAjv(re2Schema);
  const stockRe2 = stockAjv(re2Schema);
  const [re2Us = NaN, sameRe2Us, stockRe2Us] = perCallInTurns(
    () => estateRe2.validate(validArgs),
    () => sameRe2(validArgs),
    () => stockRe2(validArgs),
  );
  const re2Note = `${notes}; reference and creditor_iban patterns run on RE2 (native re2)`;
  rows.push({
    bench: 'validation',
    case: 'valid args, 2 RE2 patterns: Estate validate vs Ajv, same options',
    unit: 'µs/op',
    estate: re2Us,
    peerName: 'raw Ajv (allErrors, verbose, RE2, formats), errors ignored',
    peer: sameRe2Us,
    notes: re2Note,
  });
  rows.push({
    bench: 'validation',
    case: 'valid args, 2 RE2 patterns: Estate validate vs stock Ajv',
    unit: 'µs/op',
    estate: re2Us,
    peerName: 'stock Ajv (allErrors, native RegExp, formats), errors ignored',
    peer: stockRe2Us,
    notes: re2Note,
  });
  const estateAnchor = createSchemaCompiler().compile(anchorSchema, 'inputSchema');
  const sameAnchor = sameOptionsAjv(anchorSchema, { strictSchema: false });
  const stockAnchor = stockAjv(anchorSchema, { strictSchema: false });
  if (estateAnchor.validate(anchorValidArgs).length !== 0 || !sameAnchor(anchorValidArgs) || !stockAnchor(anchorValidArgs)) {
    throw new Error('valid args rejected ($anchor schema)');
  }
  const anchorErrors = estateAnchor.validate(anchorInvalidArgs).length;
  if (anchorErrors === 0 || sameAnchor(anchorInvalidArgs) || stockAnchor(anchorInvalidArgs)) throw new Error('invalid args accepted ($anchor schema)');
  const anchorNote = `payments schema with 3 $anchor refs, if/then in allOf, unevaluatedProperties: false at two levels; Estate compiles its normalised form, Ajv the schema as written; median of ${ITERATIONS} batches of ${BATCH}`;
  for (const [label, args, extra] of [
    ['valid args', anchorValidArgs, ''],
    ['invalid args', anchorInvalidArgs, `; ${anchorErrors} errors mapped, sorted`],
  ] as const) {
    const [estateUs = NaN, sameUs, stockUs] = perCallInTurns(
      () => estateAnchor.validate(args),
      () => sameAnchor(args),
      () => stockAnchor(args),
    );
    rows.push({
      bench: 'validation',
      case: `$anchor + unevaluatedProperties, ${label}: Estate validate vs Ajv, same options`,
      unit: 'µs/op',
      estate: estateUs,
      peerName: "raw Ajv (allErrors, verbose, Estate's pattern engine, formats), errors ignored",
      peer: sameUs,
      notes: anchorNote + extra,
    });
    rows.push({
      bench: 'validation',
      case: `$anchor + unevaluatedProperties, ${label}: Estate validate vs stock Ajv`,
      unit: 'µs/op',
      estate: estateUs,
      peerName: 'stock Ajv (allErrors, native RegExp, formats), errors ignored',
      peer: stockUs,
      notes: anchorNote + extra,
    });
  }
  rows.push(await warmupStall());
  return rows;
}

/**
 * The longest the event loop is held while a heavy-but-accepted schema (120 costly RE2 patterns) is compiled: in
 * steps by the warm-up (src/mcp/compiled-schemas.ts) against in one go, as a first tools/call compiled it before.
 * Fresh patterns for each side (RE2 compiles are cached by source).
 */
const warmupStall = async (): Promise<BenchRow> => {
  const heavy = (tag: string): JsonObject => {
    const properties: JsonObject = {};
    for (let i = 0; i < 120; i++) properties[`p${i}`] = { type: 'string', pattern: `^(a{1,400}b){1,2}b${tag}_${i}$` };
    return { type: 'object', properties };
  };
  const compiler = createSchemaCompiler();
  compiler.compile({ type: 'object' }); // Ajv's meta-schema, compiled once per compiler
  const catalogue = new CatalogueProjection();
  const def = aDefinition({ name: 'bench.heavy', handler: 'bench.heavy', inputSchema: heavy(`w${Date.now()}`) });
  catalogue.apply({ position: '1', event: { type: 'ToolVersionPublished', data: { definition: def, schemaHash: 's', definitionHash: 'd', level: 'initial', reasons: [], by: 'bench', at: new Date().toISOString() } } });
  const cache = createCompiledSchemaCache(compiler);
  await cache.ready(catalogue.find('bench.heavy', '1.0.0') as NonNullable<ReturnType<CatalogueProjection['find']>>);
  const t0 = performance.now();
  compiler.compile(heavy(`s${Date.now()}`), 'inputSchema');
  const inOneGo = performance.now() - t0;
  return {
    bench: 'validation',
    case: 'heavy schema (120 costly patterns): longest event-loop hold while compiling, warm-up steps vs one go',
    unit: 'ms',
    estate: cache.stats().longestStepMs,
    peerName: 'compiled in one go (as on a first tools/call before the warm-up)',
    peer: inOneGo,
    notes: 'patterns in 5 ms slices, then one Ajv step per schema; the remaining step is Ajv alone',
  };
};

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const rows = await run();
  console.table(
    rows.map((r) => ({
      case: r.case,
      unit: r.unit,
      estate: r.estate,
      peer: r.peer,
      ratio: r.peer ? Math.round((r.estate / r.peer) * 100) / 100 : undefined,
    })),
  );
  console.log(JSON.stringify(rows, null, 2));
}
