/**
 * Start-up without a full replay, end to end: a server stopped cleanly leaves a catalogue snapshot in its SQLite store,
 * the next server starts from it and reads only what was published in between, and serves the same catalogue a
 * replay would. With ESTATE_SNAPSHOTS=off the server replays from the first event and writes nothing.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { makeTempStore, runCli, startHttpServer, toolDefinition, type HttpServer, type TempStore } from './helpers.ts';

let t: TempStore | undefined;
let server: HttpServer | undefined;
afterEach(async () => {
  await server?.stop();
  server = undefined;
  t?.cleanup();
});

const publish = async (store: TempStore, name: string): Promise<void> => {
  const file = store.file(`${name}.json`, toolDefinition({ name, handler: name }));
  const r = await runCli(['publish', file, '--store', store.store]);
  expect(r.code, r.stderr).toBe(0);
};

/**
 * Stop once the server answers a request: its SIGTERM handler is in place by then. (Signalled in the instant between
 * its ready line and that handler, a process dies of the signal without its clean shutdown.)
 */
const stopServing = async (s: HttpServer): Promise<number | null> => {
  expect((await fetch(s.url.replace(/\/mcp$/, '/healthz'))).status).toBe(200);
  return s.stop();
};

const messages = (s: HttpServer): string[] => s.logs.seen.map((l) => String(l.msg ?? ''));
const line = (s: HttpServer, msg: string): Record<string, unknown> | undefined => s.logs.seen.find((l) => l.msg === msg);

describe('catalogue snapshots across restarts', () => {
  it('a clean stop writes one; the next start restores it and reads only the events after it', async () => {
    t = makeTempStore('estate-snap-');
    for (const name of ['test.one', 'test.two', 'test.three']) await publish(t, name);

    server = await startHttpServer(['--store', t.store]);
    expect(messages(server)).toContain('no catalogue snapshot: replaying the log from the first event');
    expect(server.ready).toMatchObject({ tools: 3 });
    expect(await stopServing(server)).toBe(0);
    expect(line(server, 'catalogue snapshot written')).toMatchObject({ events: 3, tools: 3 });

    await publish(t, 'test.four');
    server = await startHttpServer(['--store', t.store]);
    expect(line(server, 'catalogue restored from its snapshot; reading the events after it')).toMatchObject({ events: 3, tools: 3 });
    expect(server.ready).toMatchObject({ tools: 4 });
    const listed = await runCli(['list', '--json', '--store', t.store]);
    expect(JSON.parse(listed.stdout).tools.map((x: { name: string }) => x.name)).toEqual(['test.four', 'test.one', 'test.three', 'test.two']);
    expect(await stopServing(server)).toBe(0);
    expect(line(server, 'catalogue snapshot written')).toMatchObject({ events: 4, tools: 4 });
  }, 120_000);

  it('with ESTATE_SNAPSHOTS=off, neither reads nor writes one', async () => {
    t = makeTempStore('estate-snap-off-');
    await publish(t, 'test.one');
    const env = { ESTATE_SNAPSHOTS: 'off' };
    server = await startHttpServer(['--store', t.store], { env });
    expect(await stopServing(server)).toBe(0);
    expect(messages(server).filter((m) => m.includes('snapshot'))).toEqual([]);
    server = await startHttpServer(['--store', t.store]);
    expect(messages(server)).toContain('no catalogue snapshot: replaying the log from the first event');
  }, 120_000);
});
