/** `$ref` as the schema classifier follows it: local JSON pointers only, siblings merged as 2020-12 reads them. */
import { isObj, omit, same } from './classify-step.ts';
import type { JsonValue } from './types.ts';

const resolvePointer = (root: JsonValue, ref: string): JsonValue | undefined => {
  if (!ref.startsWith('#')) return undefined;
  let fragment: string;
  try {
    fragment = decodeURIComponent(ref.slice(1));
  } catch {
    return undefined;
  }
  if (fragment === '') return root;
  if (!fragment.startsWith('/')) return undefined; // `#anchor` forms are not resolved: compared as opaque text
  let cur: JsonValue | undefined = root;
  for (const raw of fragment.slice(1).split('/')) {
    const token = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (Array.isArray(cur)) cur = /^(0|[1-9][0-9]*)$/.test(token) ? cur[Number(token)] : undefined;
    else if (isObj(cur)) cur = Object.prototype.hasOwnProperty.call(cur, token) ? cur[token] : undefined;
    else cur = undefined;
    if (cur === undefined) return undefined;
  }
  return cur;
};

/**
 * Replaces a local `$ref` by its target. In 2020-12 `$ref` beside other keywords is a conjunction, so siblings are
 * merged into the target when no keyword conflicts, else the target becomes an `allOf` branch.
 */
export const deref = (schema: JsonValue, root: JsonValue): { schema: JsonValue; ref: string | undefined } => {
  let cur = schema;
  let first: string | undefined;
  for (let hops = 0; hops < 32 && isObj(cur) && typeof cur.$ref === 'string'; hops++) {
    const ref: string = cur.$ref;
    const target = resolvePointer(root, ref);
    if (target === undefined) break;
    first ??= ref;
    const siblings = omit(cur, '$ref');
    if (target === false) return { schema: false, ref: first };
    if (target === true || (isObj(target) && Object.keys(target).length === 0)) {
      cur = Object.keys(siblings).length === 0 ? true : siblings;
      continue;
    }
    if (!isObj(target)) break;
    const conflict = Object.keys(target).some((k) => k in siblings && !same(siblings[k], target[k]));
    cur = conflict ? { ...siblings, allOf: [...(Array.isArray(siblings.allOf) ? siblings.allOf : []), target] } : { ...target, ...siblings };
  }
  return { schema: cur, ref: first };
};
