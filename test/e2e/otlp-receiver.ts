/**
 * An in-test OTLP/HTTP receiver: `POST /v1/traces` with the OTLP JSON encoding (OTEL_EXPORTER_OTLP_PROTOCOL=http/json),
 * decoded into flat spans a test can query. Every request is kept, whatever its path, so a test can also show that
 * nothing arrived at all.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { LineQueue } from './helpers.ts';

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  /** OTLP's SpanKind number: 1 internal, 2 server, 3 client. */
  kind: number;
  attributes: Record<string, unknown>;
  events: { name: string; attributes: Record<string, unknown> }[];
  status: { code?: number; message?: string };
  service: string;
}

export interface OtlpReceiver {
  /** The base endpoint, for OTEL_EXPORTER_OTLP_ENDPOINT. */
  url: string;
  spans: LineQueue<ReceivedSpan>;
  /** Every request received: method and path. */
  requests: string[];
  /** Wait for a span matching `match` (a bounded wait, not a timing assertion). */
  span(match: (s: ReceivedSpan) => boolean, what: string): Promise<ReceivedSpan>;
  close(): Promise<void>;
}

interface OtlpKeyValue {
  key: string;
  value: Record<string, unknown>;
}

const valueOf = (v: Record<string, unknown>): unknown => {
  if ('stringValue' in v) return v.stringValue;
  if ('boolValue' in v) return v.boolValue;
  if ('intValue' in v) return Number(v.intValue);
  if ('doubleValue' in v) return v.doubleValue;
  return v;
};

const attributesOf = (kvs: OtlpKeyValue[] | undefined): Record<string, unknown> =>
  Object.fromEntries((kvs ?? []).map((kv) => [kv.key, valueOf(kv.value)]));

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes?: OtlpKeyValue[];
  events?: { name: string; attributes?: OtlpKeyValue[] }[];
  status?: { code?: number; message?: string };
}

interface OtlpExport {
  resourceSpans?: { resource?: { attributes?: OtlpKeyValue[] }; scopeSpans?: { spans?: OtlpSpan[] }[] }[];
}

export const decodeOtlpJson = (body: OtlpExport): ReceivedSpan[] =>
  (body.resourceSpans ?? []).flatMap((rs) => {
    const service = String(attributesOf(rs.resource?.attributes)['service.name'] ?? '');
    return (rs.scopeSpans ?? []).flatMap((ss) =>
      (ss.spans ?? []).map((s) => ({
        traceId: s.traceId,
        spanId: s.spanId,
        parentSpanId: s.parentSpanId ?? '',
        name: s.name,
        kind: s.kind,
        attributes: attributesOf(s.attributes),
        events: (s.events ?? []).map((e) => ({ name: e.name, attributes: attributesOf(e.attributes) })),
        status: s.status ?? {},
        service,
      })),
    );
  });

export const startOtlpReceiver = async (port = 0): Promise<OtlpReceiver> => {
  const spans = new LineQueue<ReceivedSpan>();
  const requests: string[] = [];
  const server: Server = createServer((req, res) => {
    requests.push(`${req.method ?? ''} ${req.url ?? ''}`);
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.url === '/v1/traces' && (req.headers['content-type'] ?? '').includes('json')) {
        for (const s of decodeOtlpJson(JSON.parse(Buffer.concat(chunks).toString('utf8')) as OtlpExport)) spans.push(s);
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', resolve);
  });
  const { port: bound } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${bound}`,
    spans,
    requests,
    span: (match, what) => {
      const seen = spans.seen.find(match);
      return seen ? Promise.resolve(seen) : spans.next(match, 20_000, what);
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
};
