/**
 * The PostgreSQL event store's wake-ups: one connection LISTENing on the schema's channel while anyone in this process
 * tails the store. A NOTIFY is a hint (delivered after its transaction commits, so a woken reader finds the rows); a
 * connection that dies loses the notifications sent meanwhile, which the readers' fallback poll covers, and a new one
 * is opened after a pause (the readers are woken once it listens, to cover the gap at once).
 *
 * The payload names the streams the commit appended to, or their categories when there are too many to name
 * (`notifyPayload`), so a reader tailing a prefix is woken only by appends it can read: without it, every call record appended anywhere in the estate woke every process's
 * catalogue tail and relay to scan for nothing. An empty or unreadable payload (an older Estate, a batch too large to
 * name) wakes every reader, as every notification did before.
 */
import pg from 'pg';

/** Past this, a payload names categories instead of streams (PostgreSQL refuses payloads of 8,000 bytes or more). */
const PAYLOAD_LIMIT = 4000;

/** A stream's category, as a payload entry: its id up to its first '-', marked with a '*' (`run-*`). */
const categoryOf = (streamId: string): string => {
  const dash = streamId.indexOf('-');
  return `${dash < 0 ? streamId : streamId.slice(0, dash + 1)}*`;
};

/**
 * The NOTIFY payload of a commit that appended to these streams, as a JSON array: their distinct ids; when those do not
 * fit (a group commit of many runs' call records), their distinct categories (`run-*`); when even those do not, ''
 * (any stream).
 */
export const notifyPayload = (streamIds: readonly string[]): string => {
  const ids = JSON.stringify([...new Set(streamIds)]);
  if (Buffer.byteLength(ids) < PAYLOAD_LIMIT) return ids;
  const categories = JSON.stringify([...new Set(streamIds.map(categoryOf))]);
  return Buffer.byteLength(categories) < PAYLOAD_LIMIT ? categories : '';
};

/** The entries a payload names; null when it names none (empty, too large when sent, or not ours): wake everyone. */
export const streamsOfPayload = (payload: string | undefined): string[] | null => {
  if (!payload) return null;
  try {
    const ids: unknown = JSON.parse(payload);
    return Array.isArray(ids) && ids.every((id) => typeof id === 'string') ? (ids as string[]) : null;
  } catch {
    return null;
  }
};

/**
 * Whether an appended stream named in a payload may be one a reader of `prefix` reads: a stream id that starts with
 * it, or a category (`run-*`) that overlaps it. Read as a category, an id that happens to end in '*' wakes more
 * readers than it would as an id, never fewer.
 */
export const mayConcern = (entry: string, prefix: string): boolean => {
  if (entry.startsWith(prefix)) return true;
  if (!entry.endsWith('*')) return false;
  const category = entry.slice(0, -1);
  return category.startsWith(prefix) || prefix.startsWith(category);
};

export interface AppendListenerOptions {
  connectionString: string;
  schemaName: string;
  channel: string;
  /** false: never LISTEN; local appends still wake local readers. */
  listen: boolean;
  /** First pause before LISTENing again after the connection died; doubles up to 5 s. */
  relistenDelayMs: number;
  isClosed: () => boolean;
}

export interface AppendListener {
  /**
   * Wakes the local readers of these streams (after a local append, or on a NOTIFY naming them); every reader when
   * no streams are named.
   */
  wake(streamIds: readonly string[] | null): void;
  /**
   * Registers a reader's wake-up, for appends to streams under `streamPrefix` (every append without one); the
   * returned function removes it (the last one out stops listening).
   */
  addListener(wake: () => void, streamPrefix?: string): () => void;
  stop(): Promise<void>;
}

export function createAppendListener(opts: AppendListenerOptions): AppendListener {
  const { listen, schemaName, channel, isClosed } = opts;
  const relistenBase = opts.relistenDelayMs;
  /** Each reader's wake-up and the prefix of the streams it reads ('' for all). */
  const listeners = new Map<() => void, string>();
  const wake = (streamIds: readonly string[] | null): void => {
    for (const [wakeReader, prefix] of listeners) {
      if (streamIds === null || prefix === '' || streamIds.some((entry) => mayConcern(entry, prefix))) wakeReader();
    }
  };

  let listener: pg.Client | null = null;
  let relistenTimer: NodeJS.Timeout | undefined;
  let relistenDelay = relistenBase;
  const startListening = (): void => {
    if (!listen || isClosed() || listener || relistenTimer || listeners.size === 0) return;
    const client = new pg.Client({ connectionString: opts.connectionString, application_name: `estate-listen:${schemaName}` });
    listener = client;
    const lost = (): void => {
      if (listener !== client) return;
      listener = null;
      client.end().catch(() => undefined);
      if (isClosed() || listeners.size === 0) return;
      relistenTimer = setTimeout(() => {
        relistenTimer = undefined;
        startListening();
      }, relistenDelay);
      relistenTimer.unref();
      relistenDelay = Math.min(relistenDelay * 2, 5000);
    };
    client.on('error', lost);
    client.on('end', lost);
    client.on('notification', (n) => wake(streamsOfPayload(n.payload)));
    client
      .connect()
      .then(() => client.query(`LISTEN "${channel}"`))
      .then(() => {
        relistenDelay = relistenBase;
        wake(null);
      }, lost);
  };
  const stopListening = (): Promise<void> => {
    clearTimeout(relistenTimer);
    relistenTimer = undefined;
    const client = listener;
    listener = null;
    return client ? client.end().catch(() => undefined) : Promise.resolve();
  };
  const addListener = (wakeReader: () => void, streamPrefix = ''): (() => void) => {
    listeners.set(wakeReader, streamPrefix);
    startListening();
    return () => {
      listeners.delete(wakeReader);
      if (listeners.size === 0) void stopListening();
    };
  };
  return { wake, addListener, stop: stopListening };
}
