// An agent host's side: list and call tools through `estate/client`'s cache over the official MCP SDK v2 Client.
//
//   node --import tsx examples/agent.ts http://127.0.0.1:8080/mcp [2026-07-28|2025-11-25]
//
// The loop lists before every step, as an agent does; the cache answers from memory until the list is invalid (ttlMs,
// a subscriptions/listen event or list_changed), and each call runs exactly the version the agent was shown. The
// transport's fetch is bounded: one message the server sends (a tools/list page, an event) may hold 16 MiB.
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { boundedFetch, createToolsCache } from 'estate/client';

const [url, revision = '2026-07-28'] = process.argv.slice(2);
if (!url) {
  console.error('usage: agent.ts <estate /mcp url> [2026-07-28|2025-11-25]');
  process.exit(2);
}

const client = new Client({ name: 'example-agent', version: '1.0.0' }, revision === '2026-07-28' ? { versionNegotiation: { mode: { pin: '2026-07-28' } } } : {});
await client.connect(new StreamableHTTPClientTransport(new URL(url), { fetch: boundedFetch() }));
const cache = createToolsCache(client);
try {
  for (const [amount, from, to] of [[100, 'EUR', 'USD'], [250, 'AED', 'EUR'], [40, 'USD', 'EUR']] as const) {
    const tools = await cache.list();
    const quote = tools.find((t) => t.name === 'payments.quote');
    if (!quote) throw new Error('payments.quote is not offered to this principal');
    const result = await cache.call('payments.quote', { amount, from, to });
    const text = result.content.map((c) => (c.type === 'text' ? c.text : `<${c.type}>`)).join(' ');
    console.log(`payments.quote@${String(result._meta?.['io.estate/version'])}: ${text}`);
  }
  console.log(JSON.stringify({ stats: cache.stats() }));
} finally {
  await cache.close();
  await client.close();
}
