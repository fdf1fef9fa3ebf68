/**
 * A call's `argsHash`: the same value as domain/hash.ts's `canonicalHash` (sha256 hex of the JCS text), hashed with
 * Node's native sha256. The pure core keeps its portable hash; the call path, which hashes every call's arguments,
 * takes the one that costs less (test/unit/mcp-call-steps.test.ts holds the two equal).
 */
import * as crypto from 'node:crypto';
import { canonicalJson } from '#domain/hash';

// One-shot `crypto.hash` (Node 20.12+) makes no Hash object; older Nodes take the stream form.
const oneShot = (crypto as { hash?: (algorithm: string, data: string, encoding: 'hex') => string }).hash;
const sha256 = oneShot ? (text: string): string => oneShot('sha256', text, 'hex') : (text: string): string => crypto.createHash('sha256').update(text).digest('hex');

export const argsHashOf = (args: unknown): string => sha256(canonicalJson(args));
