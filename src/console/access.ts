/**
 * Who is looking at the console. Without authorization: the local operator (the HTTP server binds loopback only),
 * holding what the CLI holds. With authorization: whoever's access token the request carries, checked by the same
 * authenticator as /mcp and /v1 (src/auth); the page signs people in at the issuer (OAuth 2.1 authorization code +
 * PKCE, src/console/client-script.ts) and keeps the token in memory, sending it as a Bearer header — never a cookie,
 * so a request from another site carries no credential at all.
 */
import type { IncomingMessage } from 'node:http';
import { LIFECYCLE_SCOPE, mayReadConsole, READ_SCOPE } from '#auth/api-scopes';
import type { Authenticator } from '#auth/authenticator';
import type { IssuerMetadata } from '#auth/issuer-metadata';
import { boundKey } from '#mcp/subject-counts';

export interface ConsoleViewer {
  /** Recorded as `by` on what the viewer does: the operator's name, or the token's subject. */
  by: string;
  /**
   * Who the per-viewer bounds count (the console's change streams): the token's subject within its tenant, as every
   * per-subject bound of the MCP side counts (boundKey); `by` alone made `alice` of one tenant share, and could take,
   * the streams of `alice` of another.
   */
  key: string;
  /** Publishing-API scopes held: actions need `estate:lifecycle[:<namespace>]` (src/auth/api-scopes.ts). */
  scopes: readonly string[];
  /** The token's `exp` (seconds since the epoch); absent for the local operator. */
  expiresAt?: number;
  signedIn: boolean;
}

export type Admission =
  | { kind: 'viewer'; viewer: ConsoleViewer }
  /** No credential at all: a page request is answered with the sign-in page, nothing of the catalogue. */
  | { kind: 'signed-out' }
  | { kind: 'refused'; status: 401 | 403 | 503; reason: string; headers: Record<string, string> };

/** How the page signs in: the issuer's endpoints come from its metadata (src/auth/issuer-metadata.ts). */
export interface SignInSettings {
  clientId: string;
  scope: string;
  /** The resource indicator (RFC 8707) tokens are asked for: this server's audience. */
  resource: string;
  issuer: IssuerMetadata;
}

export interface ConsoleAccess {
  /** Present when people sign in (authorization configured). */
  readonly signIn?: SignInSettings;
  admit(req: IncomingMessage): Promise<Admission>;
}

/** No authorization: every request is the local operator, who may read and act, as on the command line. */
export const operatorAccess = (by: string): ConsoleAccess => {
  const viewer: ConsoleViewer = { by, key: 'local', scopes: [READ_SCOPE, LIFECYCLE_SCOPE], signedIn: false };
  return { admit: () => Promise.resolve({ kind: 'viewer', viewer }) };
};

export const tokenAccess = (authenticator: Authenticator, signIn: SignInSettings): ConsoleAccess => ({
  signIn,
  async admit(req) {
    if (req.headers.authorization === undefined) return { kind: 'signed-out' };
    const out = await authenticator.authenticate(req);
    if (!out.ok) return { kind: 'refused', status: out.refusal.status, reason: out.refusal.message, headers: out.refusal.headers };
    const p = out.caller.principal;
    if (!mayReadConsole(p.scopes)) {
      return {
        kind: 'refused',
        status: 403,
        reason: `Forbidden: signed in as ${p.subject}, but the token holds none of ${READ_SCOPE}, ${LIFECYCLE_SCOPE}[:<namespace>] or estate:publish[:<namespace>], which reading the console needs`,
        headers: {},
      };
    }
    return { kind: 'viewer', viewer: { by: p.subject, key: boundKey(p), scopes: p.scopes, expiresAt: out.caller.expiresAt, signedIn: true } };
  },
});
