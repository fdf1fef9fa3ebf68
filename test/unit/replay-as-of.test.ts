/** `estate replay --at`: what is a time, what is a position, and what is a usage error (never a silent other date). */
import { describe, expect, it } from 'vitest';
import { parseAsOf } from '#app/replay';

describe('parseAsOf', () => {
  it.each([
    ['2026-02-28', '2026-02-28T00:00:00.000Z'],
    ['2028-02-29', '2028-02-29T00:00:00.000Z'],
    ['2026-12-07T05:30:00Z', '2026-12-07T05:30:00.000Z'],
    ['2026-12-07T05:30:00+02:00', '2026-12-07T03:30:00.000Z'],
  ])('%s is the time %s', (text, iso) => {
    expect(parseAsOf(text)).toEqual({ time: iso });
  });

  // A probe found 2027-02-30 taken as 2 March (Date.parse rolls it over) while 2026-12-32 was refused.
  it.each(['2027-02-30', '2026-02-29', '2026-04-31', '2026-12-32', '2026-13-01', '2026-00-10', '2026-12-07T25:00:00Z'])('%s is a usage error', (text) => {
    expect(() => parseAsOf(text)).toThrow(expect.objectContaining({ kind: 'usage', code: 'bad-time' }));
  });

  it.each(['42', '12:3'])('%s is a position', (text) => {
    expect(parseAsOf(text)).toEqual({ position: text });
  });
});
