/**
 * Typed, coded errors for broken rules. The CLI maps `kind` to exit codes; the MCP edge maps them to JSON-RPC in one
 * table. A message is always one line: it names the rule and the reasons.
 */
import type { Reason } from './types.ts';

export type DomainErrorKind =
  | 'invalid-definition' // the file parses but breaks a definition rule (name, semver, schema, ...)
  | 'guard' // the publish guard refuses (immutability, monotonicity, bump)
  | 'lifecycle' // deprecate/retire refused
  | 'conflict' // optimistic concurrency lost too many times
  | 'not-found' // unknown tool, version or run
  | 'usage'; // bad input to a command (unreadable file, bad flag)

export class DomainError extends Error {
  readonly kind: DomainErrorKind;
  /** A stable machine code: `invalid-name`, `remote-ref`, `bump-too-small`, `already-retired`, ... */
  readonly code: string;
  readonly reasons: Reason[] | undefined;

  constructor(kind: DomainErrorKind, code: string, message: string, reasons?: Reason[]) {
    super(message);
    this.name = 'DomainError';
    this.kind = kind;
    this.code = code;
    this.reasons = reasons;
  }
}

export const invalidDefinition = (code: string, message: string): DomainError =>
  new DomainError('invalid-definition', code, message);
