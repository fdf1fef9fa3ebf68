/**
 * How the catalogue is laid out in a snapshot chunk: by column, not by record, so that a chunk parses into a few long
 * arrays rather than half a million small ones (layout 6; the nested layout before it spent twice as long in
 * `JSON.parse`, docs/benchmarks-history.md, "the thirty-third pass"):
 *
 *     {"s": [strings], "a": [access rules],
 *      "k": [tool names], "i": [titles or null], "d": [descriptions], "c": [versions per tool],
 *      "v": [versions, every tool's in turn], "r": [6 numbers per version], "m": [5 values per lifecycle mark]}
 *
 * A version's six numbers are its status (index into STATUSES), access rule (into "a"), handler (into "s"), side
 * effect (into SIDE_EFFECTS), timeout (ms) and revision; a lifecycle mark is [version index in "v", 0 deprecated or 1
 * retired, reason, at, by], marks in version order. Details are not in it (a restored record reads them from its
 * publishing event on demand).
 *
 * Reading checks every field and throws a TypeError naming the first one that is wrong; the snapshot is then treated
 * as corrupt. Any change here bumps LAYOUT in catalogue-snapshot.ts.
 */
import type { EventAnchor } from '#domain/events';
import type { LifecycleMark, SideEffect, ToolAccess, VersionStatus } from '#domain/types';
import { CLASSIFICATIONS, SIDE_EFFECTS } from '#domain/types';
import { type CatalogueProjection, type CatalogueTool, type CatalogueVersion } from '#projections/catalogue';

const STATUSES: readonly VersionStatus[] = ['active', 'deprecated', 'retired'];
/** Numbers per version in "r", values per mark in "m". */
const R = 6;
const M = 5;

/** Collects tools into one chunk, with the chunk's tables. */
export class ChunkEncoder {
  private readonly strings = new Map<string, number>();
  private readonly accesses = new Map<ToolAccess, number>();
  private readonly accessList: unknown[] = [];
  private readonly names: string[] = [];
  private readonly titles: (string | null)[] = [];
  private readonly descriptions: string[] = [];
  private readonly counts: number[] = [];
  private readonly versions: string[] = [];
  private readonly numbers: number[] = [];
  private readonly marks: (string | number)[] = [];
  /** Characters so far (an estimate of the chunk's length). */
  size = 0;

  private str(s: string): number {
    let i = this.strings.get(s);
    if (i === undefined) {
      i = this.strings.size;
      this.strings.set(s, i);
      this.size += s.length + 3;
    }
    return i;
  }

  private access(a: ToolAccess): number {
    let i = this.accesses.get(a);
    if (i === undefined) {
      i = this.accessList.length;
      this.accesses.set(a, i);
      this.accessList.push([a.classification, a.tenants, a.requiredScopes]);
      this.size += 40;
    }
    return i;
  }

  private mark(at: number, kind: 0 | 1, m: LifecycleMark): void {
    this.marks.push(at, kind, m.reason, m.at, m.by);
    this.size += m.reason.length + m.at.length + m.by.length + 20;
  }

  add(tool: CatalogueTool): void {
    this.names.push(tool.name);
    this.titles.push(tool.title ?? null);
    this.descriptions.push(tool.description);
    this.counts.push(tool.versions.length);
    this.size += tool.name.length + (tool.title?.length ?? 4) + tool.description.length + 12;
    for (const v of tool.versions) {
      const at = this.versions.length;
      this.versions.push(v.version);
      this.numbers.push(STATUSES.indexOf(v.status), this.access(v.access), this.str(v.handler), SIDE_EFFECTS.indexOf(v.sideEffect), v.timeoutMs, v.revision);
      this.size += v.version.length + 3 + 24;
      if (v.deprecated) this.mark(at, 0, v.deprecated);
      if (v.retired) this.mark(at, 1, v.retired);
    }
  }

  get empty(): boolean {
    return this.names.length === 0;
  }

  /** The chunk; `anchor` (the first chunk's): the stream and revision of the event at the snapshot's position. */
  text(anchor?: EventAnchor): string {
    return JSON.stringify({
      s: [...this.strings.keys()],
      a: this.accessList,
      k: this.names,
      i: this.titles,
      d: this.descriptions,
      c: this.counts,
      v: this.versions,
      r: this.numbers,
      m: this.marks,
      ...(anchor ? { n: [anchor.streamId, anchor.revision] } : {}),
    });
  }
}

const fail = (what: string): never => {
  throw new TypeError(`snapshot record: ${what}`);
};

const str = (x: unknown, what: string): string => (typeof x === 'string' ? x : fail(`${what} is not a string`));
const strings = (x: unknown, what: string): string[] => (Array.isArray(x) && x.every((s) => typeof s === 'string') ? (x as string[]) : fail(`${what} is not a list of strings`));
const list = (x: unknown, what: string): unknown[] => (Array.isArray(x) ? x : fail(`${what} is not a list`));
const int = (x: unknown, what: string): number => (Number.isSafeInteger(x) ? (x as number) : fail(`${what} is not a whole number`));
const num = (x: unknown, what: string): number => (typeof x === 'number' && Number.isFinite(x) ? x : fail(`${what} is not a number`));
/** A record's field from its table; the field and tool named only when it is wrong (no text made per record). */
const field = <T>(table: readonly T[], x: unknown, what: string, name: string): T => {
  const v = Number.isInteger(x) ? table[x as number] : undefined;
  return v === undefined ? fail(`the ${what} of ${name} is not in its table`) : v;
};

type Chunk = Partial<Record<'s' | 'a' | 'k' | 'i' | 'd' | 'c' | 'v' | 'r' | 'm' | 'n', unknown>>;

/**
 * Read one chunk into `catalogue` (its shared strings and access rules too); returns the number of tools, and the
 * anchor when the chunk carries one (the first does).
 */
export const decodeChunk = (text: string, catalogue: CatalogueProjection): { tools: number; anchor?: EventAnchor } => {
  const chunk = JSON.parse(text) as Chunk;
  if (typeof chunk !== 'object' || chunk === null || Array.isArray(chunk)) return fail('a chunk is not an object');
  const table = strings(chunk.s, 'the string table').map((s) => catalogue.shared(s));
  const accesses = list(chunk.a, 'the access table').map((a: unknown): ToolAccess => {
    if (!Array.isArray(a) || a.length !== 3 || !(CLASSIFICATIONS as readonly unknown[]).includes(a[0])) return fail('an access rule');
    return catalogue.sharedAccess({ requiredScopes: strings(a[2], 'scopes'), tenants: strings(a[1], 'tenants'), classification: a[0] as ToolAccess['classification'] });
  });
  const names = strings(chunk.k, 'the tool names');
  const titles = list(chunk.i, 'the titles');
  const descriptions = strings(chunk.d, 'the descriptions');
  const counts = list(chunk.c, 'the version counts');
  const versions = strings(chunk.v, 'the versions');
  const numbers = list(chunk.r, 'the version numbers');
  const marks = list(chunk.m, 'the lifecycle marks');
  if (titles.length !== names.length || descriptions.length !== names.length || counts.length !== names.length) return fail('the tool columns differ in length');
  if (numbers.length !== versions.length * R) return fail(`the version numbers are not ${R} per version`);
  if (marks.length % M !== 0) return fail(`the lifecycle marks are not ${M} values each`);

  let at = 0; // index into versions
  let m = 0; // index into marks
  for (let t = 0; t < names.length; t++) {
    const name = names[t] as string;
    const title = titles[t] === null ? undefined : str(titles[t], 'title');
    const n = int(counts[t], 'a version count');
    if (n < 0 || at + n > versions.length) return fail(`the version count of ${name} is past the versions`);
    const records: CatalogueVersion[] = new Array<CatalogueVersion>(n);
    for (let i = 0; i < n; i++, at++) {
      const o = at * R;
      // Built as one literal, the optional marks added after: every record without marks shares one shape.
      const record: { -readonly [K in keyof CatalogueVersion]: CatalogueVersion[K] } = {
        name,
        version: versions[at] as string,
        status: field(STATUSES, numbers[o], 'status', name),
        access: field(accesses, numbers[o + 1], 'access', name),
        handler: field(table, numbers[o + 2], 'handler', name),
        sideEffect: field<SideEffect>(SIDE_EFFECTS, numbers[o + 3], 'sideEffect', name),
        timeoutMs: num(numbers[o + 4], 'a timeoutMs'),
        revision: int(numbers[o + 5], 'a revision'),
      };
      for (; m < marks.length && marks[m] === at; m += M) {
        const mark: LifecycleMark = {
          reason: catalogue.shared(str(marks[m + 2], 'a mark\'s reason')),
          at: str(marks[m + 3], 'a mark\'s time'),
          by: catalogue.shared(str(marks[m + 4], 'a mark\'s author')),
        };
        const kind = marks[m + 1];
        if (kind === 0 && record.deprecated === undefined) record.deprecated = mark;
        else if (kind === 1 && record.retired === undefined) record.retired = mark;
        else return fail(`a lifecycle mark of ${name} is neither one deprecation nor one retirement`);
      }
      records[i] = record;
    }
    const tool: CatalogueTool = { name, versions: records, description: descriptions[t] as string };
    if (title !== undefined) tool.title = title;
    catalogue.restoreTool(tool);
  }
  if (at !== versions.length) return fail('the versions are more than the tools\' counts');
  // Marks are in version order: one left over names a version that is not there, or is out of order.
  if (m !== marks.length) return fail('a lifecycle mark names no version in order');
  if (chunk.n === undefined) return { tools: names.length };
  if (!Array.isArray(chunk.n) || chunk.n.length !== 2) return fail('the anchor is not [stream, revision]');
  return { tools: names.length, anchor: { streamId: str(chunk.n[0], 'the anchor\'s stream'), revision: int(chunk.n[1], 'the anchor\'s revision') } };
};
