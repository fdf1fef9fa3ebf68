import { ConcurrencyError, type ExpectedRevision } from '#app/ports';

/**
 * The one place the expected-revision symbols meet a stream's actual revision (-1 = no stream), so every adapter that
 * checks in its own code (memory, SQLite) agrees on what `no_stream`, `exists`, `any` and a number mean.
 */
export function checkExpectedRevision(streamId: string, expected: ExpectedRevision, actual: number): void {
  const holds =
    expected === 'any' ||
    (expected === 'no_stream' && actual === -1) ||
    (expected === 'exists' && actual >= 0) ||
    expected === actual;
  if (!holds) throw new ConcurrencyError(streamId, expected, actual);
}
