/**
 * OAuth 2.0 Protected Resource Metadata (RFC 9728) and the Bearer challenges (RFC 6750) that point clients to it, as
 * MCP's authorization annex asks. The audience is the resource identifier, so the metadata URL is derived from it:
 * a server behind a proxy announces its public URL, not its bind address.
 */
export const PRM_PATH = '/.well-known/oauth-protected-resource';

export interface ProtectedResourceMetadata {
  resource: string;
  authorization_servers: string[];
  bearer_methods_supported: string[];
  resource_name: string;
  scopes_supported: string[];
}

/**
 * `scopes_supported` is what the operator lists (ESTATE_AUTH_SCOPES_SUPPORTED), `[]` by default: Estate itself needs
 * no scope to connect, tool scopes must not be listed where a caller could learn a tool exists unless the operator
 * chooses to, and listing the publishing scopes would make MCP clients ask for them by default.
 */
export const protectedResourceMetadata = (audience: string, issuer: string, scopesSupported: readonly string[] = []): ProtectedResourceMetadata => ({
  resource: audience,
  authorization_servers: [issuer],
  bearer_methods_supported: ['header'],
  resource_name: 'Estate MCP tool catalogue',
  scopes_supported: [...scopesSupported],
});

/** The path-suffixed form for a resource with a path (RFC 9728 §3.1), else the root form. */
export const metadataUrl = (audience: string): string => {
  const u = new URL(audience);
  const path = u.pathname === '/' ? '' : u.pathname.replace(/\/+$/, '');
  return `${u.origin}${PRM_PATH}${path}`;
};

/** Paths that answer the metadata: the root form, `/mcp`'s suffixed form, and the audience's own suffixed form. */
export const metadataPaths = (audience: string): Set<string> => {
  const own = new URL(metadataUrl(audience)).pathname;
  return new Set([PRM_PATH, `${PRM_PATH}/mcp`, own]);
};

/**
 * A quoted-string of printable ASCII. What goes in here can be a token's text (its `typ`, a claim's name): a character
 * outside Latin-1 or a control character would make Node refuse the whole header (ERR_INVALID_CHAR), a 500 for what
 * is the caller's bad token, as the /v1 path names were (src/http/publish-api.ts, PATH_PART). Line breaks become a
 * space, any other character outside `\x20-\x7e` a `?`; `\` and `"` are escaped.
 */
const quoted = (s: string): string =>
  `"${s
    .replace(/[\r\n]/g, ' ')
    .replace(/[^\x20-\x7e]/gu, '?')
    .replace(/[\\"]/g, (c) => `\\${c}`)}"`;

export type Challenge =
  | { kind: 'missing' }
  | { kind: 'invalid'; description: string }
  | { kind: 'invalid-request'; description: string }
  | { kind: 'insufficient-scope'; scope: string; description: string };

/** The WWW-Authenticate value: always the metadata URL; an error code only when a token was presented. */
export const wwwAuthenticate = (resourceMetadataUrl: string, c: Challenge): string => {
  const params = [`resource_metadata=${quoted(resourceMetadataUrl)}`];
  if (c.kind === 'invalid') params.push('error="invalid_token"', `error_description=${quoted(c.description)}`);
  if (c.kind === 'invalid-request') params.push('error="invalid_request"', `error_description=${quoted(c.description)}`);
  if (c.kind === 'insufficient-scope') params.push('error="insufficient_scope"', `scope=${quoted(c.scope)}`, `error_description=${quoted(c.description)}`);
  return `Bearer ${params.join(', ')}`;
};
