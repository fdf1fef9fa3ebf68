/**
 * Everything authorization adds to `estate serve --http`, behind the two hooks the HTTP server offers: extra routes
 * (the Protected Resource Metadata and the publishing API) and the caller of each /mcp request. The MCP endpoint
 * needs only a valid token: what the caller may see is decided by the catalogue from its principal, and no tool
 * scope is ever named in a refusal.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Log } from '#app/log';
import type { Authenticator } from '#auth/authenticator';
import type { AuthConfig } from '#auth/config';
import { metadataPaths, protectedResourceMetadata } from '#auth/resource-metadata';
import { viewKey } from '#domain/access';
import type { Principal } from '#domain/types';
import { isApiPath, type PublishApi } from './publish-api.ts';
import { sendJson as send } from './send-json.ts';

/** The caller of one /mcp request; `owner` keys the sessions it may use (src/mcp/streamable-http.ts's McpCaller). */
export interface EdgeCaller {
  principal: Principal;
  owner: string;
}

export interface HttpEdge {
  serves(path: string): boolean;
  route(req: IncomingMessage, res: ServerResponse, path: string): Promise<void>;
  /** The caller, or undefined once a refusal (401/503) has been sent. */
  authenticate(req: IncomingMessage, res: ServerResponse): Promise<EdgeCaller | undefined>;
}

export interface HttpEdgeOptions {
  config: AuthConfig;
  /** Token → caller (src/auth/authenticator.ts), shared with the publishing API. */
  authenticator: Authenticator;
  /** The publishing API (./publish-api.ts), mounted at /v1. */
  api: PublishApi;
  log: Log;
}

/**
 * A session belongs to the principal that opened it: the subject, and the view its token gave. Another subject (or
 * the same one with a token for a different view) is told the session does not exist, and starts its own.
 */
export const sessionOwner = (p: Principal & { subject: string }): string => JSON.stringify([p.subject, viewKey(p)]);

export const createHttpEdge = (o: HttpEdgeOptions): HttpEdge => {
  const { authenticator, api } = o;
  const prmPaths = metadataPaths(o.config.audience);
  const prm = protectedResourceMetadata(o.config.audience, o.config.issuer, o.config.scopesSupported);
  return {
    serves: (path) => prmPaths.has(path) || isApiPath(path),
    async route(req, res, path) {
      if (!prmPaths.has(path)) return api(req, res, path);
      // A refusal's unread body is the listener's to bound (refusalBoundedResponse, ./guards.ts).
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        return send(res, 405, { error: { code: 'method-not-allowed', message: 'Method not allowed: use GET' } }, { allow: 'GET, HEAD' });
      }
      // Public by design (RFC 9728): browsers' clients may read it from another origin.
      return send(res, 200, prm, { 'cache-control': 'public, max-age=300', 'access-control-allow-origin': '*' });
    },
    async authenticate(req, res) {
      const out = await authenticator.authenticate(req);
      if (out.ok) return { principal: out.caller.principal, owner: sessionOwner(out.caller.principal) };
      o.log.debug({ status: out.refusal.status, why: out.refusal.message }, 'mcp request refused');
      send(res, out.refusal.status, { jsonrpc: '2.0', id: null, error: { code: -32000, message: out.refusal.message } }, out.refusal.headers);
      return undefined;
    },
  };
};
