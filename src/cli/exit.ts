/** Exit codes (SPEC §5) and the one mapping from errors to them. */
import { DomainError } from '#domain/errors';

export const EXIT = { ok: 0, other: 1, usage: 2, refused: 3, notFound: 4 } as const;

export const exitCodeOf = (e: unknown): number => {
  if (!(e instanceof DomainError)) return EXIT.other;
  switch (e.kind) {
    case 'usage':
      return EXIT.usage;
    case 'not-found':
      return EXIT.notFound;
    case 'invalid-definition':
    case 'guard':
    case 'lifecycle':
    case 'conflict':
      return EXIT.refused;
  }
};
