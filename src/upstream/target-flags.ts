/**
 * The flags of `estate upstream add` turned into an UpstreamTarget and default access, refusing anything that would
 * put a secret into an event (`--env TOKEN=ghp_...`), reach a non-loopback server in clear text, or leave access open
 * by default (fail closed). Each refusal is one line naming the flag.
 */
import { statSync } from 'node:fs';
import { resolve } from 'node:path';
import { DomainError } from '#domain/errors';
import type { UpstreamTarget } from '#domain/events';
import { CLASSIFICATIONS, type Classification, type ToolAccess } from '#domain/types';

const usage = (code: string, message: string): DomainError => new DomainError('usage', code, message);

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** RFC 9110 token characters. */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** A query parameter's name as written in a URL without escaping (RFC 3986 unreserved characters), 1 to 128 of them. */
const QUERY_NAME = /^[A-Za-z0-9._~-]{1,128}$/;
const NAME_KIND = { '--env': 'environment variable', '--header': 'header', '--query': 'query parameter' } as const;
const FORBIDDEN_HEADERS = new Set(['host', 'content-length', 'content-type', 'accept', 'mcp-session-id', 'mcp-protocol-version', 'mcp-method', 'mcp-name', 'connection', 'transfer-encoding']);
const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]']);

/**
 * A URL query parameter whose name says it carries a credential (`api_key`, `accessToken`, `X-Amz-Signature`,
 * `client_secret`, `sessionid`, ...): the name split into words (at `-`, `_`, `.` and lower-to-upper case changes), any
 * word one of these, or ending in one of the suffixes (`apikey`, `authtoken`, `clientsecret`). Words, not substrings,
 * so `author` or `keyword` are not taken for one.
 */
const CREDENTIAL_WORDS = new Set([
  'auth', 'authorization', 'oauth', 'bearer', 'jwt', 'cookie',
  'key', 'token', 'secret', 'password', 'passwd', 'pwd', 'passphrase',
  'sig', 'signature', 'credential', 'credentials', 'cred', 'creds',
  'session', 'sessionid', 'sessid', 'jsessionid', 'phpsessid',
]);
const CREDENTIAL_SUFFIX = /(key|token|secret|password|passwd|signature|credentials?)$/;

export const looksLikeCredential = (name: string): boolean =>
  name
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .some((w) => w.length > 0 && (CREDENTIAL_WORDS.has(w) || CREDENTIAL_SUFFIX.test(w) || w.startsWith('session')));

/** Split a command line into words: whitespace separates, '...' and "..." quote, backslash escapes outside '...'. */
export const splitCommand = (line: string): string[] => {
  const words: string[] = [];
  let cur = '';
  let inWord = false;
  let quote: '"' | "'" | null = null;
  for (let i = 0; i < line.length; i++) {
    const ch = line[i] as string;
    if (quote) {
      if (ch === quote) quote = null;
      else if (ch === '\\' && quote === '"' && i + 1 < line.length) cur += line[++i];
      else cur += ch;
    } else if (ch === '"' || ch === "'") {
      quote = ch;
      inWord = true;
    } else if (ch === '\\' && i + 1 < line.length) {
      cur += line[++i];
      inWord = true;
    } else if (/\s/.test(ch)) {
      if (inWord) words.push(cur);
      cur = '';
      inWord = false;
    } else {
      cur += ch;
      inWord = true;
    }
  }
  if (quote) throw usage('upstream-command', `--command: unterminated ${quote} quote`);
  if (inWord) words.push(cur);
  return words;
};

/** `NAME=env:VAR` → [NAME, VAR]. A literal value is refused: it would be stored in an event. */
const parseNamed = (entry: string, flag: '--env' | '--header' | '--query', namePattern: RegExp): [string, string] => {
  const eq = entry.indexOf('=');
  const name = eq < 0 ? entry : entry.slice(0, eq);
  const value = eq < 0 ? '' : entry.slice(eq + 1);
  const shown = name.slice(0, 60);
  if (!namePattern.test(name)) throw usage('upstream-flag', `${flag} '${shown}': not a valid ${NAME_KIND[flag]} name`);
  if (!value.startsWith('env:') || !ENV_NAME.test(value.slice(4))) {
    // Never echo the value: it may be the very secret the rule keeps out of events and logs.
    throw usage('upstream-secret', `${flag} ${shown}: expected ${shown}=env:VARIABLE (a secret is never stored; name the environment variable that holds it)`);
  }
  return [name, value.slice(4)];
};

/** Why `dir` cannot be a child's working directory; undefined when it can. */
export const directoryProblem = (dir: string): string | undefined => {
  try {
    return statSync(dir).isDirectory() ? undefined : 'not a directory';
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    return code === 'ENOENT' || code === 'ENOTDIR' ? 'no such directory' : `cannot be used (${code ?? 'unknown error'})`;
  }
};

/**
 * `--cwd`: an existing directory, stored as an absolute path. A missing one was accepted and only failed at spawn, as
 * `spawn node ENOENT` (naming the command, which exists); a relative one would be resolved against each serving
 * process's own working directory, not the one it was checked in.
 */
const existingDirectory = (dir: string): string => {
  const shown = dir.slice(0, 200);
  if (dir.length === 0) throw usage('upstream-cwd', '--cwd: empty');
  const abs = resolve(dir);
  const problem = directoryProblem(abs);
  if (problem !== undefined) throw usage('upstream-cwd', `--cwd '${shown}': ${problem}`);
  return abs;
};

export interface TargetFlags {
  command?: string;
  cwd?: string;
  env?: string[];
  url?: string;
  header?: string[];
  query?: string[];
}

export const targetFromFlags = (f: TargetFlags): UpstreamTarget => {
  if ((f.command === undefined) === (f.url === undefined)) throw usage('upstream-transport', 'upstream add: give exactly one of --command "<cmd> [args]" (stdio) or --url <url> (Streamable HTTP)');
  if (f.command !== undefined) {
    if ((f.header ?? []).length > 0 || (f.query ?? []).length > 0) throw usage('upstream-flag', 'upstream add: --header and --query are for --url upstreams; a stdio upstream takes --env');
    const words = splitCommand(f.command);
    if (words.length === 0) throw usage('upstream-command', '--command: empty');
    const env: Record<string, string> = {};
    for (const e of f.env ?? []) {
      const [name, variable] = parseNamed(e, '--env', ENV_NAME);
      env[name] = variable;
    }
    return { transport: 'stdio', command: words[0] as string, args: words.slice(1), ...(f.cwd !== undefined ? { cwd: existingDirectory(f.cwd) } : {}), env };
  }
  if ((f.env ?? []).length > 0 || f.cwd !== undefined) throw usage('upstream-flag', 'upstream add: --env and --cwd are for --command upstreams; an HTTP upstream takes --header and --query');
  let url: URL;
  try {
    url = new URL(f.url as string);
  } catch {
    // Not echoed past its query: that may be where a secret is.
    throw usage('upstream-url', `--url '${String(f.url).replace(/[?#][\s\S]*$/, '?...').slice(0, 80)}': not a URL`);
  }
  if (url.username || url.password) throw usage('upstream-url', '--url: credentials in the URL would be stored; use --header \'Authorization=env:VARIABLE\'');
  for (const name of new Set(url.searchParams.keys())) {
    if (!looksLikeCredential(name)) continue;
    // The name only, never the value.
    throw usage(
      'upstream-url',
      `--url: query parameter '${name.slice(0, 60)}' looks like a credential, and the URL would be stored; leave it out of --url and name the environment variable that holds it: --query '${name.slice(0, 60)}=env:VARIABLE' (or send it as a header: --header '<Name>=env:VARIABLE'; a secret is never stored)`,
    );
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && LOOPBACK.has(url.hostname))) {
    throw usage('upstream-url', `--url ${url.protocol}//${url.host}: must be https, or http on a loopback host (127.0.0.1, localhost, [::1])`);
  }
  const headers: Record<string, string> = {};
  for (const h of f.header ?? []) {
    const [name, variable] = parseNamed(h, '--header', HEADER_NAME);
    if (FORBIDDEN_HEADERS.has(name.toLowerCase())) throw usage('upstream-flag', `--header ${name}: set by the MCP transport, not configurable`);
    headers[name] = variable;
  }
  const query: Record<string, string> = {};
  for (const q of f.query ?? []) {
    const [name, variable] = parseNamed(q, '--query', QUERY_NAME);
    // One value per name: the URL's own and the environment's would both be sent, and which one a server reads is its choice.
    if (url.searchParams.has(name) || name in query) throw usage('upstream-flag', `--query ${name}: given twice (in --url or another --query)`);
    query[name] = variable;
  }
  return { transport: 'http', url: url.toString(), headers, ...(Object.keys(query).length > 0 ? { query } : {}) };
};

export interface AccessFlags {
  tenants?: string;
  scopes?: string;
  clearance?: string;
}

const listOf = (s: string | undefined): string[] => (s ?? '').split(',').map((x) => x.trim()).filter((x) => x.length > 0);

/** Default access for an upstream's tools: `--clearance` and `--scopes` are required (fail closed). */
export const defaultAccessFromFlags = (f: AccessFlags): ToolAccess => {
  if (f.clearance === undefined || f.scopes === undefined) {
    throw usage('upstream-access', 'upstream add: default access is required (fail closed): --scopes <a,b> and --clearance <public|internal|confidential|restricted> [--tenants <t,u>]');
  }
  if (!(CLASSIFICATIONS as readonly string[]).includes(f.clearance)) throw usage('upstream-access', `--clearance '${f.clearance.slice(0, 40)}' is not one of ${CLASSIFICATIONS.join(' < ')}`);
  const scopes = listOf(f.scopes);
  if (scopes.length === 0) throw usage('upstream-access', '--scopes: at least one scope (an upstream\'s tools are never visible to every principal by default)');
  return { requiredScopes: [...new Set(scopes)].sort(), tenants: [...new Set(listOf(f.tenants))].sort(), classification: f.clearance as Classification };
};

/** Access overrides at approval: only the flags given. */
export const accessOverrides = (f: AccessFlags): Partial<ToolAccess> => {
  const out: Partial<ToolAccess> = {};
  if (f.scopes !== undefined) out.requiredScopes = listOf(f.scopes);
  if (f.tenants !== undefined) out.tenants = listOf(f.tenants);
  if (f.clearance !== undefined) {
    if (!(CLASSIFICATIONS as readonly string[]).includes(f.clearance)) throw usage('upstream-access', `--clearance '${f.clearance.slice(0, 40)}' is not one of ${CLASSIFICATIONS.join(' < ')}`);
    out.classification = f.clearance as Classification;
  }
  return out;
};
