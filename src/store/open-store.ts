/**
 * Turns a `--store` URL into an EventStore. The network adapters are imported only when asked for, so the embedded
 * default never loads `pg` or the KurrentDB client.
 */
import { existsSync, statSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import type { EventStore } from '#app/ports';
import { DomainError } from '#domain/errors';
import { createMemoryEventStore } from './memory-event-store.ts';
import { createSqliteEventStore } from './sqlite-event-store.ts';
import { redactStoreUrl, STORE_URL_SOURCE } from './store-url.ts';

/** The shape open-store needs from the network adapters' modules, declared here so they can evolve on their own. */
interface NetworkStoreModules {
  postgres: { createPostgresEventStore(options: { connectionString: string; readOnly?: boolean; flag?: string }): EventStore | Promise<EventStore> };
  kurrentdb: { createKurrentDbEventStore(options: { connectionString: string }): EventStore | Promise<EventStore> };
}

// Specifiers held in variables: the modules are loaded lazily and type-checked through the interfaces above.
const POSTGRES_MODULE = './postgres-event-store.ts';
const KURRENTDB_MODULE = './kurrentdb-event-store.ts';

export interface OpenStoreOptions {
  /**
   * `read`: the verb only reads (list, show, history, calls, replay, diff, watch, copy's source), so a store that does
   * not exist is an error and nothing is created (on PostgreSQL: no schema, table or index). `write` (default): a missing SQLite file is created, but never a missing directory, except
   * the default `.estate/` (a typo in `--store` must not leave a directory tree behind).
   */
  access?: 'read' | 'write';
  /**
   * Where the user gave this URL, for the hints of an error that the store is not there (`check --from`): copy opens
   * two stores, from --from and --to. Default: `--store or ESTATE_STORE`, every other verb's.
   */
  flag?: string;
}

/** The default store's file, relative to the working directory: the one place whose directory Estate creates. */
export const DEFAULT_SQLITE_PATH = '.estate/estate.db';

export async function openEventStore(url: string, options: OpenStoreOptions = {}): Promise<EventStore> {
  if (url === 'memory:') return createMemoryEventStore();

  if (url.startsWith('sqlite:')) {
    const path = url.slice('sqlite:'.length);
    if (path === '') throw unknownStore(url, options.flag);
    const file = isAbsolute(path) ? path : resolve(process.cwd(), path);
    checkSqlitePath(url, file, options.access ?? 'write', options.flag);
    try {
      return createSqliteEventStore({ path: file });
    } catch (e) {
      // `--store sqlite:tool.yaml`: SQLite's own words ("file is not a database") named neither the store nor the flag.
      const code = (e as { code?: unknown }).code;
      if (code === 'SQLITE_NOTADB' || code === 'SQLITE_CORRUPT') {
        throw new DomainError('usage', 'not-a-store', `no store at ${url}: ${file} is not an Estate store (SQLite: ${(e as Error).message})`);
      }
      throw e;
    }
  }

  if (url.startsWith('postgres://') || url.startsWith('postgresql://')) {
    const module = (await import(POSTGRES_MODULE)) as NetworkStoreModules['postgres'];
    return module.createPostgresEventStore({ connectionString: url, readOnly: options.access === 'read', ...(options.flag !== undefined ? { flag: options.flag } : {}) });
  }

  if (url.startsWith('kurrentdb://') || url.startsWith('esdb://')) {
    const module = (await import(KURRENTDB_MODULE)) as NetworkStoreModules['kurrentdb'];
    return module.createKurrentDbEventStore({ connectionString: url });
  }

  throw unknownStore(url, options.flag);
}

const checkSqlitePath = (url: string, file: string, access: 'read' | 'write', flag = STORE_URL_SOURCE): void => {
  if (access === 'read') {
    if (!existsSync(file)) {
      throw new DomainError(
        'usage',
        'no-store',
        `no store at ${url}: ${file} does not exist (nothing was created; check ${flag}, or publish something first)`,
      );
    }
    if (statSync(file).isDirectory()) throw new DomainError('usage', 'not-a-store', `no store at ${url}: ${file} is a directory`);
    return;
  }
  const dir = dirname(file);
  if (existsSync(dir) || file === resolve(process.cwd(), DEFAULT_SQLITE_PATH)) return;
  throw new DomainError(
    'usage',
    'no-store-directory',
    `no directory for the store ${url}: ${dir} does not exist (Estate creates the store file, not its directories; create it first)`,
  );
};

/** A bare file path (`./e.db`, `/var/estate.db`) is the usual slip: the error then names the URL meant. */
const looksLikePath = (url: string): boolean => /^(\.{0,2}\/|~\/)/.test(url) || (!url.includes(':') && /\.(db|sqlite3?)$/i.test(url));

/** Said with any password hidden: `postgress://estate:secret@db/x` is a typo, not a reason to print the secret. */
const unknownStore = (url: string, flag = '--store'): DomainError =>
  new DomainError(
    'usage',
    'unknown-store',
    `unknown store URL '${redactStoreUrl(url)}': use sqlite:<path>, memory:, postgres://..., kurrentdb://...` +
      (looksLikePath(url) ? ` (a SQLite file: ${flag} sqlite:${url})` : ''),
  );
