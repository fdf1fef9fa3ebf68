/**
 * The console's actions: JSON POSTs under /console/api/, each through the same command the CLI runs (the command
 * handler's deprecate/retire, the upstream registry's approve/reject) and the same scope rule as the publishing API
 * (`estate:lifecycle[:<namespace>]`, src/auth/api-scopes.ts). Checked in this order, each before any work:
 *   1. `X-Estate-Console: 1` and a JSON content type (a cross-site form can send neither without a CORS preflight,
 *      which is never granted) — else 403 `csrf`;
 *   2. who asks (src/console/access.ts): no or a bad token — 401, nothing read;
 *   3. the path names an action — else 404;
 *   4. the scope for that tool — else 403, the body unread and nothing changed;
 *   5. the body: at most 16 KiB of JSON with the fields the action needs — else 400 naming the field.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { CommandHandler } from '#app/command-handler';
import { errorJson, verdictJson } from '#app/results-json';
import { covers, LIFECYCLE_SCOPE, scopeNeededFor } from '#auth/api-scopes';
import { DomainError } from '#domain/errors';
import { MAX_REASON_CHARS } from '#domain/guard';
import { isJsonContentType, readBody, refuseBusy, refuseTooLarge } from '#http/guards';
import type { Admission } from './access.ts';
import { decodeSegment } from './html.ts';
import type { UpstreamConsoleSource } from './upstreams.ts';

export const ACTION_HEADER = 'x-estate-console';

export interface ActionDeps {
  commands: CommandHandler;
  upstreams: UpstreamConsoleSource;
  send(res: ServerResponse, status: number, body: unknown, headers?: Record<string, string>): void;
}

type Body = Record<string, unknown>;

interface Action {
  /** The catalogue name whose lifecycle scope the action needs. */
  tool: string;
  /** The body's first fault, or undefined. */
  check(b: Body): string | undefined;
  run(b: Body, by: string): Promise<{ status: number; body: unknown }>;
}

const LIFECYCLE = /^\/console\/api\/tools\/([^/]+)\/versions\/([^/]+)\/lifecycle$/;
const DRIFT = /^\/console\/api\/upstreams\/([^/]+)\/drift\/([^/]+)$/;

const reasonFault = (reason: unknown, required: boolean): string | undefined => {
  if (reason === undefined && !required) return undefined;
  return typeof reason !== 'string' || reason.trim().length === 0 || reason.length > MAX_REASON_CHARS ? `reason must be a non-empty string of at most ${MAX_REASON_CHARS} characters` : undefined;
};

const actionAt = (path: string, deps: ActionDeps): Action | undefined => {
  const l = LIFECYCLE.exec(path);
  if (l) {
    const name = decodeSegment(l[1] as string);
    const version = decodeSegment(l[2] as string);
    if (name === null || version === null) return undefined;
    return {
      tool: name,
      check: (b) => (b.action !== 'deprecate' && b.action !== 'retire' ? "action must be 'deprecate' or 'retire'" : reasonFault(b.reason, true)),
      run: async (b, by) => {
        const reason = (b.reason as string).trim();
        const out = b.action === 'deprecate' ? await deps.commands.deprecate(name, version, reason, by) : await deps.commands.retire(name, version, reason, by);
        return { status: 200, body: out };
      },
    };
  }
  const d = DRIFT.exec(path);
  if (d) {
    const ns = decodeSegment(d[1] as string);
    const tool = decodeSegment(d[2] as string);
    if (ns === null || tool === null || !tool.startsWith(`${ns}.`)) return undefined;
    return {
      tool,
      check: (b) => {
        if (b.action !== 'approve' && b.action !== 'reject') return "action must be 'approve' or 'reject'";
        if (typeof b.candidateHash !== 'string' || !/^[0-9a-f]{16,128}$/.test(b.candidateHash)) return 'candidateHash must name the candidate shown (hex)';
        return reasonFault(b.reason, b.action === 'reject');
      },
      run: async (b, by) => {
        const hash = b.candidateHash as string;
        if (b.action === 'reject') return { status: 200, body: { result: 'rejected', ...(await deps.upstreams.reject(ns, tool, hash, (b.reason as string).trim(), by)) } };
        const v = await deps.upstreams.approve(ns, tool, hash, by);
        return { status: v.result === 'published' ? 200 : 422, body: verdictJson(v, v.result, v.position) };
      },
    };
  }
  return undefined;
};

const statusOf = (e: DomainError): number => (e.kind === 'not-found' ? 404 : e.kind === 'usage' ? 400 : e.kind === 'conflict' ? 409 : 422);

export const runAction = async (req: IncomingMessage, res: ServerResponse, path: string, admission: Admission, deps: ActionDeps): Promise<void> => {
  const { send } = deps;
  // The unread body of a refusal is the listener's to bound and close (refusalBoundedResponse, src/http/guards.ts).
  const refuse = (status: number, code: string, message: string, headers: Record<string, string> = {}): void => {
    send(res, status, { error: { code, message } }, headers);
  };
  if (req.headers[ACTION_HEADER] !== '1' || !isJsonContentType(req.headers['content-type'])) {
    return refuse(403, 'csrf', `Forbidden: console actions are JSON requests with the ${ACTION_HEADER} header, sent by the console itself`);
  }
  if (admission.kind === 'signed-out') return refuse(401, 'unauthorized', 'Unauthorized: sign in to act in the console');
  if (admission.kind === 'refused') return refuse(admission.status, admission.status === 403 ? 'insufficient_scope' : 'invalid_token', admission.reason, admission.headers);
  const action = actionAt(path, deps);
  if (!action) return refuse(404, 'not-found', `The console has no action at ${path.slice(0, 300)}`);
  // Scope before body: a caller without the scope learns nothing and changes nothing.
  if (!covers(admission.viewer.scopes, LIFECYCLE_SCOPE, action.tool)) {
    return refuse(403, 'insufficient_scope', `Forbidden: this action on ${action.tool} needs the scope ${scopeNeededFor(LIFECYCLE_SCOPE, action.tool)}`);
  }
  const body = await readBody(req, 16 * 1024);
  if (!body.ok) {
    if ('busy' in body) return refuseBusy(req, res, { error: { code: 'busy', message: body.busy } });
    return refuseTooLarge(req, res, { error: { code: 'payload-too-large', message: 'Payload Too Large: the body exceeds 16 KiB' } });
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.text);
  } catch {
    return send(res, 400, { error: { code: 'bad-json', message: 'Bad Request: the body is not JSON' } });
  }
  const b = (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed) ? parsed : {}) as Body;
  const fault = action.check(b);
  if (fault) return send(res, 400, { error: { code: 'bad-body', message: `Bad Request: ${fault}` } });
  try {
    const out = await action.run(b, admission.viewer.by);
    return send(res, out.status, out.body);
  } catch (e) {
    if (e instanceof DomainError) return send(res, statusOf(e), errorJson(e));
    throw e;
  }
};
