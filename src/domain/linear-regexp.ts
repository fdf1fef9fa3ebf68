/**
 * The one place that decides how a JSON Schema `pattern` runs: in linear time, by RE2 (the native `re2` binding, whose
 * compiled programs are freed with their JavaScript objects; re2-wasm kept every program in a fixed 16 MiB heap that it
 * never freed, so a catalogue with a few thousand patterns made `new RE2` fail for good), or by V8 for a narrow class
 * that cannot backtrack. Compiled matchers are reused by source through a bounded LRU cache.
 *
 * Also the per-definition pattern budget: how many patterns a definition may carry and how many bytes they may take
 * altogether. The time budget (compiling a definition in a worker thread with a deadline) is in
 * ../app/definition-budget.ts; both refuse with `schema-too-costly`.
 */
import RE2 from 're2';

/** What a pattern needs to be for validation: a membership test. */
export interface PatternMatcher {
  test(input: string): boolean;
}


/** Most patterns one schema (inputSchema, outputSchema: each) may carry. */
export const MAX_PATTERNS_PER_DEFINITION = 1000;
/** Most UTF-16 code units all patterns of one schema may take altogether. */
export const MAX_PATTERN_CHARS_PER_DEFINITION = 64 * 1024;
/** Compiled matchers kept for reuse; the least recently used is dropped past this. */
export const PATTERN_CACHE_SIZE = 10_000;

/** Most fixed-length atoms allowed after the one variable quantifier of a backtrack-safe pattern. */
const MAX_SAFE_SUFFIX = 4;
const SAFE_ESCAPE = /[dDwW\\/.\-^$*+?()[\]{}|]/;
const SAFE_CLASS_ESCAPE = /[dDwW\\\]\-^./[]/;

/**
 * Whether V8's own (backtracking) RegExp runs `pattern` in linear time AND means what RE2 means by it, so it may run
 * natively: a native RE2 match costs ~0.5 µs (crossing into C++ and re-encoding the string as UTF-8), V8 ~0.1 µs.
 * Deliberately narrow; anything else goes to RE2:
 * - anchored with `^`, optionally ending in `$`; no groups, no alternation, no lazy quantifiers;
 * - atoms: literal characters, `\d \D \w \W`, escaped punctuation, simple `[...]` classes. Not `.`, `\s`, `\S`, `\b`:
 *   V8 and RE2 disagree on line terminators and Unicode spaces;
 * - at most ONE atom with a variable quantifier (`? * + {n,} {n,m}`), followed by at most 4 fixed atoms.
 * Then the only choice point is how many characters the variable atom takes (at most n+1 tries, each checking at most
 * 4 atoms): O(4·n) however hostile the input. Two variable atoms (`^\d*\d*$`) already allow O(n²).
 */
export const isBacktrackSafe = (pattern: string): boolean => {
  if (!pattern.startsWith('^')) return false;
  let i = 1;
  let variableSeen = false;
  let suffix = 0;
  while (i < pattern.length) {
    const c = pattern[i] as string;
    if (c === '$') return i === pattern.length - 1;
    if (c === '\\') {
      const next = pattern[i + 1];
      if (next === undefined || !SAFE_ESCAPE.test(next)) return false;
      i += 2;
    } else if (c === '[') {
      let j = i + 1;
      if (pattern[j] === '^') j++;
      if (pattern[j] === ']') return false;
      for (;;) {
        const d = pattern[j];
        if (d === undefined || d === '[') return false;
        if (d === ']') break;
        if (d === '\\') {
          const next = pattern[j + 1];
          if (next === undefined || !SAFE_CLASS_ESCAPE.test(next)) return false;
          j += 2;
        } else j++;
      }
      i = j + 1;
    } else if ('^*+?(){}|.]'.includes(c)) {
      return false;
    } else {
      // One code point (a surrogate pair is one atom under the `u` flag).
      const code = c.charCodeAt(0);
      i += code >= 0xd800 && code <= 0xdbff ? 2 : 1;
    }
    let count = 1;
    let variable = false;
    const q = pattern[i];
    if (q === '*' || q === '+' || q === '?') {
      variable = true;
      i++;
    } else if (q === '{') {
      const m = /^\{(\d{1,6})(,(\d{0,6}))?\}/.exec(pattern.slice(i, i + 16));
      if (m === null) return false;
      count = Number(m[1]);
      variable = m[2] !== undefined && m[3] !== m[1];
      if (m[3] !== undefined && m[3] !== '' && Number(m[3]) < count) return false;
      i += m[0].length;
    }
    const after = pattern[i];
    if (after === '?' || after === '*' || after === '+' || after === '{') return false;
    if (variable) {
      if (variableSeen) return false;
      variableSeen = true;
    } else if (variableSeen) {
      suffix += count;
      if (suffix > MAX_SAFE_SUFFIX) return false;
    }
  }
  return true;
};

/** A Map used as an LRU: a hit is moved to the end, the first entry is the least recently used. */
const cache = new Map<string, PatternMatcher>();

/**
 * A pattern as a linear-time matcher: V8's RegExp for the narrow backtrack-safe class above, RE2 otherwise (with the
 * `u` flag, as Ajv uses for JSON Schema patterns). Throws for a pattern RE2 cannot run, even when V8 could: what a
 * schema may say must not depend on which engine happens to run it. Cached by source (bounded): the same pattern
 * recurs across versions of a tool.
 */
export const linearRegExp = (pattern: string): PatternMatcher => {
  let matcher = cache.get(pattern);
  if (matcher !== undefined) {
    cache.delete(pattern);
    cache.set(pattern, matcher);
    return matcher;
  }
  const re2 = new RE2(pattern, 'u');
  matcher = isBacktrackSafe(pattern) ? new RegExp(pattern, 'u') : re2;
  cache.set(pattern, matcher);
  if (cache.size > PATTERN_CACHE_SIZE) cache.delete(cache.keys().next().value as string);
  return matcher;
};

/** How many compiled matchers the cache holds (for tests and benchmarks). */
export const linearRegExpCacheSize = (): number => cache.size;

/** RE2 alone, for tests that compare the two engines. */
export const re2RegExp = (pattern: string): PatternMatcher => new RE2(pattern, 'u');

/** What Ajv generates into standalone code for its `code.regExp` option (never used at run time here). */
export const REGEXP_ENGINE_CODE = 'require("re2")';

/**
 * The size budget of one definition's patterns: a one-line reason when `patterns` exceed it, else null. Checked before
 * any pattern is compiled.
 */
export const patternBudgetExceeded = (count: number, chars: number): string | null => {
  if (count > MAX_PATTERNS_PER_DEFINITION) return `carries ${count} patterns; at most ${MAX_PATTERNS_PER_DEFINITION} per schema`;
  if (chars > MAX_PATTERN_CHARS_PER_DEFINITION) {
    return `carries ${chars} characters of patterns; at most ${MAX_PATTERN_CHARS_PER_DEFINITION} per schema`;
  }
  return null;
};
