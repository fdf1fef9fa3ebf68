/**
 * `estate serve --stdio | --http`: the flags become a checked configuration (src/config.ts) and a principal, and the
 * serving composition root (src/compose/serve.ts) runs with them until stopped.
 */
import { loadServeConfig, type ServeFlags as ServeConfigFlags } from '#config';
import { runServe } from '#compose/serve';
import type { Estate } from '#compose/estate';
import { principalFromFlags, type PrincipalFlags } from './principal-flags.ts';
import type { GlobalOptions } from './run.ts';

export type ServeFlags = ServeConfigFlags & PrincipalFlags;

export const serve = async (estate: Estate, _opts: GlobalOptions, flags: ServeFlags): Promise<void> => {
  const config = loadServeConfig(flags);
  await runServe(estate, config, principalFromFlags(flags));
};
