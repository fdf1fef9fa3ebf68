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
 * against the namespace scopes as soon as its body has named the tool: the body is scanned for depth, parsed and its
 * `name` read, and only then, for a caller who may publish that name, checked and compiled (in a worker thread with a
 * time budget: definition-budget.ts). A lifecycle route is authorized from its path before its body is read. A caller
 * without a valid token or the scope learns nothing about the catalogue (an unknown tool is a 403 too), and costs
 * nothing but the parse. The publisher recorded is the token's subject.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Log } from '#app/log';
import type { CommandHandler, PublishOutcome } from '#app/command-handler';
import { covers, holdsAny, LIFECYCLE_SCOPE, PUBLISH_SCOPE, scopeNeededFor } from '#auth/api-scopes';
import type { Authenticator, Caller } from '#auth/authenticator';
import { wwwAuthenticate } from '#auth/resource-metadata';
import { definitionErrorJson, errorJson, verdictJson } from '#app/results-json';
import { DomainError, type DomainErrorKind } from '#domain/errors';
import { invalidDefinition } from '#domain/errors';
import { MAX_REASON_CHARS } from '#domain/guard';
import { scanJsonDepth } from '#domain/json-depth';
import type { SchemaCompiler } from '#domain/schema-compiler';
import type { ToolDefinition } from '#domain/types';
import { MAX_DEFINITION_DEPTH, parseDefinitionText, checkName } from '#domain/tool-definition';
import type { DefinitionChecker } from '#app/definition-budget';
import { isJsonContentType, readBody, refuseBusy, refuseTooLarge } from './guards.ts';
import { sendJson as send } from './send-json.ts';

export interface PublishApiOptions {
  commands: CommandHandler;
  compiler: SchemaCompiler;
  authenticator: Authenticator;
  log: Log;
  /** Checks definitions off the event loop with a time budget (src/app/definition-budget.ts). */
  checker: DefinitionChecker;
}

/** Answers one request whose path is under /v1. */
export type PublishApi = (req: IncomingMessage, res: ServerResponse, path: string) => Promise<void>;


export const isApiPath = (path: string): boolean => path === '/v1' || path.startsWith('/v1/');

/** A decoded tool name or version from a lifecycle path: printable ASCII, bounded (names are at most 128). */
const PATH_PART = /^[\x21-\x7e]{1,128}$/;

const LIFECYCLE_ROUTE = /^\/v1\/tools\/([^/]+)\/versions\/([^/]+)\/(deprecate|retire)$/;

/** API answers are about one request and the catalogue at that moment: never cached. */
const sendJson = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void =>
  send(res, status, body, { 'cache-control': 'no-store', ...headers });

/** The HTTP status of a broken rule: the same classes as the CLI's exit codes (2 → 400, 3 → 422, 4 → 404). */
const STATUS_OF_KIND: Record<DomainErrorKind, number> = {
  usage: 400,
  'invalid-definition': 422,
  guard: 422,
  lifecycle: 422,
  conflict: 422,
  'not-found': 404,
};

/**
 * Reads a JSON body, answering 415/413/503 itself; undefined when it has answered. A refusal's unread body (here and
 * below) is the listener's to bound and close (refusalBoundedResponse, ./guards.ts).
 */
const readJson = async (req: IncomingMessage, res: ServerResponse): Promise<string | undefined> => {
  if (!isJsonContentType(req.headers['content-type'])) {
    sendJson(res, 415, { error: { code: 'unsupported-media-type', message: 'Unsupported Media Type: Content-Type must be application/json' } });
    return undefined;
  }
  const body = await readBody(req);
  if (!body.ok) {
    if ('busy' in body) refuseBusy(req, res, { error: { code: 'busy', message: body.busy } }, { 'cache-control': 'no-store' });
    else refuseTooLarge(req, res, { error: { code: 'payload-too-large', message: 'Payload Too Large: the body exceeds 1 MiB' } }, { 'cache-control': 'no-store' });
    return undefined;
  }
  return body.text;
};

export const createPublishApi = (o: PublishApiOptions): PublishApi => {
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

  const { checker } = o;

  /** The CLI's definition-error JSON: 400 when the body is not a definition at all, 422 when it breaks a rule. */
  const refuseDefinition = (res: ServerResponse, e: DomainError, raw?: unknown): void => sendJson(res, e.kind === 'usage' ? 400 : 422, definitionErrorJson(e, raw));

  const publishOrCheck = async (res: ServerResponse, caller: Caller, text: string, verb: 'publish' | 'check'): Promise<void> => {
    const held = caller.principal.scopes;
    if (!holdsAny(held, PUBLISH_SCOPE)) return forbid(res, PUBLISH_SCOPE, verb === 'publish' ? 'publishing' : 'checking a definition');
    // Only enough work to read the name before the namespace is authorized: a depth scan and a parse, nothing compiled.
    let raw: unknown;
    try {
      if (scanJsonDepth(text, MAX_DEFINITION_DEPTH).tooDeep) {
        throw new DomainError('usage', 'syntax-error', `request body: nested deeper than ${MAX_DEFINITION_DEPTH} levels`);
      }
      raw = parseDefinitionText(text, 'request body', 'json');
      if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
        throw new DomainError('usage', 'not-a-definition', 'request body: must be a JSON object (a tool definition)');
      }
      const name = (raw as Record<string, unknown>).name;
      if (typeof name !== 'string') throw invalidDefinition('invalid-field', 'name: is required (a string)');
      checkName(name); // a malformed name names no namespace: refused as the CLI refuses it (422 invalid-name)
      if (!covers(held, PUBLISH_SCOPE, name)) return forbid(res, scopeNeededFor(PUBLISH_SCOPE, name), `${verb === 'publish' ? 'publishing' : 'checking'} ${name}`);
    } catch (e) {
      if (!(e instanceof DomainError)) throw e;
      return refuseDefinition(res, e, raw);
    }
    let def;
    try {
      def = await checker.check(raw);
    } catch (e) {
      if (!(e instanceof DomainError)) throw e;
      return refuseDefinition(res, e, raw);
    }
    const by = caller.principal.subject;
    // Classifying against the baseline is as costly as checking can be: the same worker, budget and refusal.
    const classify = { classify: (before: ToolDefinition, after: ToolDefinition) => checker.classify(before, after) };
    let v: PublishOutcome;
    try {
      v = verb === 'check' ? await o.commands.check(def, by, classify) : await o.commands.publish(def, by, classify);
    } catch (e) {
      if (!(e instanceof DomainError) || e.kind !== 'invalid-definition') throw e;
      return refuseDefinition(res, e);
    }
    if (verb === 'check') {
      const result = v.result === 'published' ? 'would-publish' : v.result;
      return sendJson(res, v.result === 'refused' ? 422 : 200, verdictJson(v, result));
    }
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
      if (scanJsonDepth(text, MAX_DEFINITION_DEPTH).tooDeep) throw new Error('too deep');
      const body = JSON.parse(text) as unknown;
      reason = typeof body === 'object' && body !== null && !Array.isArray(body) ? (body as Record<string, unknown>).reason : undefined;
    } catch {
      return sendJson(res, 400, { error: { code: 'syntax-error', message: 'request body: not valid JSON' } });
    }
    if (typeof reason !== 'string') return sendJson(res, 400, { error: { code: 'reason-required', message: `${verb} ${name}@${version}: body must be {"reason": "<text>"}` } });
    // As the console's actions bound it: a reason is recorded in the event and shown on every page of the tool.
    if (reason.length > MAX_REASON_CHARS) return sendJson(res, 400, { error: { code: 'reason-too-long', message: `${verb} ${name}@${version}: reason must be at most ${MAX_REASON_CHARS} characters (got ${reason.length})` } });
    const by = caller.principal.subject;
    const out = verb === 'deprecate' ? await o.commands.deprecate(name, version, reason, by) : await o.commands.retire(name, version, reason, by);
    o.log.info({ tool: name, version, result: out.result, by, position: out.position }, `${verb} via API`);
    return sendJson(res, 200, out);
  };

  return async (req: IncomingMessage, res: ServerResponse, path: string): Promise<void> => {
    const m = LIFECYCLE_ROUTE.exec(path);
    if (path !== '/v1/tools' && path !== '/v1/check' && !m) return sendJson(res, 404, { error: { code: 'not-found', message: `no API route ${path}` } });
    if (req.method !== 'POST') {
      return sendJson(res, 405, { error: { code: 'method-not-allowed', message: 'Method not allowed: use POST' } }, { allow: 'POST' });
    }
    const auth = await o.authenticator.authenticate(req);
    if (!auth.ok) {
      return sendJson(res, auth.refusal.status, { error: { code: auth.refusal.code, message: auth.refusal.message } }, auth.refusal.headers);
    }
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
    // A lifecycle route names its tool in the path: authorized before its body is even read.
    if (m && !covers(auth.caller.principal.scopes, LIFECYCLE_SCOPE, name)) {
      const scope = holdsAny(auth.caller.principal.scopes, LIFECYCLE_SCOPE) ? scopeNeededFor(LIFECYCLE_SCOPE, name) : LIFECYCLE_SCOPE;
      return forbid(res, scope, `${m[3] === 'deprecate' ? 'deprecating' : 'retiring'} ${name}`);
    }
    const text = await readJson(req, res);
    if (text === undefined) return;
    try {
      if (!m) return await publishOrCheck(res, auth.caller, text, path === '/v1/tools' ? 'publish' : 'check');
      return await lifecycle(res, auth.caller, text, m[3] === 'deprecate' ? 'deprecate' : 'retire', name, version);
    } catch (e) {
      failed(res, e, { path, subject: auth.caller.principal.subject });
    }
  };
};
