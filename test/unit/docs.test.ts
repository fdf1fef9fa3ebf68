/** The user-facing docs stand on their own in a clone: no link to files outside the repository, no dead local link. */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const files = ['README.md', ...readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens. */
const anchors = (md: string): Set<string> =>
  new Set(
    [...md.matchAll(/^#{1,6} (.+)$/gm)].map((m) =>
      m[1]!
        .toLowerCase()
        .replace(/[^\p{L}\p{N} _-]/gu, '')
        .replace(/ /g, '-'),
    ),
  );

describe.each(files)('%s', (file) => {
  const text = readFileSync(join(ROOT, file), 'utf8');
  it('never points outside the repository', () => {
    expect(text).not.toMatch(/\.\.\/shared|\/work\/shared/);
  });
  it('every local link resolves (file and heading)', () => {
    for (const m of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      const target = m[1]!;
      if (/^[a-z]+:/.test(target)) continue;
      const [path, anchor] = target.split('#') as [string, string | undefined];
      const abs = path === '' ? join(ROOT, file) : resolve(dirname(join(ROOT, file)), path);
      expect(existsSync(abs), `${file}: ${target}`).toBe(true);
      if (anchor) expect(anchors(readFileSync(abs, 'utf8')).has(anchor), `${file}: ${target}`).toBe(true);
    }
  });
});

describe('README', () => {
  it('links the project\'s own reference', () => {
    expect(readFileSync(join(ROOT, 'README.md'), 'utf8')).toContain('[docs/reference.md](docs/reference.md)');
  });
});
