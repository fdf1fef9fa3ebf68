/**
 * The composition root of every verb: the store its configuration names, the schema compiler, the command handler and
 * read sides over them, and the change feed `--bus` picks. With ./serve.ts (what `estate serve` adds on top), the
 * ONLY place that picks adapters: everything else receives ports.
 */
import { CatalogueReader, type CatalogueReaderOptions } from '#app/catalogue-reader';
import { CommandHandler } from '#app/command-handler';
import { createDefinitionChecker, type DefinitionChecker } from '#app/definition-budget';
import type { Log } from '#app/log';
import type { EventStore, Subscription } from '#app/ports';
import { RunsIndex } from '#app/runs-index';
import { keepSnapshots, restoreCatalogue, type SnapshotKeeper } from '#app/snapshot-keeper';
import type { EstateConfig } from '#config';
import { createSchemaCompiler, type SchemaCompiler } from '#domain/schema-compiler';
import { openEventStore, type OpenStoreOptions } from '#store/open-store';

export interface Estate {
  config: EstateConfig;
  store: EventStore;
  commands: CommandHandler;
  compiler: SchemaCompiler;
  /**
   * Definitions checked and classified off this thread, each within the schema budget (src/app/definition-budget.ts):
   * what every path that takes a definition from outside uses (the publishing API, upstream syncs and approvals, the
   * CLI's publish). Its worker starts on first use.
   */
  definitions: DefinitionChecker;
  /** A read side; call `catchUp()` before reading, `follow()` to keep it current. */
  reader(options?: CatalogueReaderOptions): CatalogueReader;
  /**
   * Bring `reader` up to date and keep it so, the way `--bus` says: `local` tails the store; `kafka://...` makes this
   * process a relay candidate and a consumer of the change topic (src/bus/kafka-change-feed.ts).
   */
  followChanges(reader: CatalogueReader, log: Log): Promise<Subscription>;
  /**
   * Start `reader` from the store's catalogue snapshot, when the store keeps snapshots and ESTATE_SNAPSHOTS is on
   * (src/app/snapshot-keeper.ts); call it before `followChanges`, which then reads only the tail. The function it
   * returns, called once the reader is current, keeps the snapshot fresh (null: no snapshots here).
   */
  restoreReader(reader: CatalogueReader, log: Log): Promise<() => SnapshotKeeper | null>;
  /**
   * The recent runs (src/app/runs-index.ts), kept as a snapshot where the catalogue's is (ESTATE_SNAPSHOTS); `readOnly`:
   * the snapshot is read, never written (a read-only verb).
   */
  runsIndex(o?: { log?: Log; readOnly?: boolean }): RunsIndex;
  close(): Promise<void>;
}

const restoreReaderFor =
  (config: EstateConfig, store: EventStore) =>
  async (reader: CatalogueReader, log: Log): Promise<() => SnapshotKeeper | null> => {
    const snapshots = store.snapshots;
    if (!snapshots || !config.snapshots) return () => null;
    const restored = await restoreCatalogue(reader, snapshots, log);
    const policy = { everyEvents: config.snapshotEveryEvents, everyMs: config.snapshotEveryMs };
    return () => keepSnapshots({ reader, store: snapshots, log, restored, policy });
  };

const followChangesFor =
  (config: EstateConfig, store: EventStore) =>
  async (reader: CatalogueReader, log: Log): Promise<Subscription> => {
    if (config.bus === 'local') {
      await reader.catchUp();
      return reader.follow((e) => log.warn({ err: e }, 'catalogue tail: read failed, retrying'));
    }
    // Loaded only for a kafka:// bus, so the default never loads kafkajs.
    const feed = await import('#bus/kafka-change-feed');
    const relayTtlMs = config.relayTtlMs;
    return feed.startKafkaChangeFeed({ url: config.bus, topic: config.topic, store, reader, log, ...(relayTtlMs !== undefined ? { relayTtlMs } : {}) });
  };

export const openEstate = async (config: EstateConfig, options: OpenStoreOptions = {}): Promise<Estate> => {
  const store = await openEventStore(config.store, options);
  const compiler = createSchemaCompiler();
  const definitions = createDefinitionChecker({ budgetMs: config.schemaBudgetMs });
  return {
    config,
    store,
    compiler,
    definitions,
    commands: new CommandHandler({ store }),
    reader: (options) => new CatalogueReader(store, options),
    followChanges: followChangesFor(config, store),
    restoreReader: restoreReaderFor(config, store),
    runsIndex: (o = {}) =>
      new RunsIndex(store, { ...(config.snapshots && store.snapshots ? { snapshots: store.snapshots } : {}), ...(o.log ? { log: o.log } : {}), readSnapshotOnly: o.readOnly === true }),
    close: async () => {
      await definitions.close();
      await store.close();
    },
  };
};
