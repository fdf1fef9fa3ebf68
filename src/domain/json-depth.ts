/**
 * How deep a JSON text nests, found by one linear scan of the raw text BEFORE JSON.parse: parsing 400,000 nested
 * brackets costs a second of CPU only to refuse them afterwards. The scan counts `[`/`{` outside strings (it does not
 * validate: JSON.parse still decides whether the text is JSON), and remembers the raw text of a top-level `"id"`
 * member's value, so a refusal can still be answered with the message's id.
 */
export interface JsonDepthScan {
  /** True when some container nests deeper than the limit (the root container is level 1). */
  tooDeep: boolean;
  /** The raw text of the top-level object's `"id"` value when it is a scalar (`1`, `"a"`, `null`), else undefined. */
  idText: string | undefined;
}

const WS = new Set([0x20, 0x09, 0x0a, 0x0d]);

export const scanJsonDepth = (text: string, maxDepth: number): JsonDepthScan => {
  let depth = 0;
  let tooDeep = false;
  let idText: string | undefined;
  let lastString: string | undefined; // the last string closed at depth 1 (a key when ':' follows)
  let idValueStart = -1;
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      // A string: skip to its closing quote.
      const start = i + 1;
      i++;
      while (i < n) {
        const d = text.charCodeAt(i);
        if (d === 0x5c) i += 2;
        else if (d === 0x22) break;
        else i++;
      }
      if (depth === 1) lastString = i - start <= 4 ? text.slice(start, i) : '';
      continue;
    }
    if (c === 0x7b || c === 0x5b) {
      depth++;
      if (depth > maxDepth) tooDeep = true;
    } else if (c === 0x7d || c === 0x5d) {
      if (depth === 1 && idValueStart >= 0) {
        idText ??= text.slice(idValueStart, i).trim();
        idValueStart = -1;
      }
      depth--;
    } else if (depth === 1) {
      if (c === 0x3a) {
        if (lastString === 'id' && idText === undefined) idValueStart = i + 1;
        lastString = undefined;
      } else if (c === 0x2c && idValueStart >= 0) {
        idText = text.slice(idValueStart, i).trim();
        idValueStart = -1;
      } else if (!WS.has(c)) lastString = undefined;
    }
  }
  return { tooDeep, idText };
};

/**
 * Whether a parsed value nests deeper than `maxDepth` (a scalar is level 0, the root container level 1), found without
 * recursion: the question is asked of values too deep for a recursive walk. Stops at the first container past the limit.
 */
export const nestsDeeperThan = (value: unknown, maxDepth: number): boolean => {
  const stack: [unknown, number][] = [[value, 1]];
  // YAML aliases may share a node: walked again only when reached deeper than before (the yaml parser bounds aliases).
  const deepest = new Map<object, number>();
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!;
    if (typeof v !== 'object' || v === null || (deepest.get(v) ?? 0) >= depth) continue;
    if (depth > maxDepth) return true;
    deepest.set(v, depth);
    for (const child of Array.isArray(v) ? v : Object.values(v)) if (typeof child === 'object' && child !== null) stack.push([child, depth + 1]);
  }
  return false;
};

/**
 * Whether a YAML text's block structure may nest deeper than `maxDepth`, estimated from its lines without parsing: the
 * chain of ever deeper indentations a line sits in, plus the compact `- ` / `? ` entries it opens (`- - - x` is three
 * levels on one line). An upper bound for well-formed YAML (a block scalar's lines count as their indentation says).
 * Asked before the `yaml` parser, which recurses per level: past ~900 levels it overflows the stack, and once there a
 * RegExp compiled near the stack's end took the process down with a fatal out-of-memory (CI, once).
 */
export const yamlBlockDepthExceeds = (text: string, maxDepth: number): boolean => {
  const indents: number[] = [];
  let start = 0;
  while (start <= text.length) {
    let end = text.indexOf('\n', start);
    if (end < 0) end = text.length;
    let i = start;
    while (i < end && (text.charCodeAt(i) === 0x20 || text.charCodeAt(i) === 0x09)) i++;
    const c = text.charCodeAt(i);
    if (i < end && c !== 0x23 && c !== 0x0d) {
      const width = i - start;
      while (indents.length > 0 && indents[indents.length - 1]! >= width) indents.pop();
      indents.push(width);
      let compact = 0;
      while (i + 1 < end && (text[i] === '-' || text[i] === '?') && (text[i + 1] === ' ' || text[i + 1] === '\t')) {
        compact++;
        i += 2;
        while (i < end && text.charCodeAt(i) === 0x20) i++;
      }
      if (indents.length + compact > maxDepth) return true;
    }
    start = end + 1;
  }
  return false;
};
