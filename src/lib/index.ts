/**
 * `estate`: what a handler module written in TypeScript imports (SPEC §6, §10). A handler module's default export, or
 * its named export `handlers`, maps handler names to `async (args, ctx) => CallToolResult`; `defineHandlers` checks that
 * shape at compile time and returns its argument unchanged. `defineTools` does the same for a module of tools defined
 * with zod, for `estate publish --module <file>`.
 */
import type { HandlerMap, ToolHandler } from '#handlers/types';

export type {
  AskOptions,
  CallToolResult,
  ContentBlock,
  ElicitParams,
  ElicitResult,
  HandlerContext,
  HandlerLog,
  HandlerMap,
  ListRootsResult,
  SampleParams,
  SampleResult,
  SamplingMessage,
} from '#handlers/types';
export type { Principal } from '#domain/types';
export type { ZodTool } from './zod-tools.ts';

/** One handler: `(args, ctx) => CallToolResult` (or a promise of one). */
export type Handler = ToolHandler;

/** Identity at run time; at compile time, every value must be a `Handler`. */
export const defineHandlers = <const H extends HandlerMap>(handlers: H): H => handlers;

/** Identity at run time; at compile time, each entry must be a zod-defined tool (`estate publish --module`). */
export const defineTools = <const T extends readonly import('./zod-tools.ts').ZodTool[]>(tools: T): T => tools;
