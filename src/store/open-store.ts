/**
 * Turns a `--store` URL into an EventStore. The network adapters are imported only when asked for, so the embedded
 * default never loads `pg` or the KurrentDB client.
 */
import { isAbsolute, resolve } from 'node:path';
import type { EventStore } from '../app/ports.ts';
import { DomainError } from '../domain/errors.ts';
import { createMemoryEventStore } from './memory-event-store.ts';
import { createSqliteEventStore } from './sqlite-event-store.ts';

/** The shape open-store needs from the network adapters' modules, declared here so they can evolve on their own. */
interface NetworkStoreModules {
  postgres: { createPostgresEventStore(options: { connectionString: string }): EventStore | Promise<EventStore> };
  kurrentdb: { createKurrentDbEventStore(options: { connectionString: string }): EventStore | Promise<EventStore> };
}

// Specifiers held in variables: the modules are loaded lazily and type-checked through the interfaces above.
const POSTGRES_MODULE = './postgres-event-store.ts';
const KURRENTDB_MODULE = './kurrentdb-event-store.ts';

export async function openEventStore(url: string): Promise<EventStore> {
  if (url === 'memory:') return createMemoryEventStore();

  if (url.startsWith('sqlite:')) {
    const path = url.slice('sqlite:'.length);
    if (path === '') throw unknownStore(url);
    return createSqliteEventStore({ path: isAbsolute(path) ? path : resolve(process.cwd(), path) });
  }

  if (url.startsWith('postgres://') || url.startsWith('postgresql://')) {
    const module = (await import(POSTGRES_MODULE)) as NetworkStoreModules['postgres'];
    return module.createPostgresEventStore({ connectionString: url });
  }

  if (url.startsWith('kurrentdb://') || url.startsWith('esdb://')) {
    const module = (await import(KURRENTDB_MODULE)) as NetworkStoreModules['kurrentdb'];
    return module.createKurrentDbEventStore({ connectionString: url });
  }

  throw unknownStore(url);
}

const unknownStore = (url: string): DomainError =>
  new DomainError(
    'usage',
    'unknown-store',
    `unknown store URL '${url}': use sqlite:<path>, memory:, postgres://..., kurrentdb://...`,
  );
