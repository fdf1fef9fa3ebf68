/**
 * Validators shared by schema content. Versions often carry the very same schema (a patch or minor release that does
 * not touch the input, many tools of one shape), and compiling is the costly part of warming a version up
 * (compiled-schemas.ts): a schema whose canonical text was compiled already is not compiled again. Held weakly: the
 * versions hold their validators, and a validator no version holds any more is collected with them.
 */
import { canonicalHash } from '#domain/hash';
import type { JsonObject } from '#domain/types';
import type { CompiledSchema } from '#domain/validate';

export interface SharedValidators {
  /** The key of `schema` (its role and canonical hash) and the validator compiled for that text, if still held. */
  find(schema: JsonObject, where: string): { key: string; compiled: CompiledSchema | undefined };
  keep(key: string, compiled: CompiledSchema): void;
}

const SWEEP_AT = 1024;

export const createSharedValidators = (): SharedValidators => {
  const byKey = new Map<string, WeakRef<CompiledSchema>>();
  let sweepAt = SWEEP_AT;
  return {
    find(schema, where) {
      const key = `${where}\u0000${canonicalHash(schema)}`;
      return { key, compiled: byKey.get(key)?.deref() };
    },
    keep(key, compiled) {
      byKey.set(key, new WeakRef(compiled));
      if (byKey.size < sweepAt) return;
      for (const [k, ref] of byKey) if (ref.deref() === undefined) byKey.delete(k);
      sweepAt = Math.max(SWEEP_AT, byKey.size * 2);
    },
  };
};
