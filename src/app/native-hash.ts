/**
 * domain/hash.ts's `canonicalHash` (sha256 hex of the RFC 8785 text) with Node's native sha256. The pure core keeps its
 * portable hash; the paths that hash on every call or every publish take this one, which costs less (a ~600-byte
 * definition: tens of µs in the portable sha256, a few here). Held equal to the portable one by property
 * (test/unit/mcp-call-steps.test.ts) and to hashes computed outside Estate (test/unit/known-answer-hashes.test.ts).
 */
import * as crypto from 'node:crypto';
import { canonicalJson } from '#domain/hash';

// One-shot `crypto.hash` (Node 20.12+) makes no Hash object; older Nodes take the stream form.
const oneShot = (crypto as { hash?: (algorithm: string, data: string, encoding: 'hex') => string }).hash;
const sha256Hex = oneShot ? (text: string): string => oneShot('sha256', text, 'hex') : (text: string): string => crypto.createHash('sha256').update(text).digest('hex');

export const canonicalHashNative = (value: unknown): string => sha256Hex(canonicalJson(value));
