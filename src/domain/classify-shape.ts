/** Shape normalisation before keywords are compared: single-branch combinators collapse, a lone side is lifted. */
import { isObj, omit, same } from './classify-step.ts';
import type { JsonObject } from './types.ts';

export const COMBINATORS = ['allOf', 'anyOf', 'oneOf'] as const;
/** Keywords that never move into a lifted branch: they identify or describe, they do not constrain. */
const META = new Set(['$schema', '$id', '$defs', 'definitions', 'title', 'description', '$comment', 'examples', 'default']);

/** `{allOf|anyOf|oneOf: [X]}` means X: merged into the parent when no keyword conflicts, so `oneOf: [{type: string}]` equals `type: string`. */
export const collapseSingleBranches = (schema: JsonObject): JsonObject => {
  let cur = schema;
  for (let round = 0; round < 16; round++) {
    let changed = false;
    for (const k of COMBINATORS) {
      const branches = cur[k];
      if (!Array.isArray(branches) || branches.length !== 1) continue;
      const only = branches[0];
      const rest = omit(cur, k);
      if (only === true || (isObj(only) && Object.keys(only).length === 0)) {
        cur = rest;
        changed = true;
      } else if (isObj(only) && Object.keys(only).every((key) => !(key in rest) || same(rest[key], only[key]))) {
        cur = { ...rest, ...only };
        changed = true;
      }
    }
    if (!changed) break;
  }
  return cur;
};

/**
 * When only the other side has combinator `key`, this side's constraining keywords that the other side lacks become
 * its single branch, so `type: string` -> `oneOf: [number, string]` compares branch against branches.
 */
export const lift = (schema: JsonObject, other: JsonObject, key: string): JsonObject => {
  const base: JsonObject = {};
  const branch: JsonObject = {};
  for (const [k, v] of Object.entries(schema)) {
    if (META.has(k) || k in other) base[k] = v;
    else branch[k] = v;
  }
  return { ...base, [key]: [branch] };
};

export const disjunctionOf = (s: JsonObject): 'oneOf' | 'anyOf' | undefined =>
  'oneOf' in s === 'anyOf' in s ? undefined : 'oneOf' in s ? 'oneOf' : 'anyOf';
