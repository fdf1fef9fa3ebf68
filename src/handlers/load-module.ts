/** `--handlers <module>`: an ES module (resolved from the working directory) exporting the handler map. */
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { DomainError } from '../domain/errors.ts';
import type { HandlerMap, ToolHandler } from './types.ts';

const isHandlerMap = (v: unknown): v is Record<string, ToolHandler> =>
  typeof v === 'object' && v !== null && !Array.isArray(v) && Object.values(v).every((h) => typeof h === 'function');

export const loadHandlerModule = async (specifier: string, cwd: string = process.cwd()): Promise<HandlerMap> => {
  let mod: Record<string, unknown>;
  try {
    // A TypeScript handler module needs tsx's loader; a compiled estate does not register it otherwise.
    if (/\.[cm]?tsx?$/.test(specifier)) (await import('tsx/esm/api')).register();
    mod = (await import(pathToFileURL(resolve(cwd, specifier)).href)) as Record<string, unknown>;
  } catch (e) {
    throw new DomainError('usage', 'handlers-unreadable', `--handlers ${specifier}: ${e instanceof Error ? e.message : String(e)}`);
  }
  const map = mod.default ?? mod.handlers;
  if (!isHandlerMap(map)) {
    throw new DomainError('usage', 'handlers-invalid', `--handlers ${specifier}: expected a default export or a named export 'handlers' mapping handler names to functions`);
  }
  return map;
};

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
