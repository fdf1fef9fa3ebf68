/**
 * The side-by-side diff of two versions: each definition pretty-printed with the definition path of every line
 * (`inputSchema.properties.reference`), lines paired by a longest-common-subsequence diff, and each classifier reason
 * placed on the line its path names (else the nearest ancestor that is printed).
 */
import type { Reason } from '#domain/types';
import { jsonVisible } from '#domain/visible-text';

export interface PathLine {
  text: string;
  /** Dotted definition path of the value this line opens or holds ('' for the root). */
  path: string;
}

const join = (base: string, key: string): string => (base === '' ? key : `${base}.${key}`);

/** JSON.stringify(value, null, 2), line by line, each with its path. */
export const printWithPaths = (value: unknown): PathLine[] => {
  const out: PathLine[] = [];
  const walk = (v: unknown, path: string, indent: string, prefix: string, comma: string): void => {
    if (Array.isArray(v) && v.length > 0) {
      out.push({ text: `${indent}${prefix}[`, path });
      v.forEach((item, i) => walk(item, join(path, String(i)), `${indent}  `, '', i < v.length - 1 ? ',' : ''));
      out.push({ text: `${indent}]${comma}`, path });
    } else if (v !== null && typeof v === 'object' && !Array.isArray(v) && Object.keys(v).length > 0) {
      out.push({ text: `${indent}${prefix}{`, path });
      const entries = Object.entries(v as Record<string, unknown>);
      entries.forEach(([k, item], i) => walk(item, join(path, k), `${indent}  `, `${jsonVisible(JSON.stringify(k))}: `, i < entries.length - 1 ? ',' : ''));
      out.push({ text: `${indent}}${comma}`, path });
    } else {
      // Hidden characters as JSON escapes: a diff whose only change is a tag character or a zero-width space shows it.
      out.push({ text: jsonVisible(`${indent}${prefix}${JSON.stringify(v)}${comma}`), path });
    }
  };
  walk(value, '', '', '', '');
  return out;
};

export type DiffRow =
  | { kind: 'same'; left: PathLine; right: PathLine }
  | { kind: 'removed'; left: PathLine }
  | { kind: 'added'; right: PathLine }
  | { kind: 'changed'; left: PathLine; right: PathLine };

/** Line diff by LCS on the text (definitions are small: a few hundred lines at most). */
export const diffLines = (a: readonly PathLine[], b: readonly PathLine[]): DiffRow[] => {
  const n = a.length;
  const m = b.length;
  const lcs: Uint32Array[] = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) {
      (lcs[i] as Uint32Array)[j] = (a[i] as PathLine).text === (b[j] as PathLine).text ? ((lcs[i + 1] as Uint32Array)[j + 1] as number) + 1 : Math.max((lcs[i + 1] as Uint32Array)[j] as number, (lcs[i] as Uint32Array)[j + 1] as number);
    }
  }
  const rows: DiffRow[] = [];
  let i = 0;
  let j = 0;
  const removed: PathLine[] = [];
  const added: PathLine[] = [];
  const flush = (): void => {
    // Pair a run of removals with a run of additions: they show side by side as changed lines.
    const k = Math.min(removed.length, added.length);
    for (let x = 0; x < k; x++) rows.push({ kind: 'changed', left: removed[x] as PathLine, right: added[x] as PathLine });
    for (const l of removed.slice(k)) rows.push({ kind: 'removed', left: l });
    for (const r of added.slice(k)) rows.push({ kind: 'added', right: r });
    removed.length = 0;
    added.length = 0;
  };
  while (i < n || j < m) {
    if (i < n && j < m && (a[i] as PathLine).text === (b[j] as PathLine).text) {
      flush();
      rows.push({ kind: 'same', left: a[i] as PathLine, right: b[j] as PathLine });
      i++;
      j++;
    } else if (j < m && (i >= n || ((lcs[i] as Uint32Array)[j + 1] as number) >= ((lcs[i + 1] as Uint32Array)[j] as number))) {
      added.push(b[j] as PathLine);
      j++;
    } else {
      removed.push(a[i] as PathLine);
      i++;
    }
  }
  flush();
  return rows;
};

/**
 * The row each reason belongs on: the first changed row whose line path is the reason's path, else the deepest
 * printed ancestor of it (a removed property is printed only on the left, a required entry by index...).
 */
export const placeReasons = (rows: readonly DiffRow[], reasons: readonly Reason[]): Map<number, Reason[]> => {
  const placed = new Map<number, Reason[]>();
  const pathsOf = (r: DiffRow): string[] => [r.kind !== 'added' ? r.left.path : null, r.kind !== 'removed' ? r.right.path : null].filter((p): p is string => p !== null);
  const ancestors = (p: string): string[] => {
    const parts = p.split('.');
    return parts.map((_, i) => parts.slice(0, parts.length - i).join('.')).concat(['']);
  };
  for (const reason of reasons) {
    let at = -1;
    for (const candidate of ancestors(reason.path)) {
      // Prefer a changed row at this path; else any row at it.
      at = rows.findIndex((r) => r.kind !== 'same' && pathsOf(r).some((p) => p === candidate || p.startsWith(`${candidate}.`)) && pathsOf(r).includes(candidate));
      if (at < 0) at = rows.findIndex((r) => r.kind !== 'same' && pathsOf(r).some((p) => candidate === '' || p === candidate || p.startsWith(`${candidate}.`)));
      if (at < 0) at = rows.findIndex((r) => pathsOf(r).includes(candidate));
      if (at >= 0) break;
    }
    if (at < 0) at = 0;
    const list = placed.get(at) ?? [];
    list.push(reason);
    placed.set(at, list);
  }
  return placed;
};
