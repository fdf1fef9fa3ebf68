/** `estate watch [--from <position> | --from-end | --from-beginning]` (SPEC §9): change messages as JSON lines. */
import type { Command } from 'commander';
import { jsonVisible } from '#domain/visible-text';
import type { CatalogueChange, EventStore } from '#app/ports';
import { encodeChange } from '#bus/change-message';
import { loadConfig } from '#config';
import { DomainError } from '#domain/errors';
import { isAfter, lastCataloguePosition, parseWatchPosition, watchStore, type WatchHandle, type WatchStart } from '#ops/change-watch';
import { heldBackLine, watchHeldBack, type HeldBackWatch } from '#ops/held-back-watch';
import { openEventStore } from '#store/open-store';
import { EXIT } from '../exit.ts';
import { runVerb, type GlobalOptions } from '../run.ts';

interface WatchFlags extends GlobalOptions {
  from?: string;
  fromEnd?: boolean;
  fromBeginning?: boolean;
  count?: string;
}

const startOf = (f: WatchFlags): WatchStart => {
  const chosen = [f.from !== undefined, f.fromEnd === true, f.fromBeginning === true].filter(Boolean).length;
  if (chosen > 1) throw new DomainError('usage', 'watch-start', 'watch: give at most one of --from <position>, --from-end, --from-beginning');
  if (f.from !== undefined) return { after: parseWatchPosition(f.from) };
  return f.fromBeginning ? 'beginning' : 'end';
};

const countOf = (raw: string | undefined): number | undefined => {
  if (raw === undefined) return undefined;
  if (!/^\d{1,9}$/.test(raw) || Number(raw) < 1) throw new DomainError('usage', 'bad-count', `--count ${JSON.stringify(raw.slice(0, 40))} is not a whole number from 1 to 999999999`);
  return Number(raw);
};

/**
 * `--from` a position past the newest change in the store (one from another store, a typo, a store restored from an
 * older backup): the watch follows, but nothing prints until a change is made after it. Said once on stderr, so a
 * silent watch is not taken for an empty one. Read beside the tail, which has already started.
 */
const saySilence = async (store: EventStore, after: string): Promise<void> => {
  try {
    const newest = await lastCataloguePosition(store);
    if (newest !== null && !isAfter(after, newest)) return;
    process.stderr.write(
      `estate watch: position ${after} is past the newest change in this store (${newest === null ? 'it has none yet' : `position ${newest}`}): nothing prints until a change is made after it. A position from another store?\n`,
    );
  } catch {
    // Only a note: the tail reports its own read failures.
  }
};

const runWatch = async (flags: WatchFlags): Promise<number> => {
  const start = startOf(flags);
  const count = countOf(flags.count);
  const config = loadConfig({ ...(flags.store ? { store: flags.store } : {}), ...(flags.bus ? { bus: flags.bus } : {}) });
  let store: EventStore | undefined;
  let handle: WatchHandle | undefined;
  let held: HeldBackWatch | undefined;
  let printed = 0;
  let failure: unknown;
  let stop!: () => void;
  const stopped = new Promise<void>((resolve) => (stop = resolve));
  const print = (c: CatalogueChange): void => {
    if (count !== undefined && printed >= count) return;
    // The topic's bytes, but for hidden characters (a topic's messages are anyone's who can write to it).
    process.stdout.write(`${jsonVisible(encodeChange(c))}\n`);
    printed++;
    if (count !== undefined && printed >= count) stop();
  };
  const onSignal = (): void => stop();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  // The store tail's timers and file watch do not hold the process open (a server's listener does that): this does.
  const keepAlive = setInterval(() => undefined, 1 << 30);
  try {
    let source: string;
    if (config.bus === 'local') {
      store = await openEventStore(config.store, { access: 'read' });
      source = `the store ${store.kind}`;
      // A read that keeps failing is reported once per failure; the tail retries by itself (SPEC: survives them).
      handle = watchStore(store, start, print, (e) => process.stderr.write(`estate watch: store read failed, retrying: ${e instanceof Error ? e.message : String(e)}\n`));
      // PostgreSQL: changes committed behind another client's open transaction wait for it; say so, and who it is.
      if (store.heldBack) {
        held = watchHeldBack({
          read: store.heldBack.bind(store),
          held: (h) => process.stderr.write(`estate watch: ${heldBackLine(h)}\n`),
          released: () => process.stderr.write('estate watch: no committed event waits behind an open transaction any more\n'),
        });
      }
    } else {
      source = `Kafka topic ${config.topic}`;
      // Loaded only for a kafka:// bus, so the default never loads kafkajs.
      const { watchKafka } = await import('#ops/change-watch-kafka');
      handle = watchKafka({ url: config.bus, topic: config.topic }, start, print);
    }
    const after = await handle.started;
    process.stderr.write(`estate watch: following ${source} ${start === 'end' ? 'from the end' : after === null ? 'from the beginning' : `after position ${after}`}\n`);
    if (store && typeof start === 'object') void saySilence(store, start.after);
    await Promise.race([stopped, handle.done]);
  } catch (e) {
    failure = e;
  } finally {
    clearInterval(keepAlive);
    held?.stop();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await handle?.close().catch(() => undefined);
    await store?.close().catch(() => undefined);
  }
  if (failure !== undefined) throw failure;
  return EXIT.ok;
};

export const register = (program: Command): void => {
  program
    .command('watch')
    .description('print catalogue change messages as JSON lines as they happen (from Kafka with --bus kafka://..., else by tailing the store)')
    .option('--from <position>', 'start strictly after this store position (as publish --json prints it)')
    .option('--from-end', 'only changes from now on (the default)')
    .option('--from-beginning', 'every change since the catalogue began, then follow')
    .option('--count <n>', 'exit after printing this many changes')
    .addHelpText(
      'after',
      `
Each line is one change message, the same shape the relay publishes on the Kafka topic:
  {"type":"catalogue.changed","position":"42","tool":"payments.lookup","version":"2.0.0","event":"ToolVersionPublished","at":"..."}
Delivery is at least once: deduplicate by position. Ctrl-C ends it (exit 0).
On the store, a --from position past the newest change there is is said once on stderr (nothing prints until a
change is made after it).
On PostgreSQL, changes committed behind another client's open transaction wait until it ends; once they have waited
5 s, stderr names that transaction's session (pid, user, database, application), and says when it has ended.

Examples:
  estate watch                                        (tail the default store from now on)
  estate watch --from 42 --store postgres://estate@db:5432/estate
  estate watch --bus kafka://127.0.0.1:9092 --from-beginning --count 10`,
    )
    .action(runVerb<WatchFlags>(runWatch));
};
