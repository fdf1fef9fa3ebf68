/**
 * Scopes of the publishing API. `estate:publish` covers every name; `estate:publish:<namespace>` covers the names
 * under that dotted prefix (the namespace itself included), so one team's pipeline cannot publish or bump another
 * team's tools. `estate:lifecycle[:<namespace>]` is the same for deprecate and retire. Tool scopes are a separate
 * vocabulary and grant nothing here.
 */
import { toolNamespace } from '#domain/tool-definition';

export const PUBLISH_SCOPE = 'estate:publish';
export const LIFECYCLE_SCOPE = 'estate:lifecycle';
/** Reading the web console (every tool, run and upstream, whatever the discovery rule would show the holder). */
export const READ_SCOPE = 'estate:read';
export type ApiScope = typeof PUBLISH_SCOPE | typeof LIFECYCLE_SCOPE;

/** `payments` covers `payments` and `payments.lookup`, never `paymentsx` or `cards.payments`. */
export const inNamespace = (name: string, namespace: string): boolean =>
  namespace.length > 0 && (name === namespace || name.startsWith(`${namespace}.`));

/** Whether any scope of the family is held (a caller without one learns nothing more than the scope it needs). */
export const holdsAny = (held: readonly string[], base: ApiScope): boolean => held.some((s) => s === base || s.startsWith(`${base}:`));

export const covers = (held: readonly string[], base: ApiScope, name: string): boolean =>
  held.some((s) => s === base || (s.startsWith(`${base}:`) && inNamespace(name, s.slice(base.length + 1))));

/** The scope to name in a 403 for `name`: its top-level namespace, what a team's pipeline would be given. */
export const scopeNeededFor = (base: ApiScope, name: string): string => `${base}:${toolNamespace(name)}`;

/**
 * Who may read the console: `estate:read`, or any publishing or lifecycle scope (whoever may change the catalogue may
 * see it). A token carrying only tool scopes reads nothing there: it would otherwise see tools its discovery view hides.
 */
export const mayReadConsole = (held: readonly string[]): boolean => held.includes(READ_SCOPE) || holdsAny(held, PUBLISH_SCOPE) || holdsAny(held, LIFECYCLE_SCOPE);
