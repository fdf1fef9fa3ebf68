/**
 * How the catalogue is laid out in a snapshot chunk: `{"s": [strings], "a": [access rules], "t": [tools]}`, a tool
 * being `[name, title, description, [record, ...]]` and a record an array whose repeated values (handler, access rule) are
 * indexes into the chunk's own tables: no repeated keys or values, so a chunk is small and quick to parse. Details
 * are not in it (a restored record reads them from its publishing event on demand).
 *
 * Reading checks every field and throws a TypeError naming the first one that is wrong; the snapshot is then treated
 * as corrupt. Any change here bumps LAYOUT in catalogue-snapshot.ts.
 */
import type { EventAnchor } from '#domain/events';
import type { LifecycleMark, SideEffect, ToolAccess, VersionStatus } from '#domain/types';
import { CLASSIFICATIONS, SIDE_EFFECTS } from '#domain/types';
import { type CatalogueProjection, type CatalogueTool, type CatalogueVersion } from '#projections/catalogue';

const STATUSES: readonly VersionStatus[] = ['active', 'deprecated', 'retired'];

type Mark = [reason: string, at: string, by: string] | null;
const markOut = (m: LifecycleMark | undefined): Mark => (m ? [m.reason, m.at, m.by] : null);

/** Collects tools into one chunk, with the chunk's tables. */
export class ChunkEncoder {
  private readonly strings = new Map<string, number>();
  private readonly accesses = new Map<ToolAccess, number>();
  private readonly accessList: unknown[] = [];
  private readonly tools: string[] = [];
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

  add(tool: CatalogueTool): void {
    const records = tool.versions.map((v) => [
      v.version,
      STATUSES.indexOf(v.status),
      this.access(v.access),
      this.str(v.handler),
      SIDE_EFFECTS.indexOf(v.sideEffect),
      v.timeoutMs,
      v.revision,
      markOut(v.deprecated),
      markOut(v.retired),
    ]);
    const text = JSON.stringify([tool.name, tool.title ?? null, tool.description, records]);
    this.tools.push(text);
    this.size += text.length + 1;
  }

  get empty(): boolean {
    return this.tools.length === 0;
  }

  /** The chunk; `anchor` (the first chunk's): the stream and revision of the event at the snapshot's position. */
  text(anchor?: EventAnchor): string {
    const n = anchor ? `,"n":${JSON.stringify([anchor.streamId, anchor.revision])}` : '';
    return `{"s":${JSON.stringify([...this.strings.keys()])},"a":${JSON.stringify(this.accessList)},"t":[${this.tools.join(',')}]${n}}`;
  }
}

const fail = (what: string): never => {
  throw new TypeError(`snapshot record: ${what}`);
};

const str = (x: unknown, what: string): string => (typeof x === 'string' ? x : fail(`${what} is not a string`));
const strings = (x: unknown, what: string): string[] => (Array.isArray(x) && x.every((s) => typeof s === 'string') ? (x as string[]) : fail(`${what} is not a list of strings`));
const int = (x: unknown, what: string): number => (Number.isSafeInteger(x) ? (x as number) : fail(`${what} is not a whole number`));
const num = (x: unknown, what: string): number => (typeof x === 'number' && Number.isFinite(x) ? x : fail(`${what} is not a number`));
const from = <T>(table: readonly T[], x: unknown, what: string): T => {
  const v = Number.isInteger(x) ? table[x as number] : undefined;
  return v === undefined ? fail(`${what} is not in its table`) : v;
};

const markIn = (x: unknown, what: string, c: CatalogueProjection): LifecycleMark => {
  if (!Array.isArray(x) || x.length !== 3) return fail(`${what} is not a lifecycle mark`);
  return { reason: c.shared(str(x[0], what)), at: str(x[1], what), by: c.shared(str(x[2], what)) };
};

/**
 * Read one chunk into `catalogue` (its shared strings and access rules too); returns the number of tools, and the
 * anchor when the chunk carries one (the first does).
 */
export const decodeChunk = (text: string, catalogue: CatalogueProjection): { tools: number; anchor?: EventAnchor } => {
  const chunk = JSON.parse(text) as { s?: unknown; a?: unknown; t?: unknown; n?: unknown };
  if (typeof chunk !== 'object' || chunk === null || !Array.isArray(chunk.t)) return fail('a chunk is not {s, a, t}');
  const table = strings(chunk.s, 'the string table').map((s) => catalogue.shared(s));
  if (!Array.isArray(chunk.a)) return fail('the access table is not a list');
  const accesses = chunk.a.map((a: unknown): ToolAccess => {
    if (!Array.isArray(a) || a.length !== 3 || !(CLASSIFICATIONS as readonly unknown[]).includes(a[0])) return fail('an access rule');
    return catalogue.sharedAccess({ requiredScopes: strings(a[2], 'scopes'), tenants: strings(a[1], 'tenants'), classification: a[0] as ToolAccess['classification'] });
  });
  for (const entry of chunk.t as unknown[]) {
    if (!Array.isArray(entry) || entry.length !== 4 || !Array.isArray(entry[3])) return fail('a tool entry is not [name, title, description, versions]');
    const name = str(entry[0], 'tool name');
    const title = entry[1] === null ? undefined : str(entry[1], 'title');
    const description = str(entry[2], 'description');
    const list = entry[3] as unknown[];
    const versions: CatalogueVersion[] = new Array<CatalogueVersion>(list.length);
    for (let i = 0; i < list.length; i++) {
      const x = list[i];
      if (!Array.isArray(x) || x.length !== 9) return fail(`a version of ${name} is not a record`);
      // Built as one literal, the optional marks added after: every record without marks shares one shape.
      const record: { -readonly [K in keyof CatalogueVersion]: CatalogueVersion[K] } = {
        name,
        version: str(x[0], 'version'),
        status: from(STATUSES, x[1], 'status'),
        access: from(accesses, x[2], 'access'),
        handler: from(table, x[3], 'handler'),
        sideEffect: from<SideEffect>(SIDE_EFFECTS, x[4], 'sideEffect'),
        timeoutMs: num(x[5], 'timeoutMs'),
        revision: int(x[6], 'revision'),
      };
      if (x[7] !== null) record.deprecated = markIn(x[7], 'deprecated', catalogue);
      if (x[8] !== null) record.retired = markIn(x[8], 'retired', catalogue);
      versions[i] = record;
    }
    catalogue.restoreTool({ name, versions, ...(title !== undefined ? { title } : {}), description });
  }
  if (chunk.n === undefined) return { tools: chunk.t.length };
  if (!Array.isArray(chunk.n) || chunk.n.length !== 2) return fail('the anchor is not [stream, revision]');
  return { tools: chunk.t.length, anchor: { streamId: str(chunk.n[0], 'the anchor\'s stream'), revision: int(chunk.n[1], 'the anchor\'s revision') } };
};
