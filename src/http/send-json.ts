/** Every JSON answer Estate's HTTP routes send: the length known up front, so no answer is ever chunked. */
import type { ServerResponse } from 'node:http';

export const sendJson = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void =>
  sendJsonText(res, status, JSON.stringify(body), headers);

/** The same, for a body already serialized (a cached page: its bytes are written as they are). */
export const sendJsonText = (res: ServerResponse, status: number, text: string, headers: Record<string, string> = {}): void => {
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(text)), ...headers });
  res.end(text);
};
