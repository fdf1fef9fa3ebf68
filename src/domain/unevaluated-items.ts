/**
 * `unevaluatedItems` as 2020-12 defines it. Ajv models "items evaluated so far" as a prefix length, so it cannot see
 * items evaluated by `contains` (any positions), nor items evaluated inside `anyOf`/`if` branches in every case. In a
 * document using `unevaluatedItems`, the normalised copy (schema-resources.ts) says it as UNEVALUATED_ITEMS_KEYWORD,
 * implemented here: the evaluated positions are computed from the annotations of the schema's own keywords and of its
 * in-place applicators that pass (`allOf`, `anyOf`, `oneOf`, `if`/`then`/`else`, `$ref`), each validity decided by Ajv.
 * Every reference in a normalised copy is a `#/$defs/...` pointer into its root, so a subschema compiles on its own
 * beside the root's `$defs`.
 */
import type { Ajv2020, ErrorObject, ValidateFunction } from 'ajv/dist/2020.js';
import type { DataValidateFunction, DataValidationCxt } from 'ajv/dist/types/index.js';
import { isPlainObject, resolveLocalRef } from './json-path.ts';

export const UNEVALUATED_ITEMS_KEYWORD = 'x-estate-unevaluated-items';

/** The keyword reports Ajv errors of its item schema wrapped, so that Ajv's verbose fields do not overwrite theirs. */
export interface WrappedItemError {
  inner: ErrorObject;
}

type Positions = Set<number> | 'all';

const MAX_EVALUATION_DEPTH = 256;

export function addUnevaluatedItemsKeyword(ajv: Ajv2020): void {
  ajv.addKeyword({
    keyword: UNEVALUATED_ITEMS_KEYWORD,
    type: 'array',
    schemaType: ['object', 'boolean'],
    errors: true,
    compile(itemSchema: unknown, parentSchema, it) {
      const root = it.schemaEnv.root.schema as unknown;
      const defs = isPlainObject(root) ? root['$defs'] : undefined;
      const compiled = new Map<unknown, ValidateFunction>();
      const validatorFor = (schema: unknown): ((data: unknown) => boolean) & { errors?: ErrorObject[] | null } => {
        if (schema === true) return () => true;
        if (schema === false || !isPlainObject(schema)) return () => false;
        let fn = compiled.get(schema);
        if (fn === undefined) {
          const standalone = defs === undefined ? { ...schema } : { ...schema, $defs: defs };
          try {
            fn = ajv.compile(standalone);
          } finally {
            ajv.removeSchema(standalone);
          }
          compiled.set(schema, fn);
        }
        return fn;
      };
      const valid = (schema: unknown, data: unknown): boolean => validatorFor(schema)(data);

      /** Positions of `data` that `schema` (assumed to apply) evaluates; `active` cuts `$ref` cycles. */
      const evaluated = (schema: unknown, data: unknown[], active: Set<object>, own: boolean): Positions => {
        // `active.size` bounds the recursion (a chain of references): past it, nothing more counts as evaluated, which
        // can only refuse more, never let an item through unchecked.
        if (!isPlainObject(schema) || active.has(schema) || active.size > MAX_EVALUATION_DEPTH) return new Set();
        if (schema['items'] !== undefined) return 'all';
        if (!own && (schema[UNEVALUATED_ITEMS_KEYWORD] !== undefined || schema['unevaluatedItems'] !== undefined)) return 'all';
        active.add(schema);
        try {
          const out = new Set<number>();
          const add = (p: Positions): boolean => {
            if (p === 'all') return true;
            for (const i of p) out.add(i);
            return false;
          };
          const prefix = schema['prefixItems'];
          if (Array.isArray(prefix)) for (let i = 0; i < Math.min(prefix.length, data.length); i++) out.add(i);
          if (schema['contains'] !== undefined) {
            for (let i = 0; i < data.length; i++) if (valid(schema['contains'], data[i])) out.add(i);
          }
          const ref = schema['$ref'];
          if (typeof ref === 'string' && add(evaluated(resolveLocalRef(root, ref), data, active, false))) return 'all';
          for (const keyword of ['allOf', 'anyOf', 'oneOf']) {
            const branches = schema[keyword];
            if (!Array.isArray(branches)) continue;
            for (const branch of branches) {
              if (valid(branch, data) && add(evaluated(branch, data, active, false))) return 'all';
            }
          }
          if (schema['if'] !== undefined) {
            const chosen = valid(schema['if'], data) ? 'then' : 'else';
            if (chosen === 'then' && add(evaluated(schema['if'], data, active, false))) return 'all';
            const branch = schema[chosen];
            if (branch !== undefined && valid(branch, data) && add(evaluated(branch, data, active, false))) return 'all';
          }
          return out;
        } finally {
          active.delete(schema);
        }
      };

      const keyword: DataValidateFunction = (data: unknown, cxt?: DataValidationCxt): boolean => {
        if (!Array.isArray(data) || itemSchema === true) return true;
        const done = evaluated(parentSchema, data, new Set(), true);
        if (done === 'all') return true;
        const remaining: number[] = [];
        for (let i = 0; i < data.length; i++) if (!done.has(i)) remaining.push(i);
        if (remaining.length === 0) return true;
        const at = cxt?.instancePath ?? '';
        if (itemSchema === false && remaining[0] === done.size) {
          // Evaluated positions are a prefix: reported as Ajv reports it, "must have at most <prefix> items".
          keyword.errors = [{ keyword: 'unevaluatedItems', params: { len: done.size }, message: `must NOT have more than ${done.size} items` }];
          return false;
        }
        const check = validatorFor(itemSchema);
        const errors: Partial<ErrorObject>[] = [];
        for (const i of remaining) {
          if (check(data[i])) continue;
          const inner: ErrorObject[] = check.errors ?? [
            { keyword: 'false schema', instancePath: '', schemaPath: '#', params: {}, message: 'boolean schema is false', data: data[i] },
          ];
          for (const e of inner) {
            const wrapped: WrappedItemError = { inner: { ...e, instancePath: `${at}/${i}${e.instancePath}` } };
            errors.push({ keyword: UNEVALUATED_ITEMS_KEYWORD, params: wrapped as unknown as Record<string, unknown> });
          }
        }
        keyword.errors = errors;
        return errors.length === 0;
      };
      return keyword;
    },
  });
}
