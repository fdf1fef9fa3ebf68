/** `--handlers <module>`: an ES module (resolved from the working directory) exporting the handler map. */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { DomainError } from '#domain/errors';
import type { HandlerMap, ToolHandler } from './types.ts';

const isHandlerMap = (v: unknown): v is Record<string, ToolHandler> =>
  typeof v === 'object' && v !== null && !Array.isArray(v) && Object.values(v).every((h) => typeof h === 'function');

export const loadHandlerModule = async (specifier: string, cwd: string = process.cwd()): Promise<HandlerMap> => {
  const path = resolve(cwd, specifier);
  const where = path === specifier ? specifier : `${specifier} (${path})`;
  if (!existsSync(path)) throw new DomainError('usage', 'handlers-unreadable', `--handlers ${where}: no such file`);
  let mod: Record<string, unknown>;
  try {
    // A TypeScript handler module needs tsx's loader; a compiled estate does not register it otherwise.
    if (/\.[cm]?tsx?$/.test(specifier)) (await import('tsx/esm/api')).register();
    mod = (await import(pathToFileURL(path).href)) as Record<string, unknown>;
  } catch (e) {
    throw new DomainError('usage', 'handlers-unreadable', `--handlers ${where} failed to load: ${loadFailure(e, path)}`);
  }
  const map = mod.default ?? mod.handlers;
  if (!isHandlerMap(map)) {
    throw new DomainError('usage', 'handlers-invalid', `--handlers ${where}: expected a default export or a named export 'handlers' mapping handler names to functions`);
  }
  return map;
};

/**
 * Why the user's module did not load, in terms of the user's files: the error's own line, the place in the module
 * (line:column) when the stack or `node --check` names it, and never a path inside Estate.
 */
const loadFailure = (e: unknown, path: string): string => {
  const err = e instanceof Error ? e : new Error(String(e));
  const estateDir = dirname(dirname(fileURLToPath(import.meta.url)));
  const firstLine = (err.message.split('\n').find((l) => l.trim() !== '' && !/^Transform failed/.test(l)) ?? err.message).trim();
  const message = firstLine.replace(/ imported from \S+$/, (m) => (m.includes(estateDir) ? '' : m));
  const fileUrl = pathToFileURL(path).href;
  let at = '';
  for (const line of (err.stack ?? '').split('\n')) {
    const hit = line.includes(fileUrl) ? line.slice(line.indexOf(fileUrl) + fileUrl.length) : line.includes(path) ? line.slice(line.indexOf(path) + path.length) : null;
    const pos = hit === null ? null : /^:(\d+)(?::(\d+))?/.exec(hit);
    if (pos) {
      at = ` (at line ${pos[1]}${pos[2] ? `, column ${pos[2]}` : ''})`;
      break;
    }
  }
  if (!at && err.name === 'SyntaxError' && /\.(m?js)$/.test(path)) {
    // V8 gives an ES module's syntax error no location; `node --check` does.
    const check = spawnSync(process.execPath, ['--check', path], { encoding: 'utf8', timeout: 10_000 });
    const pos = new RegExp(`^${escapeRegExp(path)}:(\\d+)$`, 'm').exec(check.stderr ?? '');
    if (pos) at = ` (at line ${pos[1]})`;
  }
  const name = err.name && err.name !== 'Error' && !firstLine.startsWith(err.name) && err.name !== 'TransformError' ? `${err.name}: ` : '';
  return `${name}${message}${message.includes(path) ? '' : at}`;
};

const escapeRegExp = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Several maps into one; a name bound twice is a usage error, never a silent override. */
export const mergeHandlerMaps = (...maps: HandlerMap[]): HandlerMap => {
  const out: Record<string, ToolHandler> = {};
  for (const m of maps) {
    for (const [name, h] of Object.entries(m)) {
      if (name in out) throw new DomainError('usage', 'handler-bound-twice', `handler '${name}' is bound twice`);
      out[name] = h;
    }
  }
  return out;
};
