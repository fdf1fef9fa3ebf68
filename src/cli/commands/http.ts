/**
 * The HTTP adapter of the write half of `CatalogueCommands`: publish, check, deprecate and retire through a server's
 * publishing API (`--server <url>`, token in ESTATE_TOKEN) instead of opening the store — so a pipeline needs a token,
 * not database credentials. The server answers with the CLI's JSON and statuses that mirror its exit codes, so the
 * verbs print the same lines as with a local store.
 */
import { DomainError, type DomainErrorKind } from '#domain/errors';
import { createSchemaCompiler } from '#domain/schema-compiler';
import { validateDefinition } from '#domain/tool-definition';
import type { Reason } from '#domain/types';
import { definitionRefusal, RemoteRefusal, type CatalogueWrites, type DefinitionSource, type LifecycleJson, type VerdictJson, type VerdictOutcome } from './port.ts';

interface ErrorBody {
  error: { code: string; message: string; reasons?: Reason[] };
}

/** The API's base URL from `--server` (the MCP endpoint's URL works too: a trailing /mcp is dropped). */
export const apiBase = (server: string): string => {
  let u: URL;
  try {
    u = new URL(server);
  } catch {
    throw new DomainError('usage', 'bad-server', `--server ${server}: not a URL (e.g. https://estate.example/)`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new DomainError('usage', 'bad-server', `--server ${server}: must be an http(s) URL`);
  return `${u.origin}${u.pathname.replace(/\/+$/, '').replace(/\/mcp$/, '')}`;
};

const post = async (url: string, token: string | undefined, body: unknown): Promise<{ status: number; json: unknown }> => {
  // Asked for only now: a file that cannot be read is reported first, as it is locally.
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
    throw new RemoteRefusal('unreachable', `cannot reach ${url}${cause}`);
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
const edgeRefusal = (status: number, json: unknown): RemoteRefusal => {
  const e = errorOf(json);
  return new RemoteRefusal(e?.code ?? `http-${status}`, `the server answered ${status}${e ? `: ${e.message}` : ''}`);
};

const KIND_OF_STATUS: Record<number, DomainErrorKind> = { 400: 'usage', 404: 'not-found', 422: 'guard' };

/** The server would answer 400 for a body that is not an object; the local verb calls that a broken rule (exit 3). */
const notAnObject = ({ file, raw }: DefinitionSource): DomainError | undefined => {
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

export const httpCatalogueCommands = (base: string, token: string | undefined): CatalogueWrites => {
  const judge = async (route: 'tools' | 'check', source: DefinitionSource): Promise<VerdictOutcome> => {
    const refused = notAnObject(source);
    if (refused) return definitionRefusal(refused);
    const { status, json } = await post(`${base}/v1/${route}`, token, source.raw);
    const v = json as VerdictJson | undefined;
    if (!v || typeof v.result !== 'string') {
      const e = errorOf(json);
      const kind = KIND_OF_STATUS[status];
      if (e && kind) throw new DomainError(kind === 'guard' ? 'conflict' : kind, e.code, e.message, e.reasons);
      throw edgeRefusal(status, json);
    }
    if (![200, 201, 400, 422].includes(status)) throw edgeRefusal(status, json);
    // The server does not know the file's name; the local verb puts it before a definition error.
    if (v.name === null && v.error) v.error = { ...v.error, message: `${source.file}: ${v.error.message}` };
    return { json: v, ...(status === 400 ? { refusal: 'usage' as const } : status === 422 ? { refusal: 'refused' as const } : {}) };
  };

  const lifecycle = async (verb: 'deprecate' | 'retire', name: string, version: string, reason: string): Promise<LifecycleJson> => {
    const { status, json } = await post(`${base}/v1/tools/${encodeURIComponent(name)}/versions/${encodeURIComponent(version)}/${verb}`, token, { reason });
    if (status === 200) return json as LifecycleJson;
    const e = errorOf(json);
    const kind = KIND_OF_STATUS[status];
    if (!e || !kind) throw edgeRefusal(status, json);
    throw new DomainError(kind === 'guard' ? 'lifecycle' : kind, e.code, e.message, e.reasons);
  };

  return {
    publish: (source) => judge('tools', source),
    check: (source) => judge('check', source),
    deprecate: ({ name, version }, reason) => lifecycle('deprecate', name, version, reason),
    retire: ({ name, version }, reason) => lifecycle('retire', name, version, reason),
    close: async () => undefined,
  };
};
