/**
 * What every CLI verb shares: opening what it works on (an estate, or a catalogue through ./commands/open.ts), and
 * mapping every error to one stderr line and an exit code. Kept apart from main.ts (the entry point) so verbs can
 * import it without an import cycle.
 */
import type { Command } from 'commander';
import { loadCliSettings, loadConfig } from '#config';
import { openEstate, type Estate } from '#compose/estate';
import { errorJson } from '#app/results-json';
import { DomainError } from '#domain/errors';
import { RemoteRefusal } from './commands/port.ts';
import { EXIT, exitCodeOf } from './exit.ts';
import { errorLine, printJson } from './output.ts';

export interface GlobalOptions {
  json?: boolean;
  store?: string;
  bus?: string;
  by?: string;
}

export interface VerbOptions<A extends unknown[]> {
  /** The verb only reads: a store that does not exist is a usage error, and nothing is created. */
  readOnly?: boolean;
  /**
   * With `readOnly`: a store that does not exist reads as an empty one instead of an error (`check`: what the guard
   * would say of a first publish), and still nothing is created.
   */
  absentIsEmpty?: boolean;
  /**
   * The verb writes, but only into a catalogue that has something to change (deprecate, retire): a store that does not
   * exist reads as an empty one, so the verb answers "unknown tool" and creates nothing.
   */
  neverCreates?: boolean;
  /** The verb needs no store for these arguments (e.g. `diff` of two files): it runs on an empty in-memory one. */
  storeless?: (...args: A) => boolean | Promise<boolean>;
}

/** Open the estate the global flags name (flag, else environment, else default: config.ts). */
export const openEstateFor = async <A extends unknown[]>(opts: GlobalOptions, verb: VerbOptions<A>, args: A): Promise<Estate> => {
  const configFor = (store: string | undefined) =>
    loadConfig({ ...(store ? { store } : {}), ...(opts.bus ? { bus: opts.bus } : {}), ...(opts.by ? { by: opts.by } : {}) });
  const store = (await verb.storeless?.(...args)) ? 'memory:' : opts.store;
  try {
    return await openEstate(configFor(store), { access: verb.readOnly || verb.neverCreates ? 'read' : 'write' });
  } catch (e) {
    const emptyWhenAbsent = (verb.readOnly && verb.absentIsEmpty) || verb.neverCreates;
    if (!(emptyWhenAbsent && e instanceof DomainError && e.code === 'no-store')) throw e;
    return openEstate(configFor('memory:'));
  }
};

/**
 * A commander action that opens a resource, runs the verb on it and closes it whatever happens. The verb returns its
 * exit code (nothing: 0); whatever it throws becomes one stderr line and the matching exit code.
 */
export const runWith =
  <R extends { close(): Promise<void> }, O extends GlobalOptions, A extends unknown[]>(
    open: (opts: O, args: A) => Promise<R>,
    action: (resource: R, opts: O, ...args: A) => Promise<number | void>,
  ) =>
  async (...args: A): Promise<void> => {
    const cmd = args[args.length - 1] as Command;
    const opts = cmd.optsWithGlobals<O>();
    let resource: R | undefined;
    try {
      resource = await open(opts, args);
      const code = await action(resource, opts, ...args);
      process.exitCode = code ?? EXIT.ok;
    } catch (e) {
      fail(e, opts);
    } finally {
      await resource?.close().catch(() => undefined);
    }
  };

/**
 * A commander action for a verb that opens what it needs itself (copy: two stores; watch: a store or a bus): its exit
 * code, or one stderr line and the matching code for whatever it throws.
 */
export const runVerb =
  <O extends GlobalOptions>(verb: (opts: O) => Promise<number>) =>
  async (_opts: unknown, cmd: Command): Promise<void> => {
    const opts = cmd.optsWithGlobals<O>();
    try {
      process.exitCode = await verb(opts);
    } catch (e) {
      fail(e, opts);
    }
  };

/** Run an action with an opened estate (the verbs that need more than the catalogue port: serve, upstream). */
export const withEstate = <A extends unknown[]>(action: (estate: Estate, opts: GlobalOptions, ...args: A) => Promise<number | void>, verb: VerbOptions<A> = {}) =>
  runWith<Estate, GlobalOptions, A>((opts, args) => openEstateFor(opts, verb, args), action);

export const fail = (e: unknown, opts: GlobalOptions): void => {
  const code = exitCodeOf(e);
  console.error(errorLine(e));
  // A refusal by a server's edge is the server speaking, not a bug here: no stack, and its own code in the JSON.
  const remote = e instanceof RemoteRefusal;
  if (code === EXIT.other && !remote && e instanceof Error && loadCliSettings().debug) console.error(e.stack);
  if (opts.json) printJson(remote ? { error: { code: e.code, message: e.message } } : errorJson(e));
  process.exitCode = code;
};
