/** sha256 hex of the RFC 8785 (JCS) canonical JSON of a value: the hash every event and call record uses. */
import canonicalizeImport from 'canonicalize';
import { sha256 } from '@noble/hashes/sha256';
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils';

type Canonicalize = (value: unknown) => string | undefined;
// A CommonJS module whose typings declare an ES default export: under NodeNext the two views differ, so accept either.
const canonicalize: Canonicalize =
  typeof canonicalizeImport === 'function' ? (canonicalizeImport as Canonicalize) : (canonicalizeImport as { default: Canonicalize }).default;

export const canonicalJson = (value: unknown): string => {
  const text = canonicalize(value);
  if (text === undefined) throw new TypeError('value has no canonical JSON form');
  return text;
};

export const sha256Hex = (text: string): string => bytesToHex(sha256(utf8ToBytes(text)));

export const canonicalHash = (value: unknown): string => sha256Hex(canonicalJson(value));
