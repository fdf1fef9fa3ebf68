/**
 * Text an outsider wrote (an upstream's descriptions, tool names, refusal messages), made safe to show a person: every
 * character a terminal acts on or a reader cannot see is written as `\u{XXXX}` instead. Control characters (C0 but
 * newline and tab, DEL, C1: ESC sequences clear a screen or hide the lines after them), format characters (zero-width
 * ones, bidirectional overrides, the tag characters that spell out text a model reads and a person does not see:
 * "ASCII smuggling"), variation selectors (which carry bytes the same way) and the line and paragraph separators.
 * A drift whose only change is such characters then shows as one.
 */
const HIDDEN = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\u{FE00}-\u{FE0F}\u{E0100}-\u{E01EF}]/gu;

/** The pattern's source, for a script that must write text out the same way (the console's, in the browser). */
export const HIDDEN_SOURCE = HIDDEN.source;

export const visible = (s: string): string =>
  s.replace(HIDDEN, (ch) => (ch === '\n' || ch === '\t' ? ch : `\\u{${(ch.codePointAt(0) ?? 0).toString(16).toUpperCase()}}`));

/** A UTF-16 code unit as a JSON escape. */
const unit = (u: number): string => `\\u${u.toString(16).padStart(4, '0')}`;

/**
 * JSON text with every hidden character of `visible()` written as a `\uXXXX` escape (a pair of them past the BMP):
 * the same value to a parser, and nothing a terminal acts on or a reader cannot see when a person reads it.
 * `JSON.stringify` escapes only U+0000–U+001F: C1 controls (U+009B opens an escape sequence on many terminals),
 * bidirectional overrides and tag characters reached the screen raw through `estate show` and `estate watch`. Newlines
 * and tabs outside strings are the layout's (inside strings JSON has already escaped them) and are kept.
 */
export const jsonVisible = (json: string): string =>
  json.replace(HIDDEN, (ch) => {
    if (ch === '\n' || ch === '\t') return ch;
    let out = '';
    for (let i = 0; i < ch.length; i++) out += unit(ch.charCodeAt(i));
    return out;
  });
