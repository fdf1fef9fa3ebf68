/**
 * A `$ref` cycle that never descends into the instance: `#/$defs/a` = `{ allOf: [{ $ref: '#/$defs/b' }] }` and
 * `#/$defs/b` = `{ anyOf: [{ $ref: '#/$defs/a' }] }`. Ajv compiles it (recursive references become functions), and
 * then EVERY validation recurses without end and overflows the stack. Recursion that moves into a property or an item
 * (a tree of nodes) is fine: the instance is finite. Refused at publish, so a published version always validates.
 */
import { childSchemas, isPlainObject, resolveLocalRef } from './json-path.ts';

/** Applicators that apply their subschemas to the SAME instance (no descent into the value). */
const IN_PLACE = new Set(['allOf', 'anyOf', 'oneOf', 'not', 'if', 'then', 'else', 'dependentSchemas', 'dependencies']);

/** The pointer of a subschema that starts a cycle of in-place applications, or null when there is none. */
export const findInPlaceRefCycle = (root: unknown): string | null => {
  if (!isPlainObject(root)) return null;
  const pointers = new Map<object, string>();
  const state = new Map<object, 1 | 2>(); // 1: on the current path, 2: done
  const edges = (s: Record<string, unknown>, pointer: string): { schema: Record<string, unknown>; pointer: string }[] => {
    const out: { schema: Record<string, unknown>; pointer: string }[] = [];
    for (const child of childSchemas(s)) {
      const keyword = child.pointer.split('/')[1] ?? '';
      if (IN_PLACE.has(keyword)) out.push({ schema: child.schema, pointer: pointer + child.pointer });
    }
    for (const refKeyword of ['$ref', '$dynamicRef']) {
      const ref = s[refKeyword];
      if (typeof ref !== 'string') continue;
      const target = resolveLocalRef(root, ref);
      if (isPlainObject(target)) out.push({ schema: target, pointer: ref.slice(1) });
    }
    return out;
  };
  // Every subschema is a possible start: walk all of them (iteratively: a deep schema must not overflow the stack).
  const starts: { schema: Record<string, unknown>; pointer: string }[] = [{ schema: root, pointer: '' }];
  for (let k = 0; k < starts.length; k++) {
    const s = starts[k] as { schema: Record<string, unknown>; pointer: string };
    for (const child of childSchemas(s.schema)) starts.push({ schema: child.schema, pointer: s.pointer + child.pointer });
  }
  for (const start of starts) {
    if (state.has(start.schema)) continue;
    const stack: { schema: Record<string, unknown>; next: { schema: Record<string, unknown>; pointer: string }[] }[] = [];
    state.set(start.schema, 1);
    pointers.set(start.schema, start.pointer);
    stack.push({ schema: start.schema, next: edges(start.schema, start.pointer) });
    while (stack.length > 0) {
      const top = stack[stack.length - 1] as (typeof stack)[number];
      const e = top.next.pop();
      if (e === undefined) {
        state.set(top.schema, 2);
        stack.pop();
        continue;
      }
      const st = state.get(e.schema);
      if (st === 1) return pointers.get(e.schema) ?? e.pointer;
      if (st === 2) continue;
      state.set(e.schema, 1);
      pointers.set(e.schema, e.pointer);
      stack.push({ schema: e.schema, next: edges(e.schema, e.pointer) });
    }
  }
  return null;
};
