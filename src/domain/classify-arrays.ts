/** Keyword families of the schema classifier for arrays: prefixItems, items and contains. */
import { indexPath, keyPath } from './classify-rules.ts';
import { type SchemaStep, same } from './classify-step.ts';

export const arrays = (w: SchemaStep): void => {
  const { b, a } = w;
  if (Array.isArray(b.items) || Array.isArray(a.items) || b.additionalItems !== undefined || a.additionalItems !== undefined) {
    // The draft-07 tuple form is not 2020-12 (Estate refuses it at publish): compare it as text, failing closed.
    if (!same(b.items, a.items)) w.unmodelled('items');
    if (!same(b.additionalItems, a.additionalItems)) w.unmodelled('additionalItems');
    if (!same(b.prefixItems, a.prefixItems)) w.unmodelled('prefixItems');
    return;
  }
  if ((b.prefixItems !== undefined && !Array.isArray(b.prefixItems)) || (a.prefixItems !== undefined && !Array.isArray(a.prefixItems))) {
    if (!same(b.prefixItems, a.prefixItems)) w.unmodelled('prefixItems');
    return;
  }
  const bPrefix = Array.isArray(b.prefixItems) ? b.prefixItems : [];
  const aPrefix = Array.isArray(a.prefixItems) ? a.prefixItems : [];
  // Beyond its prefix, a position is governed by `items` (or, failing that, `unevaluatedItems`).
  const bTail = b.items ?? b.unevaluatedItems ?? true;
  const aTail = a.items ?? a.unevaluatedItems ?? true;
  const base = keyPath(w.path, 'prefixItems');
  for (let i = 0; i < Math.max(bPrefix.length, aPrefix.length); i++) w.sub(bPrefix[i] ?? bTail, aPrefix[i] ?? aTail, indexPath(base, i));
  if (b.items !== undefined || a.items !== undefined) w.sub(b.items ?? true, a.items ?? true, keyPath(w.path, 'items'));
};

export const contains = (w: SchemaStep): void => {
  const { b, a } = w;
  if (same(b.contains, a.contains)) return;
  if (b.contains !== undefined && a.contains !== undefined) w.sub(b.contains, a.contains, keyPath(w.path, 'contains'));
  else w.unmodelled('contains');
};
