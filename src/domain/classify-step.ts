/**
 * What every keyword family of the schema classifier works with (classify-schema.ts walks, one file per family
 * compares): the comparison's context, the pair of schemas at one path, and the reasons found there. The recursive
 * `compare` travels in the context so that the families need not import the walker (no import cycle).
 */
import { canonicalJson } from './hash.ts';
import { type Direction, type SchemaRule, schemaReason } from './classify-rules.ts';
import type { JsonObject, JsonValue, Reason } from './types.ts';

export type Compare = (b: JsonValue, a: JsonValue, path: string, ctx: CompareCtx) => Reason[];

export interface CompareCtx {
  readonly beforeRoot: JsonValue;
  readonly afterRoot: JsonValue;
  readonly direction: Direction;
  /** (before, after) pairs being compared through a `$ref`: meeting one again means a cycle, assumed equal (co-induction). */
  readonly active: Set<string>;
  depth: number;
  /** Branch pairing compares every old branch with every new one, so nested combinators multiply the work. */
  budget: number;
  exhausted: boolean;
  /** The walker itself, for the families that compare subschemas. */
  readonly compare: Compare;
}

export const isObj = (v: JsonValue | undefined): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);

export const same = (a: JsonValue | undefined, b: JsonValue | undefined): boolean =>
  a === undefined || b === undefined ? a === b : canonicalJson(a) === canonicalJson(b);

export const show = (v: JsonValue | undefined): string => (v === undefined ? 'absent' : JSON.stringify(v));

export const omit = (s: JsonObject, key: string): JsonObject => {
  const out: JsonObject = {};
  for (const [k, v] of Object.entries(s)) if (k !== key) out[k] = v;
  return out;
};

export const objectOrEmpty = (v: JsonValue | undefined): JsonObject => (isObj(v) ? v : {});
export const stringList = (v: JsonValue | undefined): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);

/** One pair of schemas (`b` before, `a` after) at one path, and the reasons their keywords give. */
export class SchemaStep {
  readonly out: Reason[] = [];
  readonly ctx: CompareCtx;
  readonly path: string;
  readonly b: JsonObject;
  readonly a: JsonObject;
  constructor(ctx: CompareCtx, path: string, b: JsonObject, a: JsonObject) {
    this.ctx = ctx;
    this.path = path;
    this.b = b;
    this.a = a;
  }

  add(rule: SchemaRule, path: string, detail: string): void {
    this.out.push(schemaReason(rule, this.ctx.direction, path, detail));
  }
  sub(b: JsonValue, a: JsonValue, path: string): void {
    this.out.push(...this.ctx.compare(b, a, path, this.ctx));
  }
  unmodelled(keyword: string): void {
    this.add('unmodelled-change', this.path, `${keyword}: ${show(this.b[keyword])} -> ${show(this.a[keyword])}; not modelled, so it fails closed`);
  }
}
