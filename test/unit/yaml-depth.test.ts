/** How deep a YAML definition may nest, told before the `yaml` parser (which recurses per level) ever sees it. */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { nestsDeeperThan, yamlBlockDepthExceeds } from '#domain/json-depth';
import { parseDefinitionText } from '#domain/tool-definition';
import { REPO_ROOT } from '../e2e/helpers.ts';

const blockSequence = (levels: number): string => `${Array.from({ length: levels }, (_, i) => `${' '.repeat(i)}- `).join('\n')}1\n`;

describe('yamlBlockDepthExceeds', () => {
  it('counts the chain of deeper indentations a line sits in, not its width', () => {
    // A `- ` entry counts as a level of its own (one more than a pure sequence has: an upper bound, by one).
    expect(yamlBlockDepthExceeds(blockSequence(10), 11)).toBe(false);
    expect(yamlBlockDepthExceeds(blockSequence(11), 11)).toBe(true);
    // Four spaces a level: the same depth as two.
    const wide = `${Array.from({ length: 10 }, (_, i) => `${' '.repeat(4 * i)}k${i}:`).join('\n')} 1\n`;
    expect(yamlBlockDepthExceeds(wide, 10)).toBe(false);
    expect(yamlBlockDepthExceeds(wide, 9)).toBe(true);
  });

  it('counts compact entries on one line (- - - x), and skips comments and blank lines', () => {
    expect(yamlBlockDepthExceeds(`${'- '.repeat(10)}x\n`, 10)).toBe(true);
    expect(yamlBlockDepthExceeds(`${'- '.repeat(9)}x\n`, 10)).toBe(false);
    expect(yamlBlockDepthExceeds(`a:\n${Array.from({ length: 50 }, (_, i) => `${' '.repeat(i + 1)}# note`).join('\n')}\n\n  b: 1\n`, 3)).toBe(false);
  });

  it('an estimate never below the depth the parser finds, on generated documents', () => {
    for (let levels = 1; levels < 40; levels += 3) {
      const text = blockSequence(levels);
      const parsed = parseDefinitionText(text, 'gen.yaml', 'yaml');
      expect(nestsDeeperThan(parsed, levels)).toBe(false);
      expect(yamlBlockDepthExceeds(text, levels + 1)).toBe(false);
      expect(yamlBlockDepthExceeds(text, levels - 1)).toBe(true);
    }
  });

  it('passes every YAML definition the repository holds', () => {
    const dirs = ['test/conformance/tools'].map((d) => join(REPO_ROOT, d));
    let seen = 0;
    for (const dir of dirs) {
      let files: string[] = [];
      try {
        files = readdirSync(dir).filter((f) => /\.ya?ml$/.test(f));
      } catch {
        continue;
      }
      for (const f of files) {
        seen++;
        expect(yamlBlockDepthExceeds(readFileSync(join(dir, f), 'utf8'), 384), f).toBe(false);
      }
    }
    expect(seen).toBeGreaterThan(0);
  });
});
