/**
 * The scanner of SSE event ends (src/lib/sse-event-ends.ts) against the spec's own reading of a whole stream: a line
 * ends at CRLF, LF or CR, an empty line ends an event. Whatever the line ends, mixed as they come, and wherever the
 * stream is cut into chunks (a CRLF split between two of them included), the same ends are found.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SseEventEnds } from '#lib/sse-event-ends';

/**
 * The reference: the offsets just after each empty line's line end in the whole stream, its lines split as the spec
 * says. An event ended by a CR that is the stream's last byte is not counted: an LF may still follow it.
 */
const referenceEnds = (s: string): number[] => {
  const ends: number[] = [];
  let lineStart = 0;
  for (const m of s.matchAll(/\r\n|\n|\r/g)) {
    const after = m.index + m[0].length;
    if (m.index === lineStart && !(m[0] === '\r' && after === s.length)) ends.push(after);
    lineStart = after;
  }
  return ends;
};

/**
 * The ends the scanner finds in `s` cut at `cuts`, as offsets in the whole stream; what `scan` returns for each chunk
 * (with a callback and without) checked against them.
 */
const scannedEnds = (s: string, cuts: number[] = []): number[] => {
  const bytes = Buffer.from(s, 'latin1');
  const scanner = new SseEventEnds();
  const bare = new SseEventEnds();
  const ends: number[] = [];
  const at = [0, ...cuts.filter((c) => c > 0 && c < bytes.length).sort((a, b) => a - b), bytes.length];
  for (let k = 0; k + 1 < at.length; k++) {
    const from = at[k]!;
    const inChunk: number[] = [];
    const chunk = bytes.subarray(from, at[k + 1]!);
    const last = scanner.scan(chunk, (end) => inChunk.push(end));
    expect(last).toBe(inChunk.length === 0 ? -1 : inChunk[inChunk.length - 1]);
    expect(bare.scan(chunk)).toBe(last);
    ends.push(...inChunk.map((end) => from + end));
  }
  return ends;
};

const EOLS = ['\n', '\r\n', '\r'] as const;

describe('SseEventEnds', () => {
  it('ends an event at an empty line, whatever the line ends, mixed in every way', () => {
    for (const a of EOLS) {
      for (const b of EOLS) {
        if (a === '\r' && b === '\n') continue; // one CRLF: a line end, no empty line
        // A line, then the empty line: one end, just after the empty line's line end.
        const one = `data: x${a}${b}`;
        expect(scannedEnds(`${one}${one}data: z`), JSON.stringify(a + b)).toEqual([one.length, 2 * one.length]);
      }
    }
    expect(scannedEnds('a\r\n\r\n')).toEqual([5]);
    expect(scannedEnds('a\r\n\nb\n\r\nc\n\rd\r\n\re\r\r\nf\r\rg\n\n')).toEqual([4, 8, 11, 15, 19, 22, 25]);
    // A CRLF is one line end, never an empty line; lines ended each way, no empty line among them, end nothing.
    expect(scannedEnds('a\r\nb\nc\rd\r\ne\r\nf')).toEqual([]);
    // An empty line at the stream's start ends an (empty) event; so does each empty line after an event.
    expect(scannedEnds('\n\r\n\rx\n\n\n')).toEqual([1, 3, 4, 7, 8]);
  });

  it('finds the same ends wherever the stream is cut: once, twice, or into single bytes', () => {
    const s = 'id: 1\r\ndata: a\r\n\r\n: c\n\r\ndata: b\r\r\ndata: c\n\rdata: d\r\n\rdata: e\r\n\ndata: f\r\r\r\n\n';
    const whole = scannedEnds(s);
    expect(whole).toEqual(referenceEnds(s));
    for (let i = 0; i <= s.length; i++) {
      expect(scannedEnds(s, [i]), `cut at ${i}`).toEqual(whole);
      for (let j = i + 1; j <= s.length; j++) expect(scannedEnds(s, [i, j]), `cut at ${i} and ${j}`).toEqual(whole);
    }
    expect(scannedEnds(s, Array.from(s, (_, i) => i))).toEqual(whole);
  });

  it('an event ended by a CR at the end of a chunk is reported in the next: after its LF, or at 0', () => {
    const scanner = new SseEventEnds();
    expect(scanner.scan(Buffer.from('data: x\r\r'))).toBe(-1);
    expect(scanner.scan(Buffer.from(''))).toBe(-1);
    expect(scanner.scan(Buffer.from('\ndata: y\n'))).toBe(1);
    expect(scanner.scan(Buffer.from('\r'))).toBe(-1);
    const ends: number[] = [];
    expect(scanner.scan(Buffer.from('\rdata: z\n\n'), (at) => ends.push(at))).toBe(10);
    expect(ends).toEqual([0, 1, 10]);
  });

  it('read on from an unknown place, a line end first seen is not an empty line', () => {
    expect(new SseEventEnds(false).scan(Buffer.from('\ndata: x\n\n'))).toBe(10);
    expect(new SseEventEnds().scan(Buffer.from('\ndata: x'))).toBe(1);
    expect(new SseEventEnds(false).scan(Buffer.from('\n\n'))).toBe(2);
  });

  it('agrees with the spec reading of the whole stream for any stream, cut anywhere (property)', () => {
    const stream = fc.string({ unit: fc.constantFrom('\r', '\n', 'a', ':'), maxLength: 80 });
    fc.assert(
      fc.property(stream, fc.array(fc.nat({ max: 80 }), { maxLength: 8 }), (s, cuts) => {
        expect(scannedEnds(s, cuts)).toEqual(referenceEnds(s));
      }),
      { numRuns: 2000 },
    );
  });
});
