#!/usr/bin/env node
/**
 * A name-mapping HTTP shim for running the conformance suites THROUGH Estate's proxy (scripts/conformance.sh with
 * CONFORMANCE_THROUGH=upstream). The suites call fixture tools by their bare names (`test_simple_text`); Estate serves an
 * upstream's tools as `<ns>.<tool>`. This shim sits between the suite and `estate serve --http` and maps names, nothing
 * else: a request's `tools/call` name and `Mcp-Name` header gain the prefix, a `tools/list` result's names lose it.
 * Every other byte (headers, session ids, event streams, errors) passes through as Estate sent it.
 *
 *   node scripts/conformance-names.mjs <listen-port> <estate-url> <prefix>   (prints `listening <url>` when ready)
 */
import { createServer } from 'node:http';

const [portArg, target, prefix] = process.argv.slice(2);
if (!portArg || !target || !prefix) {
  console.error('usage: conformance-names.mjs <listen-port> <estate-url> <prefix>');
  process.exit(2);
}

const mapRequest = (m) => {
  if (m && m.method === 'tools/call' && typeof m.params?.name === 'string') m.params.name = prefix + m.params.name;
  return m;
};
const mapResponse = (m) => {
  const tools = m?.result?.tools;
  if (Array.isArray(tools)) for (const t of tools) if (typeof t.name === 'string' && t.name.startsWith(prefix)) t.name = t.name.slice(prefix.length);
  return m;
};
const mapJson = (text, fn) => {
  try {
    const v = JSON.parse(text);
    return JSON.stringify(Array.isArray(v) ? v.map(fn) : fn(v));
  } catch {
    return text;
  }
};

const HOP = new Set(['host', 'connection', 'content-length', 'transfer-encoding', 'keep-alive']);

const server = createServer(async (req, res) => {
  const chunks = [];
  for await (const c of req) chunks.push(c);
  let body = Buffer.concat(chunks).toString('utf8');
  const headers = {};
  for (const [k, v] of Object.entries(req.headers)) if (!HOP.has(k) && v !== undefined) headers[k] = Array.isArray(v) ? v.join(', ') : v;
  let parsed;
  try {
    parsed = body.length > 0 ? JSON.parse(body) : undefined;
  } catch {
    parsed = undefined; // not JSON: Estate answers it as it would
  }
  if (parsed !== undefined) {
    body = JSON.stringify(Array.isArray(parsed) ? parsed.map(mapRequest) : mapRequest(parsed));
    // Prefixed, not recomputed: a header the suite sent wrong on purpose must reach Estate still wrong.
    if (parsed?.method === 'tools/call' && typeof headers['mcp-name'] === 'string') headers['mcp-name'] = prefix + headers['mcp-name'];
  }
  const ac = new AbortController();
  res.on('close', () => ac.abort());
  let up;
  try {
    up = await fetch(target, { method: req.method, headers, body: req.method === 'GET' || req.method === 'HEAD' ? undefined : body, signal: ac.signal });
  } catch (e) {
    res.writeHead(502).end(String(e));
    return;
  }
  const out = {};
  up.headers.forEach((v, k) => {
    if (!HOP.has(k) && k !== 'content-encoding') out[k] = v;
  });
  res.writeHead(up.status, out);
  const type = up.headers.get('content-type') ?? '';
  if (!up.body) return void res.end();
  if (type.startsWith('application/json')) return void res.end(mapJson(await up.text(), mapResponse));
  if (!type.startsWith('text/event-stream')) return void res.end(Buffer.from(await up.arrayBuffer()));
  // An event stream: rewrite each `data:` line as it arrives (one JSON-RPC message per event here), keep the rest.
  let buf = '';
  const decoder = new TextDecoder();
  try {
    for await (const chunk of up.body) {
      buf += decoder.decode(chunk, { stream: true });
      let nl;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl + 1);
        buf = buf.slice(nl + 1);
        res.write(line.startsWith('data:') ? `data: ${mapJson(line.slice(5).trim(), mapResponse)}\n` : line);
      }
    }
  } catch {
    // the client or Estate closed the stream
  }
  res.end(buf);
});
server.listen(Number(portArg), '127.0.0.1', () => console.log(`listening http://127.0.0.1:${server.address().port}/mcp`));
