/**
 * Reads a V8 .cpuprofile (from `node --cpu-prof`) and says where the time went, as shares of the busy time (samples
 * that were not idle): self time per function (file:function:line), self time per file or package, and inclusive
 * time of Estate's own functions (what a call through them cost, callees included). The profile's clock is the
 * machine's monotonic clock, the one `process.hrtime` reads, so another process can name the window to count.
 *
 *   node --import tsx bench/cpuprofile-summary.ts <file.cpuprofile> [top]
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface Profile {
  startTime: number;
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** `…/node_modules/pino/lib/tools.js` → `pino/lib/tools.js`; `…/dist/src/mcp/x.js` → `src/mcp/x.js`. */
const shortUrl = (url: string): string => {
  if (url === '') return '';
  const u = url.replace(/^file:\/\//, '');
  const nm = u.lastIndexOf('/node_modules/');
  if (nm >= 0) return u.slice(nm + '/node_modules/'.length);
  const m = /\/(?:dist\/)?((?:src|projections|bench)\/.*)$/.exec(u);
  return m ? (m[1] as string) : u;
};

/** The package or room a file belongs to: `pino`, `@modelcontextprotocol/node`, `src/mcp`, `node:internal`. */
const groupOf = (file: string, fn: string): string => {
  if (file === '') return fn.startsWith('(') ? fn : '(native)';
  if (file.startsWith('node:')) return file.startsWith('node:internal') ? 'node:internal' : file;
  const parts = file.split('/');
  if (file.startsWith('src/') || file.startsWith('projections/')) return parts.slice(0, file.startsWith('src/') ? 2 : 1).join('/');
  return file.startsWith('@') ? parts.slice(0, 2).join('/') : (parts[0] as string);
};

const IDLE = new Set(['(idle)']);

const table = (title: string, m: Map<string, number>, busy: number, top: number): string => {
  const rows = [...m.entries()].sort((a, b) => b[1] - a[1]).slice(0, top);
  const lines = rows.map(([k, us]) => `${((100 * us) / busy).toFixed(1).padStart(5)}%  ${(us / 1000).toFixed(0).padStart(6)} ms  ${k}`);
  return `${title}\n${lines.join('\n')}\n`;
};

/** `window`: only samples taken between these two monotonic clock readings, in µs (`process.hrtime.bigint() / 1000n`). */
export const summarise = (file: string, top = 40, window?: { from: number; to: number }): string => {
  const p = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  const byId = new Map<number, ProfileNode>(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const keyOf = (n: ProfileNode): { fn: string; file: string } => {
    const file = shortUrl(n.callFrame.url);
    const fn = n.callFrame.functionName || '(anonymous)';
    return { fn: file ? `${file}:${fn}:${n.callFrame.lineNumber + 1}` : fn, file: file || fn };
  };
  const selfFn = new Map<string, number>();
  const selfFile = new Map<string, number>();
  const selfGroup = new Map<string, number>();
  const inclusiveOwn = new Map<string, number>();
  let busy = 0;
  let idle = 0;
  let at = p.startTime;
  p.samples.forEach((id, i) => {
    at += p.timeDeltas[i] ?? 0;
    if (window && (at < window.from || at > window.to)) return;
    const dt = p.timeDeltas[i + 1] ?? p.timeDeltas[i] ?? 0;
    const n = byId.get(id);
    if (!n) return;
    const k = keyOf(n);
    if (IDLE.has(k.fn)) {
      idle += dt;
      return;
    }
    busy += dt;
    selfFn.set(k.fn, (selfFn.get(k.fn) ?? 0) + dt);
    selfFile.set(k.file, (selfFile.get(k.file) ?? 0) + dt);
    const g = groupOf(shortUrl(n.callFrame.url), k.fn);
    selfGroup.set(g, (selfGroup.get(g) ?? 0) + dt);
    // Inclusive: every distinct Estate function on the stack gets the sample once.
    const seen = new Set<string>();
    for (let up: number | undefined = id; up !== undefined; up = parent.get(up)) {
      const node = byId.get(up);
      if (!node) break;
      const url = shortUrl(node.callFrame.url);
      if (!url.startsWith('src/') && !url.startsWith('projections/')) continue;
      const key = keyOf(node).fn;
      if (seen.has(key)) continue;
      seen.add(key);
      inclusiveOwn.set(key, (inclusiveOwn.get(key) ?? 0) + dt);
    }
  });
  const head = `busy ${(busy / 1000).toFixed(0)} ms, idle ${(idle / 1000).toFixed(0)} ms (shares below are of busy time)\n\n`;
  return (
    head +
    table('SELF TIME BY PACKAGE / ROOM', selfGroup, busy, top) +
    '\n' +
    table('SELF TIME BY FILE', selfFile, busy, top) +
    '\n' +
    table('SELF TIME BY FUNCTION', selfFn, busy, top) +
    '\n' +
    table("INCLUSIVE TIME OF ESTATE'S FUNCTIONS", inclusiveOwn, busy, top)
  );
};

const invokedDirectly = process.argv[1] !== undefined && resolve(process.argv[1]).endsWith('cpuprofile-summary.ts');
if (invokedDirectly) {
  const file = process.argv[2];
  if (!file) {
    process.stderr.write('usage: node --import tsx bench/cpuprofile-summary.ts <file.cpuprofile> [top]\n');
    process.exit(2);
  }
  process.stdout.write(summarise(file, Number(process.argv[3] ?? 40)));
}
