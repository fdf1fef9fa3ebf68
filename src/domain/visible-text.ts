/**
 * Text an outsider wrote (an upstream's descriptions, tool names, refusal messages), made safe to show a person: every
 * character a terminal acts on or a reader cannot see is written as `\u{XXXX}` instead. Control characters (C0 but
 * newline and tab, DEL, C1: ESC sequences clear a screen or hide the lines after them), format characters (zero-width
 * ones, bidirectional overrides, the tag characters that spell out text a model reads and a person does not see:
 * "ASCII smuggling"), variation selectors (which carry bytes the same way) and the line and paragraph separators.
 * A drift whose only change is such characters then shows as one.
 */
const HIDDEN = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\u{FE00}-\u{FE0F}\u{E0100}-\u{E01EF}]/gu;

export const visible = (s: string): string =>
  s.replace(HIDDEN, (ch) => (ch === '\n' || ch === '\t' ? ch : `\\u{${(ch.codePointAt(0) ?? 0).toString(16).toUpperCase()}}`));
