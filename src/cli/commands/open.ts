/**
 * The one place a catalogue verb's adapter is chosen: `--server <url>` → the publishing API (./http.ts), the store is
 * never opened; otherwise the store the global flags name (./local.ts).
 */
import { loadCliSettings } from '#config';
import { Option } from 'commander';
import { BY_IGNORED_NOTE } from '../output.ts';
import { openEstateFor, runWith, type GlobalOptions, type VerbOptions } from '../run.ts';
import { apiBase, httpCatalogueCommands } from './http.ts';
import { localCatalogueCommands } from './local.ts';
import type { CatalogueCommands, CatalogueWrites } from './port.ts';

export interface ServerOptions extends GlobalOptions {
  server?: string;
}

/** `--server <url>`, on the verbs the publishing API serves. */
export const serverOption = (): Option =>
  new Option('--server <url>', 'use this estate server\'s publishing API instead of opening the store (token from ESTATE_TOKEN)');

const openWrites = async <A extends unknown[]>(opts: ServerOptions, verb: VerbOptions<A>, args: A): Promise<CatalogueWrites> => {
  if (opts.server === undefined) return localCatalogueCommands(await openEstateFor(opts, verb, args));
  const base = apiBase(opts.server);
  if (opts.by !== undefined) console.error(BY_IGNORED_NOTE);
  return httpCatalogueCommands(base, loadCliSettings().token);
};

/** A write verb (publish, check, deprecate, retire): local, or through a server with `--server`. */
export const withCatalogueWrites = <O extends ServerOptions, A extends unknown[]>(
  action: (catalogue: CatalogueWrites, opts: O, ...args: A) => Promise<number | void>,
  verb: VerbOptions<A> = {},
) => runWith<CatalogueWrites, O, A>((opts, args) => openWrites(opts, verb, args), action);

/** A verb that reads the store (list, show, history, diff, calls, replay; publish --module): always local. */
export const withCatalogue = <O extends GlobalOptions, A extends unknown[]>(
  action: (catalogue: CatalogueCommands, opts: O, ...args: A) => Promise<number | void>,
  verb: VerbOptions<A> = {},
) => runWith<CatalogueCommands, O, A>(async (opts, args) => localCatalogueCommands(await openEstateFor(opts, verb, args)), action);
