/**
 * The composition root: the ONLY place that picks adapters. Everything else receives ports.
 */
import { CatalogueReader, type CatalogueReaderOptions } from './app/catalogue-reader.ts';
import { CommandHandler } from './app/command-handler.ts';
import type { EventStore } from './app/ports.ts';
import type { EstateConfig } from './config.ts';
import { createSchemaCompiler, type SchemaCompiler } from './domain/schema-compiler.ts';
import { openEventStore } from './store/open-store.ts';

export interface Estate {
  config: EstateConfig;
  store: EventStore;
  commands: CommandHandler;
  compiler: SchemaCompiler;
  /** A read side; call `catchUp()` before reading, `follow()` to keep it current. */
  reader(options?: CatalogueReaderOptions): CatalogueReader;
  close(): Promise<void>;
}

export const openEstate = async (config: EstateConfig): Promise<Estate> => {
  const store = await openEventStore(config.store);
  const compiler = createSchemaCompiler();
  return {
    config,
    store,
    compiler,
    commands: new CommandHandler({ store }),
    reader: (options) => new CatalogueReader(store, options),
    close: () => store.close(),
  };
};
