/**
 * `--server <url>` on publish, check, deprecate and retire: the same verbs through a server's publishing API, with the
 * token in ESTATE_TOKEN, instead of opening the store — so a pipeline needs a token, not database credentials. Output
 * and exit codes are the local ones: the server answers with the CLI's JSON and statuses that mirror its exit codes.
 */
import { readFile } from 'node:fs/promises';
import { extname } from 'node:path';
import { Option, type Command } from 'commander';
import { DomainError, type DomainErrorKind } from '../domain/errors.ts';
import { createSchemaCompiler } from '../domain/schema-compiler.ts';
import { parseDefinitionText, validateDefinition } from '../domain/tool-definition.ts';
import type { Reason } from '../domain/types.ts';
import { lifecycleLine } from '../app/results-json.ts';
import { EXIT } from './exit.ts';
import { fail, printJson, type GlobalOptions } from './run.ts';

export type RemoteVerb = 'publish' | 'check' | 'deprecate' | 'retire';

interface RemoteOptions extends GlobalOptions {
  server?: string;
  reason?: string;
}

export const serverOption = (): Option =>
  new Option('--server <url>', 'use this estate server\'s publishing API instead of opening the store (token from ESTATE_TOKEN)');

interface VerdictBody {
  result: string;
  name: string | null;
  version: string | null;
  level: string | null;
  reasons: Reason[];
  baseline?: string;
  position?: string;
  error?: { code: string; message: string };
}

interface ErrorBody {
  error: { code: string; message: string; reasons?: Reason[] };
}

/** A refusal by the server's edge (token, scope, size...): reported as is, exit 1. */
class RemoteError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

const reasonLines = (reasons: readonly Reason[]): string => reasons.map((r) => `  ${r.level.padEnd(5)} ${r.path}: ${r.rule} — ${r.detail}`).join('\n');

const apiBase = (server: string): string => {
  let u: URL;
  try {
    u = new URL(server);
  } catch {
    throw new DomainError('usage', 'bad-server', `--server ${server}: not a URL (e.g. https://estate.example/)`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new DomainError('usage', 'bad-server', `--server ${server}: must be an http(s) URL`);
  return `${u.origin}${u.pathname.replace(/\/+$/, '').replace(/\/mcp$/, '')}`;
};

const post = async (url: string, body: unknown): Promise<{ status: number; json: unknown }> => {
  const token = process.env.ESTATE_TOKEN;
  if (!token) throw new DomainError('usage', 'token-required', '--server needs an access token in ESTATE_TOKEN');
  let res: Response;
  try {
    res = await fetch(url, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify(body),
    });
  } catch (e) {
    const cause = e instanceof Error && e.cause instanceof Error ? `: ${e.cause.message}` : '';
    throw new RemoteError('unreachable', `cannot reach ${url}${cause}`);
  }
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text) as unknown;
  } catch {
    json = undefined;
  }
  return { status: res.status, json };
};

const errorOf = (json: unknown): ErrorBody['error'] | undefined => {
  const e = (json as Partial<ErrorBody> | undefined)?.error;
  return e && typeof e.code === 'string' && typeof e.message === 'string' ? e : undefined;
};

/** Statuses that mirror an exit code carry the CLI's JSON; anything else is the edge speaking. */
const edgeRefusal = (status: number, json: unknown): RemoteError => {
  const e = errorOf(json);
  return new RemoteError(e?.code ?? `http-${status}`, `the server answered ${status}${e ? `: ${e.message}` : ''}`);
};

const KIND_OF_STATUS: Record<number, DomainErrorKind> = { 400: 'usage', 404: 'not-found', 422: 'guard' };

/** The server would answer 400 for a body that is not an object; the local verb calls that a broken rule (exit 3). */
const notAnObject = (file: string, raw: unknown): DomainError | undefined => {
  if (typeof raw === 'object' && raw !== null && !Array.isArray(raw)) return undefined;
  try {
    // The object check comes before anything is compiled, so this costs nothing but gives the local verb's words.
    validateDefinition(raw, createSchemaCompiler());
  } catch (e) {
    if (e instanceof DomainError) return new DomainError(e.kind, e.code, `${file}: ${e.message}`);
    throw e;
  }
  return undefined;
};

const readDefinitionBody = async (file: string): Promise<unknown> => {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'is a directory' : code === 'EACCES' ? 'permission denied' : String(code ?? e);
    throw new DomainError('usage', 'unreadable-file', `cannot read ${file}: ${why}`);
  }
  const raw = parseDefinitionText(text, file, extname(file).toLowerCase() === '.json' ? 'json' : 'yaml');
  const refused = notAnObject(file, raw);
  if (refused) throw refused;
  return raw;
};

const publishOrCheck = async (verb: 'publish' | 'check', base: string, file: string, opts: RemoteOptions): Promise<number> => {
  let body: unknown;
  try {
    body = await readDefinitionBody(file);
  } catch (e) {
    if (!(e instanceof DomainError) || !opts.json) throw e;
    // As the local verb does: the publish/check JSON shape, carrying the error.
    console.error(`estate: ${e.kind === 'usage' ? 'error' : 'refused'}: ${e.message}`);
    printJson({ result: 'refused', name: null, version: null, level: null, reasons: [], error: { code: e.code, message: e.message } });
    return e.kind === 'usage' ? EXIT.usage : EXIT.refused;
  }
  const { status, json } = await post(`${base}/v1/${verb === 'publish' ? 'tools' : 'check'}`, body);
  const v = json as VerdictBody | undefined;
  if (!v || typeof v.result !== 'string') {
    const e = errorOf(json);
    const kind = KIND_OF_STATUS[status];
    if (e && kind) throw new DomainError(kind === 'guard' ? 'conflict' : kind, e.code, e.message, e.reasons);
    throw edgeRefusal(status, json);
  }
  if (![200, 201, 400, 422].includes(status)) throw edgeRefusal(status, json);
  // The server does not know the file's name; the local verb puts it before a definition error.
  if (v.name === null && v.error) v.error = { ...v.error, message: `${file}: ${v.error.message}` };
  if (opts.json) printJson(v);
  if (status === 400 || status === 422) {
    console.error(`estate: ${status === 400 ? 'error' : 'refused'}: ${v.error?.message ?? 'refused'}`);
    return status === 400 ? EXIT.usage : EXIT.refused;
  }
  if (!opts.json) {
    const from = `${v.level}${v.baseline ? ` from ${v.baseline}` : ''}`;
    if (verb === 'check') console.log(`${v.result}: ${v.name}@${v.version} (${from})`);
    else if (v.result === 'unchanged') console.log(`unchanged: ${v.name}@${v.version} is already published with this exact content`);
    else console.log(`published ${v.name}@${v.version} (${from}) at position ${v.position}`);
    if (v.reasons.length) console.log(reasonLines(v.reasons));
  }
  return EXIT.ok;
};

const lifecycle = async (verb: 'deprecate' | 'retire', base: string, ref: string, reason: string, opts: RemoteOptions): Promise<number> => {
  const at = ref.lastIndexOf('@');
  const name = at < 0 ? '' : ref.slice(0, at);
  const version = at < 0 ? '' : ref.slice(at + 1);
  if (!name || !version) throw new DomainError('usage', 'bad-ref', `'${ref}': expected <name>@<version>, e.g. payments.lookup@1.0.0`);
  const { status, json } = await post(`${base}/v1/tools/${encodeURIComponent(name)}/versions/${encodeURIComponent(version)}/${verb}`, { reason });
  if (status === 200) {
    const out = json as { result: string; name: string; version: string; position?: string };
    if (opts.json) printJson(out);
    else console.log(lifecycleLine({ ...out, name, version }));
    return EXIT.ok;
  }
  const e = errorOf(json);
  const kind = KIND_OF_STATUS[status];
  if (!e || !kind) throw edgeRefusal(status, json);
  throw new DomainError(kind === 'guard' ? 'lifecycle' : kind, e.code, e.message, e.reasons);
};

/** Wrap a verb's local action: with `--server`, the API is used and the store is never opened. */
export const viaServer =
  <A extends unknown[]>(verb: RemoteVerb, local: (...args: A) => Promise<void>) =>
  async (...args: A): Promise<void> => {
    const cmd = args[args.length - 1] as Command;
    const opts = cmd.optsWithGlobals<RemoteOptions>();
    if (opts.server === undefined) return local(...args);
    try {
      const base = apiBase(opts.server);
      if (opts.by !== undefined) console.error('estate: note: --by is ignored with --server; the server records the token\'s subject');
      const target = args[0] as string;
      process.exitCode =
        verb === 'publish' || verb === 'check' ? await publishOrCheck(verb, base, target, opts) : await lifecycle(verb, base, target, opts.reason ?? '', opts);
    } catch (e) {
      if (!(e instanceof RemoteError)) return fail(e, opts);
      console.error(`estate: error: ${e.message}`);
      if (opts.json) printJson({ error: { code: e.code, message: e.message } });
      process.exitCode = EXIT.other;
    }
  };
