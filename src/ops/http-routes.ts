/**
 * `/healthz` (the process serves) and `/readyz` (SPEC §9: the store is reachable and can write, and the read models
 * have caught up; else 503 with a JSON reason), for load balancers and orchestrators. `/readyz` is answered to anyone
 * (any Host, no token): its reasons are fixed text, the store driver's own (a database, user, host or path) is only
 * logged (src/ops/store-health.ts).
 */
import { TOOL_STREAM_PREFIX } from '#domain/events';
import type { EventStore } from '#app/ports';
import type { IncomingMessage } from 'node:http';
import type { EstateMetrics } from './metrics.ts';
import { publicReason, type StoreHealth } from './store-health.ts';

export interface OpsRouteDeps {
  health: StoreHealth;
  /** Null when the read models are caught up, else why not. */
  readModels: () => Promise<string | null>;
  /** `/metrics`; absent: not served. */
  metrics?: EstateMetrics;
  /** Answer `/metrics` only to loopback callers (SPEC §9: with authorization on, unless `--metrics-public`). */
  metricsLoopbackOnly?: boolean;
}

const isLoopback = (address: string | undefined): boolean =>
  address !== undefined && (address === '::1' || address.startsWith('127.') || address.startsWith('::ffff:127.'));

/** Headers a reverse proxy or sidecar adds for the client it forwards: such a request is that client's, not loopback's. */
const PROXY_HEADERS = ['forwarded', 'x-forwarded-for', 'x-real-ip'];

const throughProxy = (req: IncomingMessage | undefined): boolean => PROXY_HEADERS.some((h) => req?.headers[h] !== undefined);

const METRICS_LOOPBACK_ONLY = 'forbidden: /metrics answers loopback callers only (serve --metrics-public to open it)';
const METRICS_PROXIED =
  'forbidden: /metrics answers loopback callers only, and this request came through a proxy (it carries ' +
  'Forwarded, X-Forwarded-For or X-Real-IP): scrape it from loopback directly, not through the proxy, ' +
  'or serve --metrics-public and bound who reaches it in the proxy';

/** Caught up: the store holds no catalogue event after the reader's position. */
export const catalogueCaughtUp =
  (store: EventStore, reader: { readonly position: string | null }) =>
  async (): Promise<string | null> => {
    try {
      const behind = await store.readAll({ after: reader.position, limit: 1, streamPrefix: TOOL_STREAM_PREFIX });
      return behind.length === 0 ? null : `the catalogue read model is behind the store (at ${reader.position ?? 'the start'})`;
    } catch {
      return 'the catalogue read model cannot be compared with the store (read failed)';
    }
  };

export const opsRoutes =
  (d: OpsRouteDeps) =>
  (path: string, req?: IncomingMessage): Promise<{ status: number; body: unknown; contentType?: string }> | null => {
    if (path === '/metrics' && d.metrics) {
      if (d.metricsLoopbackOnly && !isLoopback(req?.socket.remoteAddress)) return Promise.resolve({ status: 403, body: { error: METRICS_LOOPBACK_ONLY } });
      // Behind a same-host reverse proxy or sidecar every request comes from loopback: the proxy's headers say whose it is.
      if (d.metricsLoopbackOnly && throughProxy(req)) return Promise.resolve({ status: 403, body: { error: METRICS_PROXIED } });
      return d.metrics.render().then(({ contentType, body }) => ({ status: 200, body, contentType }));
    }
    if (path === '/healthz') return Promise.resolve({ status: 200, body: { status: 'ok' } });
    if (path !== '/readyz') return null;
    return Promise.all([d.health.check().then((r) => (r === null ? null : publicReason(r))), d.readModels()]).then((found) => {
      const reasons = found.filter((r): r is string => r !== null);
      return reasons.length === 0 ? { status: 200, body: { status: 'ready' } } : { status: 503, body: { status: 'not ready', reasons } };
    });
  };
