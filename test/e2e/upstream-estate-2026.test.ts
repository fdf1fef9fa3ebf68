/**
 * The newest revision both sides speak: Estate fronting another Estate (which serves 2026-07-28 and the 2025 family on
 * one endpoint) negotiates 2026-07-28 as a client, mirrors its caller-visible tools, and proxies calls made by SDK v2
 * clients of either revision family. The upstream's own principal decides what it lists: Estate sees only what its
 * configured identity may see, never more, whoever calls. A stateless upstream's tool list changes are heard on a
 * `subscriptions/listen` stream (there is no session to send list_changed on): with interval sync off, a change
 * published on the upstream shows up as drift at the front.
 */
import { Client, StreamableHTTPClientTransport, type CallToolResult } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO_DEFINITIONS } from '#handlers/demo-estate';
import { makeTempStore, runCli, startHttpServer, type HttpServer, type TempStore } from './helpers.ts';

const textOf = (r: CallToolResult): string => r.content.map((c) => (c.type === 'text' ? c.text : `<${c.type}>`)).join('\n');

describe('Estate in front of a 2026-07-28 upstream (another Estate)', () => {
  let upstreamStore: TempStore;
  let frontStore: TempStore;
  let upstream: HttpServer;
  let front: HttpServer;

  beforeAll(async () => {
    upstreamStore = makeTempStore('estate-up26-');
    frontStore = makeTempStore('estate-front26-');
    upstream = await startHttpServer(['--store', upstreamStore.store, '--demo', '--tenant', 'acme', '--scopes', 'payments.read', '--clearance', 'confidential']);
    const cli = async (args: string[]) => {
      const r = await runCli([...args, '--store', frontStore.store, '--json']);
      expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(0);
      return JSON.parse(r.stdout) as Record<string, unknown>;
    };
    await cli(['upstream', 'add', 'pay', '--url', String(upstream.url), '--scopes', 'pay.use', '--clearance', 'internal']);
    const sync = await cli(['upstream', 'sync', 'pay']);
    expect(sync.protocolVersion).toBe('2026-07-28');
    expect((sync.drift as { tool: string }[]).map((d) => d.tool)).toContain('pay.payments_lookup');
    await cli(['upstream', 'approve', 'pay', '--all']);
    front = await startHttpServer(['--store', frontStore.store, '--tenant', 'acme', '--scopes', 'pay.use', '--clearance', 'internal', '--upstream-sync-interval', '0']);
  }, 120_000);

  afterAll(async () => {
    await front?.stop();
    await upstream?.stop();
    upstreamStore?.cleanup();
    frontStore?.cleanup();
  });

  for (const revision of ['2025-11-25', '2026-07-28'] as const) {
    it(`proxies a call made at ${revision}`, async () => {
      const client = new Client({ name: `front-${revision}`, version: '1.0.0' }, revision === '2026-07-28' ? { versionNegotiation: { mode: { pin: '2026-07-28' } } } : {});
      await client.connect(new StreamableHTTPClientTransport(new URL(String(front.url))));
      try {
        const ok = await client.callTool({ name: 'pay.payments_lookup', arguments: { reference: 'PMT-771' } });
        expect(ok.isError ?? false).toBe(false);
        expect(textOf(ok)).toContain('PMT-771');
        const missing = await client.callTool({ name: 'pay.payments_lookup', arguments: { reference: 'PMT-123' } });
        expect([missing.isError, textOf(missing)]).toEqual([true, 'upstream pay: PMT-123: no such payment']);
      } finally {
        await client.close();
      }
    });
  }

  it('hears a change on the upstream through a subscriptions/listen stream (no interval sync) and records it as drift', async () => {
    const listening = await front.logs.next((l) => l.msg === 'listening for upstream tool list changes', 30_000, 'listen log line');
    expect(listening.upstream).toBe('pay');
    const lookup = DEMO_DEFINITIONS.filter((d) => d.name === 'payments.lookup').at(-1) as Record<string, unknown>;
    const [major, minor, patch] = String(lookup.version).split('.').map(Number);
    const changed = { ...lookup, version: `${major}.${minor}.${(patch ?? 0) + 1}`, description: `${String(lookup.description)} Now with more words.` };
    const published = await runCli(['publish', upstreamStore.file('lookup-next.json', changed), '--store', upstreamStore.store, '--json']);
    expect(published.code, published.stderr).toBe(0);
    const end = Date.now() + 30_000;
    for (;;) {
      const r = await runCli(['upstream', 'drift', 'pay', '--store', frontStore.store, '--json']);
      const pending = (JSON.parse(r.stdout) as { pending: { tool: string; reasons: { rule: string }[] }[] }).pending;
      const hit = pending.find((p) => p.tool === 'pay.payments_lookup');
      if (hit) {
        expect(hit.reasons.map((x) => x.rule)).toEqual(['description-changed']);
        break;
      }
      if (Date.now() > end) throw new Error('the front never recorded the upstream change');
      await new Promise((r) => setTimeout(r, 300));
    }
  }, 90_000);
});
