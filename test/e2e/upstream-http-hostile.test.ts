/**
 * A hostile Streamable HTTP upstream (test/fixtures/upstream/fixture-http.mjs with FIXTURE_HOSTILE and friends), and
 * what it must not be able to do to Estate: hold a connect open for ever (an unanswered `notifications/initialized`),
 * hold a listing open for hours (a page just inside each page's timeout), keep the connections of calls given up
 * (requests it never answers), or make the SDK's reading of a malformed result hold the serving thread (300,000 content
 * blocks of an unknown type). And Estate ends the HTTP sessions it leaves.
 */
import { Client, ProtocolError, StreamableHTTPClientTransport, type CallToolResult } from '@modelcontextprotocol/client';
import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openUpstream } from '#upstream/connection';
import { poolFor } from '#upstream/http-fetch';
import { startFixtureHttp } from '../fixtures/upstream/fixture-http.ts';
import { eventually, makeTempStore, runCli, startHttpServer, type HttpServer, type TempStore } from './helpers.ts';

const children: ChildProcess[] = [];
const fixture = async (env: NodeJS.ProcessEnv): Promise<string> => {
  const f = await startFixtureHttp(1, env);
  children.push(f.child);
  return f.url;
};
afterAll(() => {
  for (const c of children) c.kill();
});

const target = (url: string) => ({ transport: 'http' as const, url, headers: {} });
const textOf = (r: CallToolResult): string => r.content.map((c) => (c.type === 'text' ? c.text : `<${c.type}>`)).join('\n');

describe('an HTTP upstream that does not answer, or answers what cannot be read', () => {
  it('a handshake whose notifications/initialized is never answered fails at the connect deadline', async () => {
    const url = await fixture({ FIXTURE_HANG_INITIALIZED: '1' });
    await expect(openUpstream('hx', target(url), {}, {}, 500)).rejects.toThrow(/connecting took longer than 500 ms \(the handshake was not answered\)/);
  });

  it('a listing whose pages keep coming, each inside its own timeout, ends at the listing\'s deadline', async () => {
    const url = await fixture({ FIXTURE_LIST_PAGES: '1000', FIXTURE_LIST_PAGE_MS: '100', FIXTURE_LIST_MIB: '0' });
    const session = await openUpstream('hx', target(url), {}, {}, 5_000);
    try {
      await expect(session.listTools(undefined, 1_000)).rejects.toThrow(/tools\/list did not end within 1000 ms \(\d+ tools read\): nothing of it is recorded/);
    } finally {
      await session.close();
    }
  });

  it('a result of content blocks it cannot read is refused, briefly, before the SDK reads it', async () => {
    const url = await fixture({ FIXTURE_HOSTILE: '1' });
    const session = await openUpstream('hx', target(url), {}, {}, 5_000);
    try {
      const many = session.client.callTool({ name: 'weird', arguments: { n: 300_000 } });
      await expect(many).rejects.toBeInstanceOf(ProtocolError);
      await expect(many).rejects.toThrow(/Invalid result: its content has 300000 blocks, more than the 10000 a result may hold/);
      await expect(session.client.callTool({ name: 'weird', arguments: { n: 2 } })).rejects.toThrow(/Invalid result: content block #1 is of type "weird", not one of text, image, audio, resource_link, resource/);
    } finally {
      await session.close();
    }
  });

  it('ends the session with DELETE when it closes', async () => {
    const url = await fixture({ FIXTURE_HOSTILE: '1' });
    const first = await openUpstream('hx', target(url), {}, {}, 5_000);
    await first.close();
    const second = await openUpstream('hx', target(url), {}, {}, 5_000);
    try {
      expect(textOf((await second.client.callTool({ name: 'deletes', arguments: {} })) as CallToolResult)).toBe('1');
    } finally {
      await second.close();
    }
  });

  it('keeps each upstream\'s connections apart: one upstream cannot take another\'s', () => {
    expect(poolFor('one')).toBe(poolFor('one'));
    expect(poolFor('one').http).not.toBe(poolFor('two').http);
  });
});

describe('calls given up on an HTTP upstream that never answers them', () => {
  let store: TempStore;
  let http: HttpServer;
  let client: Client;

  beforeAll(async () => {
    store = makeTempStore('estate-up-hostile-');
    const url = await fixture({ FIXTURE_HOSTILE: '1' });
    const cli = async (args: string[]) => {
      const r = await runCli([...args, '--store', store.store]);
      expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(0);
    };
    await cli(['upstream', 'add', 'hx', '--url', url, '--scopes', 'hx.use', '--clearance', 'internal']);
    await cli(['upstream', 'sync', 'hx']);
    await cli(['upstream', 'approve', 'hx', '--all']);
    http = await startHttpServer(['--store', store.store, '--tenant', 'acme', '--scopes', 'hx.use', '--clearance', 'internal', '--upstream-sync-interval', '0']);
    client = new Client({ name: 'hostile-e2e', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(http.url)));
  }, 60_000);
  afterAll(async () => {
    await client?.close().catch(() => undefined);
    await http?.stop();
    store?.cleanup();
  });

  const hanging = async (): Promise<number> => Number(textOf((await client.callTool({ name: 'hx.hanging', arguments: {} })) as CallToolResult));

  it('lets go of their requests, and with them their connections, when the caller cancels', async () => {
    const cancel = new AbortController();
    const calls = Array.from({ length: 5 }, () => client.callTool({ name: 'hx.hang', arguments: {} }, { signal: cancel.signal }).catch((e: unknown) => e));
    await eventually('five requests held by the upstream', async () => ((await hanging()) === 5 ? true : undefined));
    cancel.abort();
    await Promise.all(calls);
    // Before, each stayed open on its connection for as long as the upstream liked: 256 took every connection there was.
    await eventually('the upstream sees every request closed', async () => ((await hanging()) === 0 ? true : undefined));
  }, 60_000);
});
