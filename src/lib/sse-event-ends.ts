/**
 * Where the events of a Server-Sent Events stream end, read chunk by chunk as its bytes come (WHATWG HTML, "Parsing an
 * event stream"): a line ends at CRLF, LF or CR, whichever comes, and an empty line ends an event. Any mix of them is
 * an event end: `\n\n`, `\r\r`, `\r\n\r\n`, and `\r\n\n`, `\n\r\n`, `\n\r`, `\r\n\r`, `\r\r\n` too (what the SDK's
 * parser accepts). Pure, nothing done at import: the library's `boundedFetch` and the upstream fetch both count an
 * event's bytes with it, and the upstream fetch's sniffer reads a POST's events with it. A CR that ends a stream ends
 * no event, as in the SDK's parser (it has no flush).
 *
 * An event ends just after its empty line's line end: after the LF of a CRLF. A CR that is the last byte of a chunk may
 * be the first half of a CRLF split between two chunks (one line end), so the event it ends is reported ended in the
 * next chunk: at 1 if that starts with the LF, else at 0 (the SDK's parser, too, waits for the byte after such a CR).
 * So the ends found do not depend on where the stream is cut into chunks. A leading byte order mark is not skipped:
 * it counts as bytes of the first line (at worst the first event is seen three bytes larger, or a lone empty first
 * line after it is not seen as an event end).
 *
 * Searched with `indexOf` for LF and CR (no loop per byte): the upstream fetch reads every byte of every event stream.
 */

const LF = 0x0a;
const CR = 0x0d;

export class SseEventEnds {
  /** Whether the next byte starts a line (a line end there is an empty line); whether the last byte was a CR. */
  private lineStart: boolean;
  private afterCR = false;
  /** The last byte was a CR that ended an event: the end is reported with the next chunk (after its LF, if one). */
  private endAtCR = false;

  /**
   * `lineStart`: whether the stream is read from a line's start (its beginning); false to read on from an unknown place
   * (a line end first seen then is not taken for an empty line).
   */
  constructor(lineStart = true) {
    this.lineStart = lineStart;
  }

  /**
   * Reads `chunk`, the next bytes of the stream: calls `onEnd` with each offset in it just after an event end, in
   * order (0 for an event ended by a CR that was the last byte of the chunk before); returns the last such offset, -1
   * if no event ended in it.
   */
  scan(chunk: Uint8Array, onEnd?: (at: number) => void): number {
    const n = chunk.length;
    if (n === 0) return -1;
    let last = -1;
    /** Where the bytes not looked at yet begin. */
    let i = 0;
    let lineStart = this.lineStart;
    let afterCR = this.afterCR;
    if (this.endAtCR) {
      this.endAtCR = false;
      afterCR = false;
      i = last = chunk[0] === LF ? 1 : 0;
      onEnd?.(last);
    }
    let nextLF = chunk.indexOf(LF, i);
    let nextCR = chunk.indexOf(CR, i);
    for (;;) {
      const j = nextLF < 0 ? nextCR : nextCR < 0 ? nextLF : nextLF < nextCR ? nextLF : nextCR;
      if (j < 0) {
        if (i < n) lineStart = afterCR = false;
        break;
      }
      if (j > i) lineStart = afterCR = false;
      if (chunk[j] === LF) {
        nextLF = chunk.indexOf(LF, j + 1);
        i = j + 1;
        if (afterCR) afterCR = false; // the LF of a CRLF: the line ended at its CR
        else if (lineStart) {
          last = i;
          onEnd?.(i);
        } else lineStart = true;
        continue;
      }
      nextCR = chunk.indexOf(CR, j + 1);
      i = j + 1;
      if (!lineStart) {
        lineStart = afterCR = true;
      } else if (i === n) {
        // An empty line's CR, the chunk's last byte: whether an LF follows is known with the next chunk.
        this.endAtCR = afterCR = true;
      } else {
        if (chunk[i] === LF) nextLF = chunk.indexOf(LF, ++i);
        afterCR = false;
        last = i;
        onEnd?.(i);
      }
    }
    this.lineStart = lineStart;
    this.afterCR = afterCR;
    return last;
  }
}
