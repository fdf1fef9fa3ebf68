/**
 * The few human lines `estate serve` prints on stderr at start-up, before and beside its JSON logs: where it serves,
 * from which store, and how much of the catalogue the served principal sees — so "1 tool?" is answered at once.
 */
import type { Principal } from '#domain/types';
import { redactStoreUrl } from '#store/store-url';

export interface BannerFacts {
  transport: 'http' | 'stdio';
  /** The bound URL (HTTP). */
  url?: string;
  /** The `--store` URL as configured. */
  store: string;
  /** Tools the served principal discovers (its view), and tools in the catalogue. */
  visible: number;
  total: number;
  /** The principal every request is served as; undefined when each request brings its own (authorization on). */
  principal?: Principal;
  demo: boolean;
  /** Handler names bound in this process (0: nothing can be offered). */
  handlers: number;
}

const principalText = (p: Principal): string =>
  `tenant=${p.tenant}, scopes=${p.scopes.length ? p.scopes.join(',') : '(none)'}, clearance=${p.clearance}`;

export const startupBanner = (f: BannerFacts): string => {
  const lines: string[] = [];
  lines.push(
    f.transport === 'http'
      ? `Estate: MCP server at ${f.url ?? '?'} (store ${redactStoreUrl(f.store)})`
      : `Estate: MCP server on stdio (store ${redactStoreUrl(f.store)})`,
  );
  if (f.principal) {
    lines.push(`  serving ${f.visible} of ${f.total} tools to ${principalText(f.principal)}`);
    if (f.visible < f.total) {
      const start = f.demo ? 'npm start --' : 'estate serve';
      lines.push(`  to see more, serve a richer principal, e.g.: ${start} --tenant acme --scopes payments.read,accounts.read --clearance confidential`);
    }
  } else {
    lines.push(`  ${f.total} tools in the catalogue; each request is served as the principal of its access token`);
  }
  if (f.handlers === 0) lines.push('  no handlers bound (--handlers <module> or --demo): no tool is offered');
  lines.push(`  every tool and version: estate list --store ${redactStoreUrl(f.store)}; estate serve --help for the options`);
  if (f.transport === 'http') lines.push('  open the URL in a browser for how to connect a client; Ctrl-C stops; the other stderr lines are JSON logs (ESTATE_LOG_LEVEL)');
  return `${lines.join('\n')}\n`;
};
