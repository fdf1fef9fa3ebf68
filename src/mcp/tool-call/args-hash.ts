/**
 * A call's `argsHash`: domain/hash.ts's `canonicalHash` of its arguments, hashed with Node's native sha256
 * (src/app/native-hash.ts): the call path hashes every call's arguments.
 */
import { canonicalHashNative } from '#app/native-hash';

export const argsHashOf = (args: unknown): string => canonicalHashNative(args);
