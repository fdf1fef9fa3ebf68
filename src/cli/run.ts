/**
 * What every CLI verb shares: opening the estate, printing JSON, and mapping errors to one stderr line and an exit code.
 * Kept apart from main.ts (the entry point) so verbs can import it without an import cycle; the estate itself is
 * composed in src/compose/estate.ts.
 */
import type { Command } from 'commander';
import { loadConfig } from '../config.ts';
import { DomainError } from '../domain/errors.ts';
import { openEstate, type Estate } from '../compose/estate.ts';
import { errorJson } from '../app/results-json.ts';
import { EXIT, exitCodeOf } from './exit.ts';

export interface GlobalOptions {
  json?: boolean;
  store?: string;
  bus?: string;
  by?: string;
}

export interface VerbOptions<A extends unknown[]> {
  /** The verb only reads: a store that does not exist is a usage error, and nothing is created. */
  readOnly?: boolean;
  /** The verb needs no store for these arguments (e.g. `diff` of two files): it runs on an empty in-memory one. */
  storeless?: (...args: A) => boolean;
}

/** Run an action with an opened estate; map every error to its exit code and one stderr line. */
export const withEstate =
  <A extends unknown[]>(action: (estate: Estate, opts: GlobalOptions, ...args: A) => Promise<number | void>, verb: VerbOptions<A> = {}) =>
  async (...args: A): Promise<void> => {
    const cmd = args[args.length - 1] as Command;
    const opts = cmd.optsWithGlobals<GlobalOptions>();
    let estate: Estate | undefined;
    try {
      const store = verb.storeless?.(...args) ? 'memory:' : opts.store;
      estate = await openEstate(
        loadConfig({ ...(store ? { store } : {}), ...(opts.bus ? { bus: opts.bus } : {}), ...(opts.by ? { by: opts.by } : {}) }),
        { access: verb.readOnly ? 'read' : 'write' },
      );
      const code = await action(estate, opts, ...args);
      process.exitCode = code ?? EXIT.ok;
    } catch (e) {
      fail(e, opts);
    } finally {
      await estate?.close().catch(() => undefined);
    }
  };

export const fail = (e: unknown, opts: GlobalOptions): void => {
  const code = exitCodeOf(e);
  const message = e instanceof Error ? e.message : String(e);
  const prefix = e instanceof DomainError ? `estate: ${e.kind === 'not-found' ? 'not found' : e.kind === 'usage' ? 'error' : 'refused'}` : 'estate: error';
  console.error(`${prefix}: ${message}`);
  if (code === EXIT.other && e instanceof Error && process.env.ESTATE_DEBUG) console.error(e.stack);
  if (opts.json) printJson(errorJson(e));
  process.exitCode = code;
};

export const printJson = (value: unknown): void => {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
};
