/**
 * Can the store take writes? (SPEC §9 `/readyz`; issue 14: a server on a read-only SQLite file used to log "ready",
 * list tools, then fail every call after running its handler.) Probed at start-up and then periodically on its own
 * connection, without writing anything: SQLite takes the write lock and starts a schema change that is rolled back;
 * PostgreSQL reports `transaction_read_only`. While the last probe failed, tools/call is refused before any handler
 * runs (-32050, `ran: false`) and `/readyz` answers 503 with the reason.
 *
 * The SQLite probe runs on the serving thread (better-sqlite3 is synchronous), so it never waits for a lock held by
 * another connection: it used to, for up to a second every two, and every session's requests waited with it. A held
 * lock is a busy store, not a broken one, so the probe reports it able to write.
 */
import { isAbsolute, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { BUSY_SPIN_MS, isBusy } from '#store/sqlite-busy';

export interface StoreHealth {
  /** Probe now; null when the store can write, else why not. */
  check(): Promise<string | null>;
  /** The last probe's answer (null before the first one or when it could write). */
  refusal(): string | null;
  /** Re-probe every `intervalMs` (the timer does not keep the process alive). */
  start(intervalMs?: number): void;
  close(): Promise<void>;
}

type Probe = { run(): Promise<string | null>; close(): Promise<void> };

/**
 * A reason is `<fixed text>` or `<fixed text>: <the driver's first line>`. The driver's text can name a database, a
 * user, a host and port or a file path: `/readyz`, answered to anyone, and tools/call's refusal (-32050) say only the
 * fixed part; the whole reason is logged (once per change: `onChange`).
 */
export const publicReason = (reason: string): string => {
  const colon = reason.indexOf(': ');
  return colon < 0 ? reason : reason.slice(0, colon);
};

const firstLine = (e: unknown): string => {
  const m = e instanceof Error ? e.message : String(e);
  const line = (m.split('\n')[0] ?? '').trim() || 'error';
  return line.length > 200 ? `${line.slice(0, 200)}...` : line;
};

const sqliteProbe = (file: string): Probe => {
  let db: Database.Database | null = null;
  return {
    run() {
      try {
        db ??= new Database(file, { fileMustExist: true, timeout: BUSY_SPIN_MS });
        try {
          db.exec('BEGIN IMMEDIATE');
          db.exec('CREATE TABLE estate_write_probe (x INTEGER)');
        } finally {
          if (db.inTransaction) db.exec('ROLLBACK');
        }
        return Promise.resolve(null);
      } catch (e) {
        // Another writer holding the lock is busy, not broken.
        if (isBusy(e)) return Promise.resolve(null);
        return Promise.resolve(`the SQLite store cannot write: ${firstLine(e)}`);
      }
    },
    close() {
      db?.close();
      db = null;
      return Promise.resolve();
    },
  };
};

const postgresProbe = (url: string): Probe => ({
  async run() {
    const pg = (await import('pg')).default;
    const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
    client.on('error', () => undefined);
    try {
      await client.connect();
      const r = await client.query<{ ro: string }>(`SELECT current_setting('transaction_read_only') AS ro`);
      return r.rows[0]?.ro === 'on' ? 'the PostgreSQL store is read-only (transaction_read_only = on)' : null;
    } catch (e) {
      return `the PostgreSQL store is unreachable: ${firstLine(e)}`;
    } finally {
      await client.end().catch(() => undefined);
    }
  },
  close: () => Promise.resolve(),
});

const noProbe: Probe = { run: () => Promise.resolve(null), close: () => Promise.resolve() };

/**
 * The probe for a store URL (SPEC §5 forms); memory: and kurrentdb:// are not probed (always "can write").
 * `onChange` is told the whole reason when the probe's answer changes its fixed part (from able to write, to another
 * reason, or back to null): once per change of state, not per probe.
 */
export const createStoreHealth = (storeUrl: string, onChange?: (reason: string | null) => void): StoreHealth => {
  let probe = noProbe;
  if (storeUrl.startsWith('sqlite:')) {
    const path = storeUrl.slice('sqlite:'.length);
    probe = sqliteProbe(isAbsolute(path) ? path : resolve(process.cwd(), path));
  } else if (storeUrl.startsWith('postgres://') || storeUrl.startsWith('postgresql://')) probe = postgresProbe(storeUrl);
  let last: string | null = null;
  let timer: NodeJS.Timeout | null = null;
  let inFlight: Promise<string | null> | null = null;
  const check = (): Promise<string | null> =>
    (inFlight ??= probe.run().then((r) => {
      const changed = (r === null ? null : publicReason(r)) !== (last === null ? null : publicReason(last));
      last = r;
      if (changed) onChange?.(r);
      inFlight = null;
      return r;
    }));
  return {
    check,
    refusal: () => last,
    start(intervalMs = 2000) {
      if (timer) return;
      timer = setInterval(() => void check(), intervalMs);
      timer.unref();
    },
    async close() {
      if (timer) clearInterval(timer);
      timer = null;
      await inFlight;
      await probe.close();
    },
  };
};
