/**
 * The local adapter of `CatalogueCommands`: the catalogue of a store opened in this process (src/main.ts), through the
 * command handler for writes and the projections for reads.
 */
import type { CatalogueReader } from '#app/catalogue-reader';
import { readRun } from '#app/runs';
import { verdictJson } from '#app/results-json';
import { parseAsOf, replayAsOf } from '#app/replay';
import { createDetailsSource } from '#app/version-details';
import { DomainError } from '#domain/errors';
import { handlerOutsideNamespace } from '#domain/tool-definition';
import type { ToolDefinition } from '#domain/types';
import { loadZodToolModule } from '#lib/zod-tools';
import type { Estate } from '#compose/estate';
import type { CatalogueProjection, CatalogueVersion, VersionDetails } from '#projections/catalogue';
import { discoverNaive } from '#projections/discovery';
import { looksLikeFile, readDefinitionSource, validateSource } from '../definition-file.ts';
import { parseRef } from '../ref.ts';
import { definitionRefusal, type CatalogueCommands, type DefinitionSource, type ToolStatus, type VerdictOutcome } from './port.ts';

/** `title`: the version's (default: from the details its record holds; every verb's reader keeps them). */
const statusOf = (v: CatalogueVersion, title = v.details?.definition.title): ToolStatus => ({
  name: v.name,
  version: v.version,
  title: title ?? null,
  status: v.status,
  ...(v.deprecated ? { deprecated: { reason: v.deprecated.reason, at: v.deprecated.at } } : {}),
});

/** Each tool's newest active version (or deprecated one, when asked). */
const listLatest = (catalogue: CatalogueProjection, includeDeprecated: boolean): CatalogueVersion[] => {
  const out: CatalogueVersion[] = [];
  for (const name of catalogue.names()) {
    const vs = catalogue.versions(name);
    for (let i = vs.length - 1; i >= 0; i--) {
      const v = vs[i] as CatalogueVersion;
      if (v.status === 'active' || (includeDeprecated && v.status === 'deprecated')) {
        out.push(v);
        break;
      }
    }
  }
  return out;
};

const notServed = (v: CatalogueVersion): { notServed?: string } => {
  const why = handlerOutsideNamespace(v.name, v.handler);
  return why ? { notServed: `never served: ${why}` } : {};
};

export const localCatalogueCommands = (estate: Estate): CatalogueCommands => {
  const actor = estate.config.actor;
  // Checked and classified in the estate's definition worker, under the schema budget: the same verdict a definition
  // gets from the publishing API (and a hostile file a clear refusal, not minutes of compiling).
  const check = (raw: unknown): Promise<ToolDefinition> => estate.definitions.check(raw);
  const inWorker = { classify: (before: ToolDefinition, after: ToolDefinition) => estate.definitions.classify(before, after) };
  const caughtUpReader = async () => {
    const reader = estate.reader();
    await reader.catchUp();
    return reader;
  };
  const caughtUp = async () => (await caughtUpReader()).catalogue;
  /** Validate, or answer the refusal as a verdict (the definition never reaches the guard). */
  const judge = async (source: DefinitionSource, decide: (def: ToolDefinition) => Promise<VerdictOutcome>): Promise<VerdictOutcome> => {
    let def: ToolDefinition;
    try {
      def = await validateSource(source, check);
    } catch (e) {
      if (e instanceof DomainError) return definitionRefusal(e, source.raw);
      throw e;
    }
    return decide(def);
  };

  return {
    publish: (source) =>
      judge(source, async (def) => {
        const v = await estate.commands.publish(def, actor, inWorker);
        return { json: verdictJson(v, v.result, v.position), ...(v.result === 'refused' ? { refusal: 'refused' as const } : {}) };
      }),

    check: (source) =>
      judge(source, async (def) => {
        const v = await estate.commands.check(def, actor, inWorker);
        return { json: verdictJson(v, v.result === 'published' ? 'would-publish' : v.result), ...(v.result === 'refused' ? { refusal: 'refused' as const } : {}) };
      }),

    deprecate: ({ name, version }, reason) => estate.commands.deprecate(name, version, reason, actor),
    retire: ({ name, version }, reason) => estate.commands.retire(name, version, reason, actor),

    async *publishModule(module) {
      const raws = await loadZodToolModule(module);
      // Every definition is validated before the first is published: a broken module publishes nothing.
      const defs: ToolDefinition[] = [];
      for (const raw of raws) {
        try {
          defs.push(await check(raw));
        } catch (e) {
          if (e instanceof DomainError) throw new DomainError(e.kind, e.code, `${module}: ${String(raw.name)}: ${e.message}`, e.reasons);
          throw e;
        }
      }
      for (const def of defs) {
        const v = await estate.commands.publish(def, actor, inWorker);
        yield verdictJson(v, v.result, v.position);
      }
    },

    async list({ principal, includeDeprecated }) {
      const catalogue = await caughtUp();
      const versions = principal ? discoverNaive(catalogue, principal, includeDeprecated) : listLatest(catalogue, includeDeprecated);
      return versions.map((v) => statusOf(v));
    },

    async show({ name, version }) {
      const reader = await caughtUpReader();
      const c = reader.catalogue;
      if (!c.tool(name)) throw new DomainError('not-found', 'unknown-tool', `unknown tool '${name}'`);
      const v = version ? c.find(name, version) : c.latest(name);
      if (!v) throw new DomainError('not-found', version ? 'unknown-version' : 'no-active-version', version ? `unknown version ${name}@${version}` : `${name} has no active version`);
      const d = await reader.details.of(v);
      return {
        ...d.definition,
        status: v.status,
        schemaHash: d.schemaHash,
        definitionHash: d.definitionHash,
        publishedAt: d.publishedAt,
        publishedBy: d.publishedBy,
        ...(v.deprecated ? { deprecated: v.deprecated } : {}),
        ...(v.retired ? { retired: v.retired } : {}),
        // Published before the handler-namespace rule: in the store, never served (docs/security.md).
        ...notServed(v),
      };
    },

    async history(name) {
      const reader = await caughtUpReader();
      const vs = reader.catalogue.versions(name);
      if (vs.length === 0) throw new DomainError('not-found', 'unknown-tool', `unknown tool '${name}'`);
      const details = await reader.details.ofMany(vs);
      return vs.map((v, i) => {
        const d = details[i] as VersionDetails;
        return {
          version: v.version,
          status: v.status,
          level: d.level,
          reasons: d.reasons,
          publishedAt: d.publishedAt,
          publishedBy: d.publishedBy,
          ...(v.deprecated ? { deprecatedAt: v.deprecated.at, deprecatedReason: v.deprecated.reason } : {}),
          ...(v.retired ? { retiredAt: v.retired.at, retiredReason: v.retired.reason } : {}),
        };
      });
    },

    async diff(a, b) {
      let reader: CatalogueReader | undefined;
      // The store is read only if a side names a published version (diff of two files runs on no store at all).
      const load = async (arg: string): Promise<ToolDefinition> => {
        if (looksLikeFile(arg)) return validateSource(await readDefinitionSource(arg), check);
        const { name, version } = parseRef(arg, true);
        reader ??= await caughtUpReader();
        const v = reader.catalogue.find(name, version);
        if (!v) throw new DomainError('not-found', 'unknown-version', `'${arg}' is neither a readable file nor a published version`);
        return (await reader.details.of(v)).definition;
      };
      const left = await load(a);
      return estate.definitions.classify(left, await load(b));
    },

    async runs(filter) {
      // From the runs snapshot a serving process's console left, plus the log after it; a read-only verb, it writes none.
      // A long read (a log of millions of calls and no snapshot) says how far it has got, every 2 s, on stderr.
      const index = estate.runsIndex({ readOnly: true });
      for (;;) {
        const listed = await index.list(filter, { waitMs: 2000 });
        if (!listed.reading) return listed.runs;
        process.stderr.write(`estate calls: reading the call log, ${listed.reading.events} call records so far\n`);
      }
    },

    calls: (runId) => readRun(estate.store, runId),

    async replay(at, includeDeprecated) {
      // Records only: a replay of the whole log must not hold every definition. A listed version that is its tool's
      // newest shows the tool's title; an older one (its newer versions retired, say) reads its own.
      const catalogue = await replayAsOf(estate.store, parseAsOf(at), { keepDetails: false });
      const details = createDetailsSource(estate.store);
      const tools: ToolStatus[] = [];
      for (const v of listLatest(catalogue, includeDeprecated)) {
        const tool = catalogue.tool(v.name);
        const newest = tool !== undefined && tool.versions[tool.versions.length - 1] === v;
        tools.push(statusOf(v, newest ? tool.title : (await details.of(v)).definition.title));
      }
      return { tools, position: catalogue.position, eventCount: catalogue.eventCount };
    },

    close: () => estate.close(),
  };
};
