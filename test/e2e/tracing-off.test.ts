/**
 * Tracing is off unless configured, and then nothing is started: no SDK, no exporter, no connection. With no OTEL_*
 * variable at all, an OTLP receiver on the default endpoint (127.0.0.1:4318) hears nothing; with an endpoint set but
 * OTEL_SDK_DISABLED=true, the configured receiver hears nothing either — even through the flush at shutdown.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { makeTempStore, parseMcpBody, startHttpServer, type HttpServer, type TempStore } from './helpers.ts';
import { startOtlpReceiver, type OtlpReceiver } from './otlp-receiver.ts';

const JSON_HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
const PRINCIPAL = ['--tenant', 'acme', '--scopes', 'payments.read', '--clearance', 'confidential'];
const STARTED = 'tracing: exporting spans by OTLP';
/** Whatever the test runner's own environment holds: an empty value is "not set" to Estate. */
const NO_OTEL = Object.fromEntries(
  ['OTEL_EXPORTER_OTLP_ENDPOINT', 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', 'OTEL_EXPORTER_OTLP_PROTOCOL', 'OTEL_TRACES_EXPORTER', 'OTEL_SDK_DISABLED', 'OTEL_SERVICE_NAME'].map((k) => [k, '']),
);

let receiver: OtlpReceiver | undefined;
let tmp: TempStore | undefined;
let srv: HttpServer | undefined;
afterEach(async () => {
  await srv?.stop();
  await receiver?.close();
  tmp?.cleanup();
  srv = receiver = tmp = undefined;
});

/** A traced-looking call, answered; then the server stops (the moment a running SDK would flush). */
const callThenStop = async (server: HttpServer): Promise<void> => {
  const meta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {}, traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' };
  const r = await fetch(server.url, {
    method: 'POST',
    headers: { ...JSON_HEADERS, 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'payments.lookup' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'payments.lookup', arguments: { reference: 'PMT-771' }, _meta: meta } }),
  });
  expect(parseMcpBody(r.headers.get('content-type') ?? undefined, await r.text()).response).toHaveProperty('result');
  expect(await server.stop()).toBe(0);
};

describe('tracing off', () => {
  it('no OTEL_* set: nothing is started, and the default OTLP endpoint hears nothing', async () => {
    // The default endpoint an SDK would use without configuration; another process may hold the port, and then only
    // the absence of the start line is shown.
    receiver = await startOtlpReceiver(4318).catch(() => undefined);
    tmp = makeTempStore('estate-trace-off-');
    srv = await startHttpServer(['--demo', '--store', tmp.store, ...PRINCIPAL], { env: NO_OTEL });
    await callThenStop(srv);
    expect(srv.logs.seen.filter((l) => l.msg === STARTED)).toEqual([]);
    if (receiver) expect(receiver.requests).toEqual([]);
  });

  it('OTEL_SDK_DISABLED=true wins over a configured endpoint: nothing is sent to it', async () => {
    receiver = await startOtlpReceiver();
    tmp = makeTempStore('estate-trace-disabled-');
    srv = await startHttpServer(['--demo', '--store', tmp.store, ...PRINCIPAL], {
      env: { ...NO_OTEL, OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_SDK_DISABLED: 'TRUE' },
    });
    await callThenStop(srv);
    expect(srv.logs.seen.filter((l) => l.msg === STARTED)).toEqual([]);
    expect(receiver.requests).toEqual([]);
  });

  it('a typo in the OTLP settings fails at start, loudly', async () => {
    tmp = makeTempStore('estate-trace-typo-');
    await expect(startHttpServer(['--demo', '--store', tmp.store, ...PRINCIPAL], { env: { ...NO_OTEL, OTEL_EXPORTER_OTLP_ENDPOINT: 'localhost:4318' } })).rejects.toThrow(
      /the OTLP endpoint 'localhost:4318' is not an http:\/\/ or https:\/\/ URL/,
    );
  });
});
