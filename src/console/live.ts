/**
 * The console's change stream, `GET /console/events` (Server-Sent Events): each update of the catalogue reader (the
 * same `--bus` path that keeps the MCP server current) becomes `event: catalogue` with the tools changed and the
 * position. Bounded in number; a signed-in viewer's stream ends when the token expires (`event: expired`), so a
 * token's life is never extended by a connection opened while it was valid.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { CatalogueReader } from '#app/catalogue-reader';
import { overUnsentBound } from '#http/unsent';

export interface LiveStreams {
  /**
   * Open a stream for a viewer whose credential expires at `expiresAt` (seconds since the epoch), if ever; `viewer`
   * keys who it is (a token's subject within its tenant, or the local operator) for the bound on one viewer's streams.
   */
  open(req: IncomingMessage, res: ServerResponse, expiresAt?: number, viewer?: string): void;
  close(): void;
}

const MAX_TIMER_MS = 2 ** 31 - 1;
/**
 * The streams one viewer may hold, of `maxStreams`: a token with nothing but a publishing scope for a namespace that
 * did not exist opened all 256, and every other viewer got 503 and no live updates.
 */
export const streamsPerViewer = (maxStreams: number): number => Math.min(maxStreams, Math.max(4, Math.floor(maxStreams / 8)));

export const createLiveStreams = (reader: CatalogueReader, maxStreams = 256): LiveStreams => {
  const streams = new Map<ServerResponse, NodeJS.Timeout | undefined>();
  const perViewer = new Map<string, number>();
  const perViewerMax = streamsPerViewer(maxStreams);
  const end = (res: ServerResponse): void => {
    clearTimeout(streams.get(res));
    streams.delete(res);
    res.end();
  };
  /**
   * Write to every stream; one whose viewer has left more than MAX_UNSENT_BYTES unread (an update carries up to 50 tool
   * names; a bulk publish makes many) is dropped, not written to. The console's script connects again when its stream
   * ends (1 s, doubling to 30 s).
   */
  const send = (chunk: string): void => {
    for (const res of [...streams.keys()]) {
      if (!overUnsentBound(res)) {
        res.write(chunk);
        continue;
      }
      clearTimeout(streams.get(res));
      streams.delete(res);
      res.destroy();
    }
  };
  const unsubscribe = reader.onUpdate((u) => {
    const data = JSON.stringify({ tools: [...new Set(u.tools)].slice(0, 50), position: u.position });
    send(`event: catalogue\ndata: ${data}\n\n`);
  });
  const keepAlive = setInterval(() => send(': keep-alive\n\n'), 15_000);
  keepAlive.unref();

  return {
    open(req, res, expiresAt, viewer = 'local') {
      if (streams.size >= maxStreams) {
        res.writeHead(503, { 'retry-after': '30', 'content-type': 'text/plain', 'cache-control': 'no-store' }).end('Service Unavailable: too many open console change streams');
        return;
      }
      const held = perViewer.get(viewer) ?? 0;
      if (held >= perViewerMax) {
        res
          .writeHead(429, { 'retry-after': '30', 'content-type': 'text/plain', 'cache-control': 'no-store' })
          .end(`Too Many Requests: this viewer already has ${held} console change streams open (at most ${perViewerMax}); close a console tab`);
        return;
      }
      perViewer.set(viewer, held + 1);
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store', connection: 'keep-alive', 'x-content-type-options': 'nosniff' });
      res.write(`event: hello\ndata: ${JSON.stringify({ position: reader.position })}\n\n`);
      let timer: NodeJS.Timeout | undefined;
      if (expiresAt !== undefined) {
        timer = setTimeout(() => {
          res.write('event: expired\ndata: {"reason":"the token is expired"}\n\n');
          end(res);
        }, Math.min(MAX_TIMER_MS, Math.max(0, expiresAt * 1000 - Date.now())));
        timer.unref();
      }
      streams.set(res, timer);
      req.on('close', () => {
        clearTimeout(streams.get(res));
        streams.delete(res);
        const left = (perViewer.get(viewer) ?? 1) - 1;
        if (left > 0) perViewer.set(viewer, left);
        else perViewer.delete(viewer);
      });
    },
    close() {
      unsubscribe();
      clearInterval(keepAlive);
      for (const res of [...streams.keys()]) end(res);
    },
  };
};
