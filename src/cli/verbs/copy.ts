/** `estate copy --from <store-url> --to <store-url> [--resume]` (SPEC §9): move an estate to another store. */
import { realpathSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import type { Command } from 'commander';
import { ConcurrencyError, type EventStore } from '#app/ports';
import { DomainError } from '#domain/errors';
import { copyStore, type CopyProgress } from '#ops/store-copy';
import { compareSummaries, summarizeStore, type StoreSummary } from '#ops/store-summary';
import { openEventStore } from '#store/open-store';
import { samePostgresDatabase } from '#store/postgres-same-database';
import { redactStoreUrl } from '#store/store-url';
import { EXIT } from '../exit.ts';
import { printJson } from '../output.ts';
import { runVerb, type GlobalOptions } from '../run.ts';

interface CopyFlags extends GlobalOptions {
  from: string;
  to: string;
  resume?: boolean;
  batchSize?: string;
}

/** A memory store lives and dies with one process: there is nothing to copy from it, and a copy into it is lost. */
const checkUrl = (flag: string, url: string): void => {
  if (url.startsWith('memory:')) {
    throw new DomainError('usage', 'memory-store', `${flag} ${url}: a memory store lives only inside one process; copy between sqlite:, postgres:// and kurrentdb:// stores`);
  }
};

/**
 * The SQLite file a URL names, through symbolic links and `./`, `../` (the file itself may not exist yet: its directory
 * then); undefined for any other store. Two spellings of one file are one store.
 */
const sqliteFile = (url: string): string | undefined => {
  if (!url.startsWith('sqlite:')) return undefined;
  const file = resolve(url.slice('sqlite:'.length));
  try {
    return realpathSync(file);
  } catch {
    try {
      return join(realpathSync(dirname(file)), basename(file));
    } catch {
      return file;
    }
  }
};

type Flag = '--from' | '--to';

/**
 * A failure of one of the two stores, said with the flag that named it and its URL (any password hidden): "connect
 * ECONNREFUSED 127.0.0.1:1" or a path alone did not say which side failed. The URL is said once: a message that
 * already names it gets the flag alone. The error keeps its kind and code, so its exit code; a ConcurrencyError is the
 * target refusing a batch, which copyStore answers itself.
 */
const onSide = (flag: Flag, url: string, e: unknown): unknown => {
  if (e instanceof ConcurrencyError) return e;
  const shown = redactStoreUrl(url);
  const said = e instanceof Error ? e.message : String(e);
  const reason = url === shown ? said : said.replaceAll(url, shown);
  const message = `copy: ${flag}${reason.includes(shown) ? '' : ` ${shown}`}: ${reason}`;
  return e instanceof DomainError ? new DomainError(e.kind, e.code, message, e.reasons) : new Error(message, { cause: e });
};

/**
 * The store, every call of it failing with onSide's error (its snapshots' too): a store lost in the middle of the
 * copy or of the comparison is named as well as one that cannot be opened.
 */
const sayingSide = <T extends object>(target: T, flag: Flag, url: string): T =>
  new Proxy(target, {
    get(t, key) {
      const value: unknown = Reflect.get(t, key);
      if (key === 'snapshots' && typeof value === 'object' && value !== null) return sayingSide(value, flag, url);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]): unknown => {
        try {
          const result: unknown = Reflect.apply(value, t, args);
          return result instanceof Promise ? result.catch((e: unknown) => Promise.reject(onSide(flag, url, e))) : result;
        } catch (e) {
          throw onSide(flag, url, e);
        }
      };
    },
  });

/** One side's store, opened and asked for its first event: a store that cannot be reached fails here, by its flag. */
const reach = async (flag: Flag, url: string, access: 'read' | 'write'): Promise<EventStore> => {
  let store: EventStore;
  try {
    store = sayingSide(await openEventStore(url, { access, flag }), flag, url);
  } catch (e) {
    throw onSide(flag, url, e);
  }
  try {
    await store.readAll({ limit: 1 });
  } catch (e) {
    await store.close().catch(() => undefined);
    throw e;
  }
  return store;
};

/**
 * `--batch-size` as typed, checked before either store is opened: a usage error must not create the target first.
 * Only digits: `Number()` took '' for 0, `0x10` for 16 and `abc` for NaN (said as "got NaN").
 */
const parseBatchSize = (text: string): number => {
  const n = /^\d+$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isSafeInteger(n) || n < 1 || n > 10_000) {
    throw new DomainError('usage', 'bad-batch-size', `--batch-size must be a whole number from 1 to 10000, got '${text}'`);
  }
  return n;
};

/**
 * Both stores' summaries, read side by side; on a long log their progress goes to stderr at most once a second (each
 * store's whole log is read and folded again: 200,000 events took ~17 s here, which a silent wait made look stuck).
 */
const comparing = async (from: EventStore, to: EventStore, total: number): Promise<[StoreSummary, StoreSummary]> => {
  const read = { source: 0, target: 0 };
  let lastLine = Date.now();
  const heard = (side: 'source' | 'target') => (events: number): void => {
    read[side] = events;
    const now = Date.now();
    if (now - lastLine < 1000) return;
    lastLine = now;
    process.stderr.write(`estate copy: comparing: ${read.source} of the source's and ${read.target} of the target's events read (the target holds ${total})\n`);
  };
  return Promise.all([summarizeStore(from, undefined, heard('source')), summarizeStore(to, undefined, heard('target'))]);
};

/**
 * Progress on stderr, at most once a second (and the first batch at once, so a long copy shows it started). A resume
 * first checks the target's whole log against the source, which says so the same way; the rate counts from its end.
 */
const progressPrinter = (): { print(p: CopyProgress): void; checked(n: number): void; done(p: CopyProgress): void } => {
  let started = Date.now();
  let lastLine = 0;
  const due = (): boolean => {
    const now = Date.now();
    if (lastLine !== 0 && now - lastLine < 1000) return false;
    lastLine = now;
    return true;
  };
  const line = (p: CopyProgress): void => {
    const seconds = (Date.now() - started) / 1000;
    const rate = seconds > 0 ? Math.round(p.appended / seconds) : p.appended;
    process.stderr.write(`estate copy: ${p.copied} events copied (${rate}/s), source position ${p.position ?? '-'}\n`);
  };
  return {
    print(p) {
      if (due()) line(p);
    },
    checked(n) {
      if (due()) process.stderr.write(`estate copy: resuming: ${n} events of the target checked against the source so far\n`);
      started = Date.now();
    },
    done: line,
  };
};

const describeSummary = (label: string, s: StoreSummary): string =>
  `${label}: ${s.events} events in ${s.streams} streams (tool ${s.byFamily.tool}, run ${s.byFamily.run}, upstream ${s.byFamily.upstream}); ` +
  `${s.sizes.tools} tools, ${s.sizes.runs} runs, ${s.sizes.upstreams} upstreams; log digest ${s.logDigest.slice(0, 16)}…`;

const sameStore = (what: string | undefined): DomainError =>
  new DomainError('usage', 'same-store', `copy: --from and --to name the same store${what === undefined ? '' : ` (${what})`}`);

const isPostgres = (url: string): boolean => url.startsWith('postgres://') || url.startsWith('postgresql://');

const runCopy = async (flags: CopyFlags): Promise<number> => {
  // --store is every other verb's store; here it would be silently ignored, and a user meaning --from or --to copies
  // something else than they think.
  if (flags.store !== undefined) throw new DomainError('usage', 'store-not-for-copy', 'copy: name the stores with --from <store-url> and --to <store-url>, not --store');
  checkUrl('--from', flags.from);
  checkUrl('--to', flags.to);
  const file = sqliteFile(flags.from);
  if (flags.from === flags.to || (file !== undefined && file === sqliteFile(flags.to))) throw sameStore(flags.from === flags.to ? undefined : file);
  const batchSize = flags.batchSize === undefined ? undefined : parseBatchSize(flags.batchSize);
  let from: EventStore | undefined;
  let to: EventStore | undefined;
  try {
    // The source first: one that cannot be reached must not leave a new target file behind.
    from = await reach('--from', flags.from, 'read');
    to = await reach('--to', flags.to, 'write');
    // One database by two spellings (localhost or 127.0.0.1, the default port or not) is known only by asking: both
    // are reached by now, and the target made nothing there (the source, read-only, had to hold a store already).
    if (isPostgres(flags.from) && isPostgres(flags.to)) {
      const database = await samePostgresDatabase(flags.from, flags.to);
      if (database !== undefined) throw sameStore(`PostgreSQL database ${JSON.stringify(database)} on one server`);
    }
    const progress = progressPrinter();
    const result = await copyStore(from, to, { resume: flags.resume === true, ...(batchSize !== undefined ? { batchSize } : {}), onProgress: progress.print, onChecked: progress.checked });
    progress.done(result);
    process.stderr.write('estate copy: comparing the projections of both stores…\n');
    const [source, target] = await comparing(from, to, result.copied);
    const differences = compareSummaries(source, target);
    const equal = differences.length === 0;
    if (flags.json) {
      printJson({ result: equal ? 'copied' : 'different', copied: result.copied, appended: result.appended, resumedAfter: result.resumedAfter, source, target, differences });
    } else {
      console.log(describeSummary('source', source));
      console.log(describeSummary('target', target));
      console.log(equal ? 'projections equal: catalogue, runs, upstreams and the log digest match' : `DIFFERENT:\n  ${differences.join('\n  ')}`);
    }
    if (!equal) console.error(`estate: error: copy: the stores differ after the copy: ${differences.join('; ')}`);
    return equal ? EXIT.ok : EXIT.other;
  } finally {
    await from?.close().catch(() => undefined);
    await to?.close().catch(() => undefined);
  }
};

export const register = (program: Command): void => {
  program
    .command('copy')
    .description('copy every event of one store into another (catalogue, call records, upstreams), then compare their projections')
    .requiredOption('--from <store-url>', 'the store to read: sqlite:<path> | postgres://... | kurrentdb://...')
    .requiredOption('--to <store-url>', 'the store to write: must be empty, unless --resume')
    .option('--resume', 'continue an interrupted copy into a non-empty target (after the last event it holds)')
    .option('--batch-size <n>', 'events per commit (1-10000)', '500')
    .addHelpText(
      'after',
      `
Events keep their order, streams, revisions and recorded times. Progress goes to stderr; at the end both stores'
projections are rebuilt and compared (exit 1 when they differ). Stop writers to the source first: events appended
during the copy are copied only if they land before the copy reaches the end.

Examples:
  estate copy --from sqlite:.estate/estate.db --to postgres://estate@db.internal:5432/estate
  estate copy --from sqlite:.estate/estate.db --to postgres://estate@db.internal:5432/estate --resume   (after an interruption)
  estate copy --from postgres://estate@db.internal:5432/estate --to sqlite:backup/estate.db --json`,
    )
    .action(runVerb<CopyFlags>(runCopy));
};
