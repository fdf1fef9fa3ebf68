/**
 * The PostgreSQL event store's wake-ups: one connection LISTENing on the schema's channel while anyone in this process
 * tails the store. A NOTIFY is a hint (delivered after its transaction commits, so a woken reader finds the rows); a
 * connection that dies loses the notifications sent meanwhile, which the readers' fallback poll covers, and a new one
 * is opened after a pause (the readers are woken once it listens, to cover the gap at once).
 */
import pg from 'pg';

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
  /** Wakes every local reader (after a local append, or on a NOTIFY). */
  wakeAll(): void;
  /** Registers a reader's wake-up; the returned function removes it (the last one out stops listening). */
  addListener(wake: () => void): () => void;
  stop(): Promise<void>;
}

export function createAppendListener(opts: AppendListenerOptions): AppendListener {
  const { listen, schemaName, channel, isClosed } = opts;
  const relistenBase = opts.relistenDelayMs;
  const listeners = new Set<() => void>();
  const wakeAll = (): void => {
    for (const wake of listeners) wake();
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
    client.on('notification', wakeAll);
    client
      .connect()
      .then(() => client.query(`LISTEN "${channel}"`))
      .then(() => {
        relistenDelay = relistenBase;
        wakeAll();
      }, lost);
  };
  const stopListening = (): Promise<void> => {
    clearTimeout(relistenTimer);
    relistenTimer = undefined;
    const client = listener;
    listener = null;
    return client ? client.end().catch(() => undefined) : Promise.resolve();
  };
  const addListener = (wake: () => void): (() => void) => {
    listeners.add(wake);
    startListening();
    return () => {
      listeners.delete(wake);
      if (listeners.size === 0) void stopListening();
    };
  };
  return { wakeAll, addListener, stop: stopListening };
}
