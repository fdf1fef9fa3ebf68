/** Prints bench rows as an aligned table (Estate beside its peer or floor, with the ratio), then as JSON. */
import type { BenchRow } from './lib.ts';

/** A figure as the tables show it: whole numbers with separators from 100, else three significant digits or so. */
export const fmt = (n: number | undefined): string => {
  if (n === undefined || Number.isNaN(n)) return '';
  if (Math.abs(n) >= 100) return Math.round(n).toLocaleString('en-US');
  return n.toFixed(Math.abs(n) >= 10 ? 1 : 2);
};

/** How many times better Estate is, for the row's unit: lower-is-better for times and memory, higher for rates. */
export const ratio = (row: BenchRow): string => {
  if (row.peer === undefined || !row.estate || !row.peer) return '';
  const higherIsBetter = /\/s$|ops|per second/i.test(row.unit);
  const r = higherIsBetter ? row.estate / row.peer : row.peer / row.estate;
  return `${r >= 10 ? Math.round(r) : r.toFixed(2)}x ${r >= 1 ? 'better' : 'worse'}`;
};

export const printRows = (rows: BenchRow[]): void => {
  const table = rows.map((r) => [r.bench, r.case, r.unit, fmt(r.estate), r.peerName ?? '', fmt(r.peer), ratio(r), r.notes ?? '']);
  const head = ['bench', 'case', 'unit', 'estate', 'peer / floor', 'peer', 'ratio', 'notes'];
  const widths = head.map((h, i) => Math.max(h.length, ...table.map((row) => (row[i] as string).length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i] as number)).join('  ').trimEnd();
  console.log(line(head));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const row of table) console.log(line(row));
  console.log('\nJSON:');
  console.log(JSON.stringify(rows));
};
