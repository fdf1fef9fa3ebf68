/**
 * A call's `argsHash`: the same value as domain/hash.ts's `canonicalHash` (sha256 hex of the JCS text), hashed with
 * Node's native sha256. The pure core keeps its portable hash; the call path, which hashes every call's arguments,
 * takes the one that costs less (test/unit/mcp-call-steps.test.ts holds the two equal).
 */
import { createHash } from 'node:crypto';
import { canonicalJson } from '#domain/hash';

export const argsHashOf = (args: unknown): string => createHash('sha256').update(canonicalJson(args)).digest('hex');
