/**
 * The vocabulary every layer shares. Pure types: no behaviour lives here.
 */

export type JsonPrimitive = string | number | boolean | null;
export type JsonValue = JsonPrimitive | JsonValue[] | { [key: string]: JsonValue };
export type JsonObject = { [key: string]: JsonValue };

/** Ordered from least to most sensitive; the order is the rank. */
export const CLASSIFICATIONS = ['public', 'internal', 'confidential', 'restricted'] as const;
export type Classification = (typeof CLASSIFICATIONS)[number];

export const SIDE_EFFECTS = ['none', 'idempotent', 'non_idempotent'] as const;
export type SideEffect = (typeof SIDE_EFFECTS)[number];

/** Whether a thrown/timed-out handler may be retried. Covers every SideEffect member (invariant 10). */
export const RETRYABLE: Readonly<Record<SideEffect, boolean>> = Object.freeze({
  none: true,
  idempotent: true,
  non_idempotent: false,
});

export interface ToolAccess {
  /** The principal must hold ALL of these (subset test). */
  requiredScopes: string[];
  /** Empty = every tenant. */
  tenants: string[];
  classification: Classification;
}

/** One tool version as published (SPEC §1), after parsing and normalisation. */
export interface ToolDefinition {
  name: string;
  version: string;
  title?: string;
  description: string;
  inputSchema: JsonObject;
  outputSchema?: JsonObject;
  annotations?: JsonObject;
  access: ToolAccess;
  sideEffect: SideEffect;
  handler: string;
  timeoutMs: number;
}

export type Level = 'major' | 'minor' | 'patch';
export const LEVEL_RANK: Readonly<Record<Level, number>> = { patch: 0, minor: 1, major: 2 };

/** One reason a change has the level it has. Sorted by (path, rule) wherever a list of them leaves the classifier. */
export interface Reason {
  level: Level;
  /** Where in the definition: `inputSchema.properties.reference`, `access.requiredScopes`, `description`, ... */
  path: string;
  /** A stable machine name, e.g. `property-removed`, `required-added`, `unmodelled-change`. */
  rule: string;
  /** A human sentence. */
  detail: string;
}

export interface Classified {
  level: Level;
  reasons: Reason[];
}

export interface Principal {
  tenant: string;
  scopes: string[];
  clearance: Classification;
  subject?: string;
}

export type VersionStatus = 'active' | 'deprecated' | 'retired';

export interface LifecycleMark {
  reason: string;
  at: string;
  by: string;
}
