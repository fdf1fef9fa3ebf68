/**
 * How a zod failure reads in one line, the same at every boundary (configuration, events read back, change messages,
 * tool definitions): `path.to.field: message`, `(root)` when the value itself is wrong.
 */
import type { z } from 'zod';

export const issuePath = (path: readonly PropertyKey[]): string => (path.length ? path.map(String).join('.') : '(root)');

export const firstIssue = (e: z.ZodError): string => {
  const i = e.issues[0];
  return i ? `${issuePath(i.path)}: ${i.message}` : 'invalid';
};
