/**
 * The MCP serving bench's peer: the official SDK v2 `McpServer` over NodeStreamableHTTPServerTransport, serving the
 * same tools as Estate (as Zod shapes). Run as its own process (`node --import tsx bench/mcp-sdk-server.ts [--sse]`)
 * so neither server shares an event loop with the load generator; it prints `{"url": ...}` on stdout when listening.
 */
import { createServer, type IncomingMessage } from 'node:http';
import { TOOL_COUNT, lookup, toolName } from './mcp-fixture.ts';

/** `sse`: answer POSTs as event streams, the response mode Estate's sessions use (so progress can precede a result). */
const runSdkServer = async (sse: boolean): Promise<void> => {
  const { McpServer } = await import('@modelcontextprotocol/server');
  const { NodeStreamableHTTPServerTransport } = await import('@modelcontextprotocol/node');
  const { z } = await import('zod');
  const { randomUUID } = await import('node:crypto');
  const shape = z
    .object({
      reference: z.string().regex(/^PMT-\d{3,}$/).describe('Payment reference'),
      amount: z.number().min(0).optional(),
      currency: z.enum(['EUR', 'USD', 'GBP']).optional(),
      include_legs: z.boolean().default(false),
    })
    .strict();
  const build = () => {
    const server = new McpServer({ name: 'sdk-bench', version: '1.0.0' }, { capabilities: { tools: {} } });
    for (let i = 0; i < TOOL_COUNT; i++) {
      server.registerTool(toolName(i), { title: `Bench tool ${i}`, description: `Looks up a payment (bench tool ${i}).`, inputSchema: shape }, (args) =>
        lookup(args),
      );
    }
    return server;
  };
  const sessions = new Map<string, InstanceType<typeof NodeStreamableHTTPServerTransport>>();
  const readBody = (req: IncomingMessage): Promise<unknown> =>
    new Promise((resolve, reject) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        try {
          resolve(chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : undefined);
        } catch (e) {
          reject(e instanceof Error ? e : new Error(String(e)));
        }
      });
      req.on('error', reject);
    });
  const http = createServer((req, res) => {
    void (async () => {
      const sid = req.headers['mcp-session-id'];
      let transport = typeof sid === 'string' ? sessions.get(sid) : undefined;
      if (!transport) {
        const t = new NodeStreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          enableJsonResponse: !sse,
          onsessioninitialized: (id) => void sessions.set(id, t),
        });
        await build().connect(t);
        transport = t;
      }
      await transport.handleRequest(req, res, req.method === 'POST' ? await readBody(req) : undefined);
    })().catch((e: unknown) => {
      if (!res.headersSent) res.writeHead(500).end(String(e));
    });
  });
  http.listen(0, '127.0.0.1', () => {
    const addr = http.address();
    process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}/mcp` })}\n`);
  });
};

await runSdkServer(process.argv.includes('--sse'));
