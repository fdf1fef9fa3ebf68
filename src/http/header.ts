/** One request header as a string: Node gives an array for a repeated header; the first one counts. */
import type { IncomingMessage } from 'node:http';

export const header = (req: IncomingMessage, name: string): string | undefined => {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
};
