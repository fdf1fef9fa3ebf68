/**
 * Issue 16, security: supporting `$id`, `$anchor` and `$dynamicRef` must not open the network or loosen the limits.
 * A real local HTTP server is the canary host: every schema below names it in `$ref`, `$dynamicRef`, `$id` or
 * `$schema`, and the server must never be hit, whether the schema is refused or compiled and used.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DomainError } from '#domain/errors';
import { createSchemaCompiler, MAX_SCHEMA_DEPTH } from '#domain/schema-compiler';
import { MAX_NORMALISED_COPIES } from '#domain/schema-resources';
import type { JsonObject } from '#domain/types';

let server: Server;
let canary = '';
const hits: string[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    hits.push(req.url ?? '');
    res.setHeader('content-type', 'application/schema+json');
    res.end(JSON.stringify({ type: 'string' }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  canary = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

const compiler = createSchemaCompiler();

const refusalCode = (schema: JsonObject): string => {
  try {
    compiler.compile(schema, 'inputSchema');
  } catch (e) {
    if (e instanceof DomainError) return e.code;
    throw e;
  }
  return 'compiled';
};

describe('no network access, ever', () => {
  it('the canary server answers when asked (so a fetch WOULD be counted)', async () => {
    const before = hits.length;
    const response = await fetch(`${canary}/probe.json`);
    expect(response.status).toBe(200);
    await response.text();
    expect(hits.length).toBe(before + 1);
    hits.length = 0;
  });

  it('refuses a $ref, a relative $ref under a canary $id, a $dynamicRef and a $schema naming the canary: no hit', async () => {
    const schemas: [JsonObject, string][] = [
      [{ type: 'object', properties: { a: { $ref: `${canary}/money.json` } } }, 'remote-ref'],
      [{ type: 'object', properties: { a: { $ref: `${canary}/money.json#/$defs/amount` } } }, 'remote-ref'],
      [{ $id: `${canary}/tool.json`, type: 'object', properties: { a: { $ref: 'money.json' } } }, 'remote-ref'],
      [{ type: 'object', $defs: { m: { $id: `${canary}/m.json`, $ref: 'other.json' } } }, 'remote-ref'],
      [{ type: 'object', properties: { a: { $dynamicRef: `${canary}/meta.json#meta` } } }, 'remote-ref'],
      [{ $schema: `${canary}/dialect.json`, type: 'object' }, 'schema-invalid'],
      [{ type: 'object', $defs: { m: { $id: `${canary}/m.json`, $schema: `${canary}/dialect.json` } } }, 'schema-invalid'],
    ];
    for (const [schema, code] of schemas) expect(refusalCode(schema), JSON.stringify(schema)).toBe(code);
    // Give any stray request time to arrive: one more round trip to the canary itself, then count.
    await (await fetch(`${canary}/flush`)).text();
    expect(hits).toEqual(['/flush']);
    hits.length = 0;
  });

  it('compiles a canary $id whose references stay inside the document, and validates without a hit', async () => {
    const schema: JsonObject = {
      $id: `${canary}/tool.json`,
      type: 'object',
      properties: {
        amount: { $ref: 'money.json' },
        note: { $ref: '#note' },
        tags: { $ref: `${canary}/list.json` },
      },
      required: ['amount'],
      unevaluatedProperties: false,
      $defs: {
        money: { $id: 'money.json', type: 'integer', minimum: 0 },
        note: { $anchor: 'note', type: 'string', maxLength: 10 },
        tag: { $dynamicAnchor: 'item', type: 'string', pattern: '^[a-z]+$' },
        list: { $id: 'list.json', type: 'array', items: { $dynamicRef: '#item' }, $defs: { any: { $dynamicAnchor: 'item' } } },
      },
    };
    const compiled = compiler.compile(schema, 'inputSchema');
    expect(compiled.validate({ amount: 5, note: 'hi', tags: ['a', 'b'] })).toEqual([]);
    expect(compiled.validate({ amount: -1, note: 'far too long a note', tags: ['A'], extra: 1 })).toEqual([
      { path: '$.amount', message: 'must be >= 0' },
      { path: '$.extra', message: 'additional property is not allowed' },
      { path: '$.note', message: 'must be at most 10 characters' },
      { path: '$.tags[0]', message: "does not match pattern '^[a-z]+$'" },
    ]);
    // The published schema is what the compiled schema holds: byte-for-byte, not the normalised copy.
    expect(JSON.stringify(compiled.schema)).toBe(JSON.stringify(schema));
    await (await fetch(`${canary}/flush`)).text();
    expect(hits).toEqual(['/flush']);
    hits.length = 0;
  });
});

describe('the limits still hold inside $id resources and anchors', () => {
  it('RE2: a lookahead or backreference inside an embedded resource is refused as unsafe-pattern', () => {
    expect(refusalCode({ type: 'object', $defs: { r: { $id: 'r.json', $anchor: 'r', type: 'string', pattern: '^(?=a).*$' } } })).toBe('unsafe-pattern');
    expect(refusalCode({ type: 'object', $defs: { r: { $id: 'r.json', patternProperties: { '(a)\\1': true } } } })).toBe('unsafe-pattern');
  });

  it('depth: nesting deeper than MAX_SCHEMA_DEPTH inside a resource is refused', () => {
    let deep: JsonObject = { type: 'string' };
    for (let i = 0; i < MAX_SCHEMA_DEPTH + 5; i++) deep = { $id: `l${i}.json`, properties: { x: deep } };
    expect(refusalCode({ type: 'object', properties: { d: deep } })).toBe('schema-invalid');
  });

  it('size: dynamic scopes that would multiply copies without bound are refused, quickly', () => {
    // n resources, each with its own dynamic anchor and a reference to every other: 2^n dynamic scopes.
    const n = 20;
    const defs: JsonObject = {};
    for (let i = 0; i < n; i++) {
      defs[`r${i}`] = {
        $id: `r${i}.json`,
        $dynamicAnchor: `a${i}`,
        properties: Object.fromEntries(Array.from({ length: n }, (_, j) => [`p${j}`, { $ref: `r${j}.json` }])),
      };
    }
    const schema: JsonObject = { type: 'object', properties: { start: { $ref: 'r0.json' } }, $defs: defs };
    let e: unknown;
    try {
      compiler.compile(schema, 'inputSchema');
    } catch (err) {
      e = err;
    }
    expect(e).toBeInstanceOf(DomainError);
    expect((e as DomainError).code).toBe('schema-invalid');
    expect((e as DomainError).message).toContain(String(MAX_NORMALISED_COPIES));
  });

  it('a duplicate $id or anchor, or an $id with a fragment, is refused as schema-invalid', () => {
    expect(refusalCode({ type: 'object', $defs: { a: { $id: 'x.json' }, b: { $id: 'x.json' } } })).toBe('schema-invalid');
    expect(refusalCode({ type: 'object', $defs: { a: { $anchor: 'x' }, b: { $anchor: 'x' } } })).toBe('schema-invalid');
    expect(refusalCode({ type: 'object', $defs: { a: { $id: 'x.json#frag' } } })).toBe('schema-invalid');
    expect(refusalCode({ type: 'object', $defs: { a: { $anchor: '1bad' } } })).toBe('schema-invalid');
  });
});
