/** Every JSON answer Estate's HTTP routes send: the length known up front, so no answer is ever chunked. */
import type { ServerResponse } from 'node:http';

export const sendJson = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void => {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(text)), ...headers });
  res.end(text);
};
