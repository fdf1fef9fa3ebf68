/**
 * The publishing API for pipelines, on the same server as /mcp: the same CommandHandler as the CLI, answering with
 * the same JSON as the CLI's `--json`, and HTTP statuses that mirror its exit codes (2 → 400, 3 → 422, 4 → 404).
 *
 *   POST /v1/tools                                           a definition → 201 published | 200 unchanged | 422 refused
 *   POST /v1/check                                           a definition → 200 would-publish | unchanged, 422 refused
 *   POST /v1/tools/{name}/versions/{version}/deprecate       {reason} → 200 | 404 | 422
 *   POST /v1/tools/{name}/versions/{version}/retire          {reason} → 200 | 404 | 422
 *
 * Order: token (401) → content type (415) → size (413) → scope (403) → body (400) → command; a publish is checked
 * against the namespace scopes once its body has named the tool. A caller without a valid token or the scope learns
 * nothing about the catalogue (an unknown tool is a 403 too). The publisher recorded is the token's subject.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import type { CommandHandler } from '../app/command-handler.ts';
import { covers, holdsAny, LIFECYCLE_SCOPE, PUBLISH_SCOPE, scopeNeededFor } from '../auth/api-scopes.ts';
import type { Authenticator, Caller } from '../auth/authenticator.ts';
import { wwwAuthenticate } from '../auth/resource-metadata.ts';
import { definitionErrorJson, errorJson, verdictJson } from '../app/results-json.ts';
import { DomainError, type DomainErrorKind } from '../domain/errors.ts';
import type { SchemaCompiler } from '../domain/schema-compiler.ts';
import { parseDefinitionText, validateDefinition } from '../domain/tool-definition.ts';
import type { ToolDefinition } from '../domain/types.ts';
import { isJsonContentType, readBody, refuseTooLarge } from './http-guards.ts';

export interface PublishApiOptions {
  commands: CommandHandler;
  compiler: SchemaCompiler;
  authenticator: Authenticator;
  log: Logger;
}

export const isApiPath = (path: string): boolean => path === '/v1' || path.startsWith('/v1/');

/** A decoded tool name or version from a lifecycle path: printable ASCII, bounded (names are at most 128). */
const PATH_PART = /^[\x21-\x7e]{1,128}$/;

const LIFECYCLE_ROUTE = /^\/v1\/tools\/([^/]+)\/versions\/([^/]+)\/(deprecate|retire)$/;

const sendJson = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void => {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(text)), 'cache-control': 'no-store', ...headers });
  res.end(text);
};

/** The HTTP status of a broken rule: the same classes as the CLI's exit codes (2 → 400, 3 → 422, 4 → 404). */
const STATUS_OF_KIND: Record<DomainErrorKind, number> = {
  usage: 400,
  'invalid-definition': 422,
  guard: 422,
  lifecycle: 422,
  conflict: 422,
  'not-found': 404,
};

/** Reads a JSON body, answering 415/413 itself; undefined when it has answered. */
const readJson = async (req: IncomingMessage, res: ServerResponse): Promise<string | undefined> => {
  if (!isJsonContentType(req.headers['content-type'])) {
    req.resume();
    sendJson(res, 415, { error: { code: 'unsupported-media-type', message: 'Unsupported Media Type: Content-Type must be application/json' } });
    return undefined;
  }
  const body = await readBody(req);
  if (!body.ok) {
    refuseTooLarge(req, res, { error: { code: 'payload-too-large', message: 'Payload Too Large: the body exceeds 1 MiB' } }, { 'cache-control': 'no-store' });
    return undefined;
  }
  return body.text;
};

export const createPublishApi = (o: PublishApiOptions) => {
  const forbid = (res: ServerResponse, scope: string, what: string): void => {
    const description = `${what} needs the scope ${scope}`;
    sendJson(res, 403, { error: { code: 'insufficient_scope', message: `Forbidden: ${description}` } }, {
      'www-authenticate': wwwAuthenticate(o.authenticator.resourceMetadataUrl, { kind: 'insufficient-scope', scope, description }),
    });
  };

  /** A thrown error, answered as the CLI would print it with --json. */
  const failed = (res: ServerResponse, e: unknown, context: Record<string, unknown>): void => {
    if (e instanceof DomainError) return sendJson(res, STATUS_OF_KIND[e.kind], errorJson(e));
    o.log.error({ err: e, ...context }, 'publishing API request failed');
    sendJson(res, 500, { error: { code: 'internal', message: 'Internal error' } });
  };

  /** The body as a definition, or the CLI's definition-error JSON: 400 when it is not one at all, 422 when it breaks a rule. */
  const definitionOf = (res: ServerResponse, text: string): ToolDefinition | undefined => {
    try {
      const raw = parseDefinitionText(text, 'request body', 'json');
      if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
        throw new DomainError('usage', 'not-a-definition', 'request body: must be a JSON object (a tool definition)');
      }
      return validateDefinition(raw, o.compiler);
    } catch (e) {
      if (!(e instanceof DomainError)) throw e;
      sendJson(res, e.kind === 'usage' ? 400 : 422, definitionErrorJson(e));
      return undefined;
    }
  };

  const publishOrCheck = async (res: ServerResponse, caller: Caller, text: string, verb: 'publish' | 'check'): Promise<void> => {
    const held = caller.principal.scopes;
    if (!holdsAny(held, PUBLISH_SCOPE)) return forbid(res, PUBLISH_SCOPE, verb === 'publish' ? 'publishing' : 'checking a definition');
    const def = definitionOf(res, text);
    if (!def) return;
    if (!covers(held, PUBLISH_SCOPE, def.name)) return forbid(res, scopeNeededFor(PUBLISH_SCOPE, def.name), `${verb === 'publish' ? 'publishing' : 'checking'} ${def.name}`);
    const by = caller.principal.subject;
    if (verb === 'check') {
      const v = await o.commands.check(def, by);
      const result = v.result === 'published' ? 'would-publish' : v.result;
      return sendJson(res, v.result === 'refused' ? 422 : 200, verdictJson(v, result));
    }
    const v = await o.commands.publish(def, by);
    o.log.info({ tool: def.name, version: def.version, result: v.result, by, position: v.position }, 'publish via API');
    return sendJson(res, v.result === 'published' ? 201 : v.result === 'unchanged' ? 200 : 422, verdictJson(v, v.result, v.position));
  };

  const lifecycle = async (res: ServerResponse, caller: Caller, text: string, verb: 'deprecate' | 'retire', name: string, version: string): Promise<void> => {
    if (!covers(caller.principal.scopes, LIFECYCLE_SCOPE, name)) {
      const scope = holdsAny(caller.principal.scopes, LIFECYCLE_SCOPE) ? scopeNeededFor(LIFECYCLE_SCOPE, name) : LIFECYCLE_SCOPE;
      return forbid(res, scope, `${verb === 'deprecate' ? 'deprecating' : 'retiring'} ${name}`);
    }
    let reason: unknown;
    try {
      const body = JSON.parse(text) as unknown;
      reason = typeof body === 'object' && body !== null && !Array.isArray(body) ? (body as Record<string, unknown>).reason : undefined;
    } catch {
      return sendJson(res, 400, { error: { code: 'syntax-error', message: 'request body: not valid JSON' } });
    }
    if (typeof reason !== 'string') return sendJson(res, 400, { error: { code: 'reason-required', message: `${verb} ${name}@${version}: body must be {"reason": "<text>"}` } });
    const by = caller.principal.subject;
    const out = verb === 'deprecate' ? await o.commands.deprecate(name, version, reason, by) : await o.commands.retire(name, version, reason, by);
    o.log.info({ tool: name, version, result: out.result, by, position: out.position }, `${verb} via API`);
    return sendJson(res, 200, out);
  };

  return async (req: IncomingMessage, res: ServerResponse, path: string): Promise<void> => {
    const m = LIFECYCLE_ROUTE.exec(path);
    if (path !== '/v1/tools' && path !== '/v1/check' && !m) return sendJson(res, 404, { error: { code: 'not-found', message: `no API route ${path}` } });
    if (req.method !== 'POST') {
      req.resume();
      return sendJson(res, 405, { error: { code: 'method-not-allowed', message: 'Method not allowed: use POST' } }, { allow: 'POST' });
    }
    const auth = await o.authenticator.authenticate(req);
    if (!auth.ok) {
      req.resume();
      return sendJson(res, auth.refusal.status, { error: { code: auth.refusal.code, message: auth.refusal.message } }, auth.refusal.headers);
    }
    const text = await readJson(req, res);
    if (text === undefined) return;
    let name = '';
    let version = '';
    try {
      if (m) {
        name = decodeURIComponent(m[1] ?? '');
        version = decodeURIComponent(m[2] ?? '');
      }
    } catch {
      return sendJson(res, 400, { error: { code: 'bad-ref', message: 'the tool name or version in the path is not valid percent-encoding' } });
    }
    // Names and versions are printable ASCII; anything else (a NUL, a non-Latin-1 character) would otherwise reach a
    // response header (the 403's WWW-Authenticate) and throw there: a 500 for what is the caller's bad input.
    if (m && !(PATH_PART.test(name) && PATH_PART.test(version))) {
      return sendJson(res, 400, { error: { code: 'bad-ref', message: 'the tool name or version in the path must be 1 to 128 printable ASCII characters' } });
    }
    try {
      if (!m) return await publishOrCheck(res, auth.caller, text, path === '/v1/tools' ? 'publish' : 'check');
      return await lifecycle(res, auth.caller, text, m[3] === 'deprecate' ? 'deprecate' : 'retire', name, version);
    } catch (e) {
      failed(res, e, { path, subject: auth.caller.principal.subject });
    }
  };
};
