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

const messages = (s: HttpServer): string[] => s.logs.seen.map((l) => String(l.msg ?? ''));
const line = (s: HttpServer, msg: string): Record<string, unknown> | undefined => s.logs.seen.find((l) => l.msg === msg);

describe('catalogue snapshots across restarts', () => {
  it('a clean stop writes one; the next start restores it and reads only the events after it', async () => {
    t = makeTempStore('estate-snap-');
    for (const name of ['test.one', 'test.two', 'test.three']) await publish(t, name);

    server = await startHttpServer(['--store', t.store]);
    expect(messages(server)).toContain('no catalogue snapshot: replaying the log from the first event');
    expect(server.ready).toMatchObject({ tools: 3 });
    expect(await server.stop()).toBe(0);
    expect(line(server, 'catalogue snapshot written')).toMatchObject({ events: 3, tools: 3 });

    await publish(t, 'test.four');
    server = await startHttpServer(['--store', t.store]);
    expect(line(server, 'catalogue restored from its snapshot; reading the events after it')).toMatchObject({ events: 3, tools: 3 });
    expect(server.ready).toMatchObject({ tools: 4 });
    const listed = await runCli(['list', '--json', '--store', t.store]);
    expect(JSON.parse(listed.stdout).tools.map((x: { name: string }) => x.name)).toEqual(['test.four', 'test.one', 'test.three', 'test.two']);
    expect(await server.stop()).toBe(0);
    expect(line(server, 'catalogue snapshot written')).toMatchObject({ events: 4, tools: 4 });
  }, 120_000);

  it('a server signalled the moment it says it is ready stops cleanly, and writes its snapshot', async () => {
    // A process manager may send SIGTERM as soon as it reads the ready line: the handler is in place before it.
    t = makeTempStore('estate-snap-ready-');
    await publish(t, 'test.one');
    server = await startHttpServer(['--store', t.store]);
    const code = await server.stop();
    expect([code, server.child.signalCode]).toEqual([0, null]);
    expect(messages(server)).toContain('stopping');
    expect(line(server, 'catalogue snapshot written')).toMatchObject({ events: 1, tools: 1 });
  }, 120_000);

  it('with ESTATE_SNAPSHOTS=off, neither reads nor writes one', async () => {
    t = makeTempStore('estate-snap-off-');
    await publish(t, 'test.one');
    const env = { ESTATE_SNAPSHOTS: 'off' };
    server = await startHttpServer(['--store', t.store], { env });
    expect(await server.stop()).toBe(0);
    expect(messages(server).filter((m) => m.includes('snapshot'))).toEqual([]);
    server = await startHttpServer(['--store', t.store]);
    expect(messages(server)).toContain('no catalogue snapshot: replaying the log from the first event');
  }, 120_000);
});
