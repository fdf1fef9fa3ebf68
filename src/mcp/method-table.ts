/**
 * The one MCP method table. Both paths dispatch through it: a stateful session (stateful-session.ts: 2025-11-25,
 * 2025-06-18, 2025-03-26, 2024-11-05) and a stateless request (stateless.ts: 2026-07-28). Each row says which revision
 * family has the method, what the family's gates need of it (answered before initialize; client capabilities a
 * stateless request must declare), and what it answers, with the per-family differences in the row itself. The paths
 * keep only their gates and the state they lend a method (the host). Adding a method is adding a row.
 */
import type { Principal } from '#domain/types';
import type { CallToolResult } from '#handlers/types';
import { isMcpLogLevel } from './client-channel.ts';
import { invalidParams } from './error-map.ts';
import type { InputRequiredResult } from './input-required.ts';
import { isPlainObject } from './jsonrpc.ts';
import { STATELESS_REVISION } from './revisions.ts';
import type { ServerCore } from './server-core.ts';
import { SERVER_INFO } from './server-info.ts';
import type { ListPage } from './tools-list.ts';

export type Family = 'stateful' | 'stateless';

/** What a stateful session lends the methods that read or change its state. */
export interface SessionHost {
  family: 'stateful';
  initialize(params: Record<string, unknown>): Record<string, unknown>;
  setLogLevel(level: string): void;
  /** A tools/list page was answered: unpinned calls run the versions the session's listing showed. */
  listed(page: ListPage & { includeDeprecated: boolean }, params: Record<string, unknown>): void;
  callTool(params: Record<string, unknown>): Promise<CallToolResult | InputRequiredResult>;
}

/** What a stateless request lends: only its tools/call context (channel, cancellation, declared capabilities). */
export interface RequestHost {
  family: 'stateless';
  callTool(params: Record<string, unknown>): Promise<CallToolResult | InputRequiredResult>;
}

export interface MethodContext {
  core: ServerCore;
  /** The session's negotiated revision, or STATELESS_REVISION. */
  revision: string;
  principal: Principal;
  params: Record<string, unknown>;
  host: SessionHost | RequestHost;
}

/** A result, or (stateless `subscriptions/listen`) a stream the transport opens. */
export type MethodAnswer = { result: Record<string, unknown> } | { listen: { toolsListChanged: boolean } };

export interface MethodRow {
  families: readonly Family[];
  /** Stateful gate 4: answered before initialize. */
  beforeInitialize?: boolean;
  /** Stateless: client capabilities the request must declare (-32021 otherwise). */
  requires?: readonly string[];
  run(ctx: MethodContext): MethodAnswer | Promise<MethodAnswer>;
}

const session = (ctx: MethodContext): SessionHost => {
  // Unreachable: a stateful-only row is never found for a stateless request (findMethod checks the family).
  if (ctx.host.family !== 'stateful') throw new Error('a session method was dispatched without a session');
  return ctx.host;
};

const METHODS: Readonly<Record<string, MethodRow>> = {
  initialize: { families: ['stateful'], beforeInitialize: true, run: (ctx) => ({ result: session(ctx).initialize(ctx.params) }) },
  // 2026-07-28 removed ping and logging/setLevel (the request's own `_meta` carries its log level).
  ping: { families: ['stateful'], beforeInitialize: true, run: () => ({ result: {} }) },
  'logging/setLevel': {
    families: ['stateful'],
    run: (ctx) => {
      if (!isMcpLogLevel(ctx.params.level)) throw invalidParams('Invalid params: unknown log level');
      session(ctx).setLogLevel(ctx.params.level);
      return { result: {} };
    },
  },
  'tools/list': {
    families: ['stateful', 'stateless'],
    run: async (ctx) => {
      // The page's bytes are made once per view revision (list-cache.ts) and carried to the wire with the result.
      const page = await ctx.core.listTools(ctx.principal, ctx.params, ctx.revision);
      if (ctx.host.family === 'stateful') {
        ctx.host.listed(page, ctx.params);
        return { result: page.session };
      }
      // 2026-07-28: the client caches the list for ttlMs; per-principal lists are private.
      return { result: page.stateless(ctx.core.listTtlMs) };
    },
  },
  'tools/call': { families: ['stateful', 'stateless'], run: async (ctx) => ({ result: (await ctx.host.callTool(ctx.params)) as Record<string, unknown> }) },
  // 2026-07-28 has no handshake: a client discovers what the server speaks and offers.
  'server/discover': {
    families: ['stateless'],
    run: (ctx) => ({
      result: { supportedVersions: [STATELESS_REVISION], capabilities: ctx.core.capabilities(), serverInfo: { ...SERVER_INFO }, ttlMs: ctx.core.listTtlMs, cacheScope: 'private' },
    }),
  },
  // 2026-07-28's change notifications: the transport opens the stream (stateful sessions get list_changed on theirs).
  'subscriptions/listen': {
    families: ['stateless'],
    run: (ctx) => {
      // A stream opened for something that is not a request for notifications would be held open for nothing.
      const asked = ctx.params.notifications;
      if (asked !== undefined && !isPlainObject(asked)) throw invalidParams('Invalid params: notifications must be an object, e.g. {"toolsListChanged": true}');
      return { listen: { toolsListChanged: isPlainObject(asked) && asked.toolsListChanged === true } };
    },
  },
};

/** The row for a method in a family; own keys only, so a client's `valueOf` never finds Object.prototype's. */
export const findMethod = (method: string, family: Family): MethodRow | undefined => {
  const row = Object.hasOwn(METHODS, method) ? METHODS[method] : undefined;
  return row && row.families.includes(family) ? row : undefined;
};

/** The metrics label: a method of the table under its own name; anything a client invents is `other`. */
export const countedMethod = (method: string): string => (Object.hasOwn(METHODS, method) ? method : 'other');
