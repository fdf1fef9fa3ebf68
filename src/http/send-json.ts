/**
 * Every JSON answer Estate's HTTP routes send: the length known up front, so no answer is ever chunked; a large one its
 * client does not take is dropped with its connection after STALL_MS (./unsent.ts).
 */
import type { ServerResponse } from 'node:http';
import { dropWhenNotTaken, type UntakenOwners } from './unsent.ts';

/** Answers of at least this many bytes are dropped when their client does not take them. */
const WATCHED_ANSWER_BYTES = 64 * 1024;

export const sendJson = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void =>
  sendJsonText(res, status, JSON.stringify(body), headers);

/**
 * The same, for a body already serialized: text, or pieces of bytes (a cached page's are written as they are, in one
 * gathered write). `owners`: whom a large answer left untaken is charged to (./unsent.ts).
 */
export const sendJsonText = (res: ServerResponse, status: number, body: string | Buffer[], headers: Record<string, string> = {}, owners?: UntakenOwners): void => {
  const length = typeof body === 'string' ? Buffer.byteLength(body) : body.reduce((n, b) => n + b.length, 0);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': String(length), ...headers });
  if (typeof body === 'string') res.end(body);
  else {
    res.cork();
    for (const piece of body) res.write(piece);
    res.end();
  }
  // A small answer a client leaves untaken holds little (and calls per subject are bounded): only a large one is watched.
  if (length >= WATCHED_ANSWER_BYTES) dropWhenNotTaken(res, undefined, owners);
};
