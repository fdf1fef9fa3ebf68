/**
 * `--demo`: publish the demo estate through the normal command handler (guard and all), then deprecate what the demo
 * deprecates if it is still active. A second run answers `unchanged` everywhere and appends nothing.
 */
import type { CommandHandler } from '#app/command-handler';
import type { EventStore } from '#app/ports';
import { toolStream } from '#domain/events';
import type { SchemaCompiler } from '#domain/schema-compiler';
import { validateDefinition } from '#domain/tool-definition';
import { DEMO_DEFINITIONS, DEMO_DEPRECATIONS, DEMO_PUBLISHER } from './demo-estate.ts';
import { demoHandlers } from './demo-handlers.ts';

export { demoHandlers };

export interface DemoSeedResult {
  published: string[];
  unchanged: string[];
  deprecated: string[];
}

export const seedDemoEstate = async (deps: { commands: CommandHandler; compiler: SchemaCompiler; store: EventStore }): Promise<DemoSeedResult> => {
  const out: DemoSeedResult = { published: [], unchanged: [], deprecated: [] };
  for (const raw of DEMO_DEFINITIONS) {
    const def = validateDefinition(raw, deps.compiler);
    const r = await deps.commands.publish(def, DEMO_PUBLISHER);
    if (r.result === 'published') out.published.push(`${def.name}@${def.version}`);
    else if (r.result === 'unchanged') out.unchanged.push(`${def.name}@${def.version}`);
    else throw new Error(`demo estate: ${def.name}@${def.version} refused: ${r.error?.message ?? r.result}`);
  }
  for (const d of DEMO_DEPRECATIONS) {
    const events = await deps.store.readStream(toolStream(d.name));
    const touched = events.some((e) => e.type !== 'ToolVersionPublished' && (e.data as { version?: string }).version === d.version);
    if (touched) continue;
    await deps.commands.deprecate(d.name, d.version, d.reason, DEMO_PUBLISHER);
    out.deprecated.push(`${d.name}@${d.version}`);
  }
  return out;
};
