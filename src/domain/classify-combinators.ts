/** Keyword families of the schema classifier for combinators: oneOf/anyOf branches and allOf branches, paired. */
import { indexPath, keyPath } from './classify-rules.ts';
import type { SchemaStep } from './classify-step.ts';
import { LEVEL_RANK, type JsonValue, type Reason } from './types.ts';

const maxRank = (reasons: readonly Reason[]): number => reasons.reduce((m, r) => Math.max(m, LEVEL_RANK[r.level]), 0);

/** oneOf/anyOf: every old branch must still be accepted by some new branch. */
export const disjunction = (w: SchemaStep, kind: 'oneOf' | 'anyOf'): void => {
  const bBranches = Array.isArray(w.b[kind]) ? w.b[kind] : [true];
  const aBranches = Array.isArray(w.a[kind]) ? w.a[kind] : [true];
  const rule = kind === 'oneOf' ? 'one-of' : 'any-of';
  const base = keyPath(w.path, kind);
  const { pairs, unpaired, unused } = pairBranches(w, bBranches, aBranches, base, 'old-in-new');
  for (const reasons of pairs) w.out.push(...reasons);
  const spare = [...unused];
  for (const i of unpaired) {
    const j = spare.includes(i) ? i : spare[0];
    if (j !== undefined) {
      spare.splice(spare.indexOf(j), 1);
      w.add(`${rule}-branch-changed`, indexPath(base, j), `${kind} branch ${i} changed: no new branch accepts all it accepted`);
    } else w.add(`${rule}-branch-removed`, indexPath(base, i), `${kind} branch ${i} removed`);
  }
  for (const j of spare) w.add(`${rule}-branch-added`, indexPath(base, j), `${kind} branch ${j} added`);
};

/** allOf: every new branch must be implied by some old branch. */
export const conjunction = (w: SchemaStep): void => {
  const bBranches = Array.isArray(w.b.allOf) ? w.b.allOf : [true];
  const aBranches = Array.isArray(w.a.allOf) ? w.a.allOf : [true];
  const base = keyPath(w.path, 'allOf');
  const { pairs, unpaired, unused } = pairBranches(w, aBranches, bBranches, base, 'new-implied-by-old');
  for (const reasons of pairs) w.out.push(...reasons);
  const spare = [...unused];
  for (const j of unpaired) {
    const i = spare.includes(j) ? j : spare[0];
    if (i !== undefined) {
      spare.splice(spare.indexOf(i), 1);
      w.add('all-of-branch-changed', indexPath(base, j), `allOf branch ${j} changed: no old branch implies it`);
    } else w.add('all-of-branch-added', indexPath(base, j), `allOf branch ${j} added`);
  }
  for (const i of spare) w.add('all-of-branch-removed', indexPath(base, i), `allOf branch ${i} removed`);
};

/**
 * For each branch of `from`, the branch of `to` it compares best with (fewest, lowest reasons; the same index on a
 * tie). A pairing whose worst reason is MAJOR is no pairing. `from` is old for disjunctions, new for conjunctions.
 */
const pairBranches = (
  w: SchemaStep,
  from: JsonValue[],
  to: JsonValue[],
  base: string,
  mode: 'old-in-new' | 'new-implied-by-old',
): { pairs: Reason[][]; unpaired: number[]; unused: number[] } => {
  const pairs: Reason[][] = [];
  const unpaired: number[] = [];
  const used = new Set<number>();
  from.forEach((f, i) => {
    let best: { j: number; reasons: Reason[]; cost: number } | undefined;
    to.forEach((t, j) => {
      const reasons =
        mode === 'old-in-new' ? w.ctx.compare(f, t, indexPath(base, j), w.ctx) : w.ctx.compare(t, f, indexPath(base, i), w.ctx);
      const cost = maxRank(reasons) * 1000 + reasons.length;
      if (best === undefined || cost < best.cost || (cost === best.cost && j === i)) best = { j, reasons, cost };
    });
    if (best !== undefined && best.cost < LEVEL_RANK.major * 1000) {
      pairs.push(best.reasons);
      used.add(best.j);
    } else unpaired.push(i);
  });
  const unused = to.map((_, j) => j).filter((j) => !used.has(j));
  return { pairs, unpaired, unused };
};
