/**
 * The PostgreSQL event store's wake-ups: one connection LISTENing on the schema's channel while anyone in this process
 * tails the store. A NOTIFY is a hint (delivered after its transaction commits, so a woken reader finds the rows); a
 * connection that dies loses the notifications sent meanwhile, which the readers' fallback poll covers, and a new one
 * is opened after a pause (the readers are woken once it listens, to cover the gap at once).
 *
 * The payload names the streams the commit appended to (`notifyPayload`), so a reader tailing a prefix is woken only
 * by appends it can read: without it, every call record appended anywhere in the estate woke every process's
 * catalogue tail and relay to scan for nothing. An empty or unreadable payload (an older Estate, a batch too large to
 * name) wakes every reader, as every notification did before.
 */
import pg from 'pg';

/** Past this, a payload names no streams (PostgreSQL refuses payloads of 8,000 bytes or more). */
const PAYLOAD_LIMIT = 4000;

/** The NOTIFY payload of a commit that appended to these streams: their distinct ids as a JSON array, or '' (any). */
export const notifyPayload = (streamIds: readonly string[]): string => {
  const payload = JSON.stringify([...new Set(streamIds)]);
  return Buffer.byteLength(payload) < PAYLOAD_LIMIT ? payload : '';
};

/** The streams a payload names; null when it names none (empty, too large when sent, or not ours): wake everyone. */
export const streamsOfPayload = (payload: string | undefined): string[] | null => {
  if (!payload) return null;
  try {
    const ids: unknown = JSON.parse(payload);
    return Array.isArray(ids) && ids.every((id) => typeof id === 'string') ? (ids as string[]) : null;
  } catch {
    return null;
  }
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
      if (streamIds === null || prefix === '' || streamIds.some((id) => id.startsWith(prefix))) wakeReader();
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
